package walfmt

import "hash/crc32"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Chain returns the crc a record with this data carries when the previous
// record carried prev: CRC-32C of data, continued from prev. The chain starts at
// 0 when the WAL is created and never restarts: a crc record (no data) carries
// the running value unchanged into the next segment.
func Chain(prev uint32, data []byte) uint32 {
	return crc32.Update(prev, castagnoli, data)
}
