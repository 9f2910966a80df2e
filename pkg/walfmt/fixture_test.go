package walfmt

import (
	"bytes"
	"errors"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

const fixtureNodeID = 0x1f4d227d440d78c2

// TestFixtureDecode checks what is known about the WAL etcd 3.7.3 wrote.
func TestFixtureDecode(t *testing.T) {
	items, errs := decodeDir(t, copyFixture(t), DecoderOptions{VerifyTail: true})
	if len(errs) != 0 {
		t.Fatalf("errors decoding the fixture: %v", errs)
	}
	counts := map[RecordType]int{}
	var entries []*raftpb.Entry
	var states []*raftpb.HardState
	var snaps []*Snapshot
	for _, it := range items {
		counts[it.Type]++
		switch it.Type {
		case RecordEntry:
			entries = append(entries, it.Entry)
		case RecordState:
			states = append(states, it.HardState)
		case RecordSnapshot:
			snaps = append(snaps, it.Snapshot)
		}
	}
	want := map[RecordType]int{RecordCRC: 1, RecordMetadata: 1, RecordSnapshot: 2, RecordEntry: 81, RecordState: 82}
	for typ, n := range want {
		if counts[typ] != n {
			t.Errorf("%s records: got %d, want %d", typ, counts[typ], n)
		}
	}
	if len(items) != 167 {
		t.Errorf("records: got %d, want 167", len(items))
	}

	// The first segment opens with crc 0, metadata, empty snapshot.
	if it := items[0]; it.Type != RecordCRC || it.CRC != 0 || it.Data != nil || it.Offset != 0 || it.FrameSize != 16 {
		t.Errorf("first record: %+v", it.Record)
	}
	md := items[1].Metadata
	if items[1].Type != RecordMetadata || md.GetNodeID() != fixtureNodeID || md.GetClusterID() != 4213370958157134514 {
		t.Errorf("metadata record: %v", md)
	}
	if items[2].Type != RecordSnapshot || *items[2].Snapshot != (Snapshot{}) {
		t.Errorf("third record: %v %+v", items[2].Type, items[2].Snapshot)
	}

	// Entries 1..81: the first is the conf change adding the member at term 1,
	// the rest are normal entries of term 2 (2 is the new leader's empty entry).
	first, last := entries[0], entries[len(entries)-1]
	if first.GetIndex() != 1 || first.GetTerm() != 1 || first.GetType() != raftpb.EntryConfChange {
		t.Errorf("first entry: %v", first)
	}
	if e := entries[1]; e.GetIndex() != 2 || e.GetTerm() != 2 || len(e.GetData()) != 0 {
		t.Errorf("second entry: %v", e)
	}
	if last.GetIndex() != 81 || last.GetTerm() != 2 {
		t.Errorf("last entry: %v", last)
	}
	for i, e := range entries {
		if e.GetIndex() != uint64(i+1) {
			t.Fatalf("entry %d has index %d", i, e.GetIndex())
		}
	}

	// Hard states: the last one commits everything.
	if st := states[len(states)-1]; st.GetTerm() != 2 || st.GetVote() != fixtureNodeID || st.GetCommit() != 81 {
		t.Errorf("last hard state: %v", st)
	}
	// The snapshot taken at index 0x29 (--snapshot-count 40) is in the log.
	if s := snaps[1]; s.Index != 0x29 || s.Term != 2 || len(s.ConfState.GetVoters()) != 1 || s.ConfState.GetVoters()[0] != fixtureNodeID {
		t.Errorf("second snapshot record: %+v", s)
	}
	if items[len(items)-1].Offset+items[len(items)-1].FrameSize != 7960 {
		t.Errorf("frames do not end at the end of the 7960-byte file")
	}
}

// TestFixtureCRCChain checks the chaining rule on the fixture directly: each
// record's crc is CRC-32C of its data continued from the previous record's crc.
func TestFixtureCRCChain(t *testing.T) {
	items, errs := decodeDir(t, copyFixture(t), DecoderOptions{})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	prev := uint32(0)
	for _, it := range items {
		if got := Chain(prev, it.Data); got != it.CRC {
			t.Fatalf("record at %d: crc %#x, chain gives %#x", it.Offset, it.CRC, got)
		}
		prev = it.CRC
	}
	if prev != 0x8bfa9604 {
		t.Errorf("final crc %#x", prev)
	}
}

// TestFixtureReencodeIdentical re-encodes every record of the fixture with our
// encoder and gets the file back byte for byte: frames, padding, crc, field
// layout. Payloads re-marshalled by us match etcd's bytes too.
func TestFixtureReencodeIdentical(t *testing.T) {
	orig := mustRead(t, fixtureWAL)
	items, errs := decodeDir(t, copyFixture(t), DecoderOptions{})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	var out []byte
	for _, it := range items {
		out = AppendRecordFrame(out, it.Record)

		var data []byte
		var err error
		switch it.Type {
		case RecordSnapshot:
			data, err = MarshalSnapshot(*it.Snapshot)
		case RecordMetadata:
			data, err = proto.Marshal(it.Metadata)
		case RecordEntry:
			data, err = proto.Marshal(it.Entry)
		case RecordState:
			data, err = proto.Marshal(it.HardState)
		default:
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, it.Data) {
			t.Errorf("%s record at %d re-marshals to %x, etcd wrote %x", it.Type, it.Offset, data, it.Data)
		}
	}
	if !bytes.Equal(out, orig) {
		n := 0
		for n < len(out) && n < len(orig) && out[n] == orig[n] {
			n++
		}
		t.Fatalf("re-encoded WAL differs from the fixture at byte %d (lengths %d, %d)", n, len(out), len(orig))
	}
}

func TestFixtureReadAll(t *testing.T) {
	dir := copyFixture(t)
	res, err := ReadAll(dir, Snapshot{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Entries) != 81 || res.Entries[0].GetIndex() != 1 || res.HardState.GetCommit() != 81 || res.Metadata.GetNodeID() != fixtureNodeID {
		t.Errorf("from the start: %d entries, first %v, hard state %v", len(res.Entries), res.Entries[0], res.HardState)
	}

	res, err = ReadAll(dir, Snapshot{Index: 0x29, Term: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Entries) != 40 || res.Entries[0].GetIndex() != 42 || res.Entries[39].GetIndex() != 81 {
		t.Errorf("from snapshot 0x29: %d entries", len(res.Entries))
	}
	if res.tail.endOffset != 7960 || res.tail.crc != 0x8bfa9604 || res.tail.lastIndex != 81 {
		t.Errorf("tail: %+v", res.tail)
	}

	if _, err := ReadAll(dir, Snapshot{Index: 0x29, Term: 3}); !errors.Is(err, ErrSnapshotMismatch) {
		t.Errorf("wrong term: %v", err)
	}
	if _, err := ReadAll(dir, Snapshot{Index: 0x28, Term: 2}); !errors.Is(err, ErrSnapshotNotFound) {
		t.Errorf("no such snapshot: %v", err)
	}
}
