package snapfmt

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const (
	fieldCRC  = 1
	fieldData = 2
)

// Marshal returns the bytes of a .snap file holding snap.
func Marshal(snap *raftpb.Snapshot) ([]byte, error) {
	data, err := proto.Marshal(snap)
	if err != nil {
		return nil, fmt.Errorf("marshal snapshot: %w", err)
	}
	crc := crc32.Checksum(data, castagnoli)
	b := make([]byte, 0, len(data)+16)
	b = protowire.AppendTag(b, fieldCRC, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(crc))
	b = protowire.AppendTag(b, fieldData, protowire.BytesType)
	return protowire.AppendBytes(b, data), nil
}

// Unmarshal decodes the bytes of a .snap file, checking the crc. Errors wrap
// ErrEmpty, ErrTruncated, ErrBadFormat or ErrCRCMismatch.
func Unmarshal(b []byte) (*raftpb.Snapshot, error) {
	if len(b) == 0 {
		return nil, ErrEmpty
	}
	var crc uint32
	var data []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, parseError("tag", n)
		}
		b = b[n:]
		switch {
		case num == fieldCRC && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, parseError("crc", n)
			}
			if v > math.MaxUint32 {
				return nil, fmt.Errorf("%w: crc %#x exceeds 32 bits", ErrBadFormat, v)
			}
			crc = uint32(v)
			b = b[n:]
		case num == fieldData && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, parseError("data", n)
			}
			data = v
			b = b[n:]
		case num == fieldCRC || num == fieldData:
			return nil, fmt.Errorf("%w: field %d has wire type %d", ErrBadFormat, num, typ)
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil, parseError(fmt.Sprintf("field %d", num), n)
			}
			b = b[n:]
		}
	}
	if data == nil {
		return nil, fmt.Errorf("%w: no data field", ErrTruncated)
	}
	if got := crc32.Checksum(data, castagnoli); got != crc {
		return nil, fmt.Errorf("%w: stored %#08x, data gives %#08x", ErrCRCMismatch, crc, got)
	}
	snap := &raftpb.Snapshot{}
	if err := proto.Unmarshal(data, snap); err != nil {
		return nil, fmt.Errorf("%w: snapshot data: %v", ErrBadFormat, err)
	}
	return snap, nil
}

func parseError(what string, n int) error {
	err := protowire.ParseError(n)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: in %s", ErrTruncated, what)
	}
	return fmt.Errorf("%w: %s: %v", ErrBadFormat, what, err)
}
