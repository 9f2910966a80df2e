package walfmt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// RecordType says what a record's data holds.
type RecordType int64

// The record types of etcd's WAL.
const (
	// RecordMetadata holds an etcdserverpb.Metadata (node and cluster ID).
	RecordMetadata RecordType = 1
	// RecordEntry holds a raftpb.Entry.
	RecordEntry RecordType = 2
	// RecordState holds a raftpb.HardState.
	RecordState RecordType = 3
	// RecordCRC has no data; its crc is the running CRC carried into a new segment.
	RecordCRC RecordType = 4
	// RecordSnapshot holds a Snapshot (the walpb.Snapshot index, term and conf state).
	RecordSnapshot RecordType = 5
)

// String names the record type as dump tools print it.
func (t RecordType) String() string {
	switch t {
	case RecordMetadata:
		return "metadata"
	case RecordEntry:
		return "entry"
	case RecordState:
		return "hardstate"
	case RecordCRC:
		return "crc"
	case RecordSnapshot:
		return "snapshot"
	}
	return fmt.Sprintf("type(%d)", int64(t))
}

// Valid reports whether t is one of the five record types.
func (t RecordType) Valid() bool { return t >= RecordMetadata && t <= RecordSnapshot }

// Record is one WAL record: the protobuf message
// {int64 type = 1; uint32 crc = 2; bytes data = 3}.
type Record struct {
	Type RecordType
	// CRC is the running CRC-32C after this record's data (see Chain).
	CRC uint32
	// Data is the payload; nil means the field is absent (crc records).
	Data []byte
}

const (
	recordFieldType = 1
	recordFieldCRC  = 2
	recordFieldData = 3
)

// AppendRecord appends the protobuf encoding of r to dst the way etcd writes
// it: type and crc always present, data present unless nil.
func AppendRecord(dst []byte, r Record) []byte {
	dst = protowire.AppendTag(dst, recordFieldType, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(r.Type))
	dst = protowire.AppendTag(dst, recordFieldCRC, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(r.CRC))
	if r.Data != nil {
		dst = protowire.AppendTag(dst, recordFieldData, protowire.BytesType)
		dst = protowire.AppendBytes(dst, r.Data)
	}
	return dst
}

// RecordSize is the length of AppendRecord's encoding of r.
func RecordSize(r Record) int {
	n := 1 + protowire.SizeVarint(uint64(r.Type)) + 1 + protowire.SizeVarint(uint64(r.CRC))
	if r.Data != nil {
		n += 1 + protowire.SizeBytes(len(r.Data))
	}
	return n
}

var errUnknownType = errors.New("unknown record type")

// UnmarshalRecord decodes a record. Data aliases b. Unknown fields are skipped
// as protobuf requires; a wrong wire type, a truncated field, a crc wider than
// 32 bits or a type outside 1-5 is an error.
func UnmarshalRecord(b []byte) (Record, error) {
	var r Record
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return Record{}, fmt.Errorf("record tag: %w", protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == recordFieldType && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return Record{}, fmt.Errorf("record type: %w", protowire.ParseError(n))
			}
			r.Type = RecordType(int64(v))
			b = b[n:]
		case num == recordFieldCRC && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return Record{}, fmt.Errorf("record crc: %w", protowire.ParseError(n))
			}
			if v > math.MaxUint32 {
				return Record{}, fmt.Errorf("record crc %#x exceeds 32 bits", v)
			}
			r.CRC = uint32(v)
			b = b[n:]
		case num == recordFieldData && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return Record{}, fmt.Errorf("record data: %w", protowire.ParseError(n))
			}
			if v == nil {
				v = []byte{}
			}
			r.Data = v
			b = b[n:]
		case num == recordFieldType || num == recordFieldCRC || num == recordFieldData:
			return Record{}, fmt.Errorf("record field %d has wire type %d", num, typ)
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return Record{}, fmt.Errorf("record field %d: %w", num, protowire.ParseError(n))
			}
			b = b[n:]
		}
	}
	if !r.Type.Valid() {
		return Record{}, fmt.Errorf("%w %d", errUnknownType, int64(r.Type))
	}
	return r, nil
}

// AppendRecordFrame appends r framed (length word, record, padding) to dst,
// encoding the record in place.
func AppendRecordFrame(dst []byte, r Record) []byte {
	n := RecordSize(r)
	word, pad := EncodeFrameHeader(n)
	dst = binary.LittleEndian.AppendUint64(dst, word)
	dst = AppendRecord(dst, r)
	var zeros [8]byte
	return append(dst, zeros[:pad]...)
}
