package walfmt

import (
	"fmt"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Snapshot is the payload of a snapshot record (etcd's walpb.Snapshot): the
// index and term of a raft snapshot, and the membership at that point. The
// first segment of a WAL holds an empty one (index 0, term 0, no conf state).
type Snapshot struct {
	Index     uint64
	Term      uint64
	ConfState *raftpb.ConfState
}

const (
	snapshotFieldIndex     = 1
	snapshotFieldTerm      = 2
	snapshotFieldConfState = 3
)

// MarshalSnapshot encodes s as etcd does: index and term always present, the
// conf state when not nil.
func MarshalSnapshot(s Snapshot) ([]byte, error) {
	b := protowire.AppendTag(nil, snapshotFieldIndex, protowire.VarintType)
	b = protowire.AppendVarint(b, s.Index)
	b = protowire.AppendTag(b, snapshotFieldTerm, protowire.VarintType)
	b = protowire.AppendVarint(b, s.Term)
	if s.ConfState != nil {
		cs, err := proto.Marshal(s.ConfState)
		if err != nil {
			return nil, fmt.Errorf("marshal snapshot conf state: %w", err)
		}
		b = protowire.AppendTag(b, snapshotFieldConfState, protowire.BytesType)
		b = protowire.AppendBytes(b, cs)
	}
	return b, nil
}

// UnmarshalSnapshot decodes a snapshot record's data.
func UnmarshalSnapshot(b []byte) (Snapshot, error) {
	var s Snapshot
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return Snapshot{}, fmt.Errorf("snapshot tag: %w", protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case (num == snapshotFieldIndex || num == snapshotFieldTerm) && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return Snapshot{}, fmt.Errorf("snapshot field %d: %w", num, protowire.ParseError(n))
			}
			if num == snapshotFieldIndex {
				s.Index = v
			} else {
				s.Term = v
			}
			b = b[n:]
		case num == snapshotFieldConfState && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return Snapshot{}, fmt.Errorf("snapshot conf state: %w", protowire.ParseError(n))
			}
			cs := &raftpb.ConfState{}
			if err := proto.Unmarshal(v, cs); err != nil {
				return Snapshot{}, fmt.Errorf("snapshot conf state: %w", err)
			}
			s.ConfState = cs
			b = b[n:]
		case num >= snapshotFieldIndex && num <= snapshotFieldConfState:
			return Snapshot{}, fmt.Errorf("snapshot field %d has wire type %d", num, typ)
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return Snapshot{}, fmt.Errorf("snapshot field %d: %w", num, protowire.ParseError(n))
			}
			b = b[n:]
		}
	}
	return s, nil
}

// DecodeMetadata decodes a metadata record's data.
func DecodeMetadata(b []byte) (*etcdserverpb.Metadata, error) {
	m := &etcdserverpb.Metadata{}
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("decode metadata: %w", err)
	}
	return m, nil
}

// DecodeEntry decodes an entry record's data.
func DecodeEntry(b []byte) (*raftpb.Entry, error) {
	e := &raftpb.Entry{}
	if err := proto.Unmarshal(b, e); err != nil {
		return nil, fmt.Errorf("decode entry: %w", err)
	}
	return e, nil
}

// DecodeHardState decodes a hard state record's data.
func DecodeHardState(b []byte) (*raftpb.HardState, error) {
	st := &raftpb.HardState{}
	if err := proto.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("decode hard state: %w", err)
	}
	return st, nil
}

// Payload is the decoded data of one record; exactly the field that matches the
// record type is set (none for a crc record).
type Payload struct {
	Metadata  *etcdserverpb.Metadata
	Entry     *raftpb.Entry
	HardState *raftpb.HardState
	Snapshot  *Snapshot
}

// DecodePayload decodes data as the payload of a record of type t.
func DecodePayload(t RecordType, data []byte) (Payload, error) {
	var p Payload
	var err error
	switch t {
	case RecordMetadata:
		p.Metadata, err = DecodeMetadata(data)
	case RecordEntry:
		p.Entry, err = DecodeEntry(data)
	case RecordState:
		p.HardState, err = DecodeHardState(data)
	case RecordSnapshot:
		var s Snapshot
		if s, err = UnmarshalSnapshot(data); err == nil {
			p.Snapshot = &s
		}
	case RecordCRC:
		if len(data) != 0 {
			err = fmt.Errorf("crc record with %d bytes of data", len(data))
		}
	default:
		err = fmt.Errorf("%w %d", errUnknownType, int64(t))
	}
	if err != nil {
		return Payload{}, err
	}
	return p, nil
}
