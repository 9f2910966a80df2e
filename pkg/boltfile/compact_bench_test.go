package boltfile

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// BenchmarkCompactTo copies a file of 400,000 values of 256 bytes (some 120
// MB) keyed by revision, as a defragmentation copies the key bucket.
func BenchmarkCompactTo(b *testing.B) {
	dir := b.TempDir()
	src, err := bolt.Open(filepath.Join(dir, "src"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	value := make([]byte, 256)
	const keys, perTx = 400000, 50000
	for i := 0; i < keys; i += perTx {
		err := src.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("key"))
			if err != nil {
				return err
			}
			for j := i; j < i+perTx; j++ {
				k := binary.BigEndian.AppendUint64(nil, uint64(j))
				if err := bk.Put(k, value); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(keys * (8 + len(value))))
	b.ReportAllocs()
	for b.Loop() {
		dst := filepath.Join(dir, "dst")
		if err := CompactTo(src, dst, 0o600, false); err != nil {
			b.Fatal(err)
		}
		os.Remove(dst)
	}
}
