package robustness

import (
	"path/filepath"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/walfmt"
)

// walStep is one write to a crafted WAL: entries and a hard state, or a
// snapshot record.
type walStep struct {
	ents   []*raftpb.Entry
	commit uint64
	snap   *walfmt.Snapshot
}

func writeWAL(t *testing.T, dir string, steps ...walStep) {
	t.Helper()
	w, err := walfmt.Create(dir, &pb.Metadata{NodeID: proto.Uint64(1), ClusterID: proto.Uint64(2)}, walfmt.Options{SegmentSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, s := range steps {
		if s.snap != nil {
			if err := w.SaveSnapshot(*s.snap); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := w.Save(&raftpb.HardState{Term: proto.Uint64(2), Commit: proto.Uint64(s.commit)}, s.ents); err != nil {
			t.Fatal(err)
		}
	}
}

func put(index, term uint64, key string) *raftpb.Entry {
	data, err := proto.Marshal(&pb.InternalRaftRequest{Header: &pb.RequestHeader{ID: index},
		Put: &pb.PutRequest{Key: []byte(key), Value: []byte("v")}})
	if err != nil {
		panic(err)
	}
	return &raftpb.Entry{Index: proto.Uint64(index), Term: proto.Uint64(term), Type: raftpb.EntryType_EntryNormal.Enum(), Data: data}
}

func addMember(index, id uint64) *raftpb.Entry {
	data, err := proto.Marshal(&raftpb.ConfChange{Type: raftpb.ConfChangeType_ConfChangeAddNode.Enum(), NodeId: proto.Uint64(id)})
	if err != nil {
		panic(err)
	}
	return &raftpb.Entry{Index: proto.Uint64(index), Term: proto.Uint64(1), Type: raftpb.EntryType_EntryConfChange.Enum(), Data: data}
}

func readLogs(t *testing.T, dirs map[string]string) []*memberLog {
	t.Helper()
	var logs []*memberLog
	for _, name := range []string{"m1", "m2", "m3"} {
		if dirs[name] == "" {
			continue
		}
		l, err := readMemberLog(name, dirs[name])
		if err != nil {
			t.Fatal(err)
		}
		if len(l.damage) > 0 {
			t.Fatalf("%s: damage %v", name, l.damage)
		}
		logs = append(logs, l)
	}
	return logs
}

// TestCompareLogsMismatch: members that bootstrapped with their conf
// changes in different orders, and one whose committed put differs, are
// reported at those indexes, with both entries decoded.
func TestCompareLogsMismatch(t *testing.T) {
	dir := t.TempDir()
	dirs := map[string]string{"m1": filepath.Join(dir, "1"), "m2": filepath.Join(dir, "2"), "m3": filepath.Join(dir, "3")}
	writeWAL(t, dirs["m1"], walStep{ents: []*raftpb.Entry{addMember(1, 10), addMember(2, 20), put(3, 2, "a")}, commit: 3})
	writeWAL(t, dirs["m2"], walStep{ents: []*raftpb.Entry{addMember(1, 20), addMember(2, 10), put(3, 2, "a")}, commit: 3})
	writeWAL(t, dirs["m3"], walStep{ents: []*raftpb.Entry{addMember(1, 10), addMember(2, 20), put(3, 2, "b")}, commit: 3})
	bad := compareLogs(readLogs(t, dirs), 10)
	if len(bad) != 3 {
		t.Fatalf("got %d mismatches, want 3 (indexes 1, 2, 3):\n%s", len(bad), strings.Join(bad, "\n"))
	}
	for i, want := range []string{
		"mismatching entries on raft index 1: m1 has {term 1 EntryConfChange type:ConfChangeAddNode node_id:10}",
		"mismatching entries on raft index 2: m1 has {term 1 EntryConfChange type:ConfChangeAddNode node_id:20}",
		"mismatching entries on raft index 3: m1 has {term 2 EntryNormal ",
	} {
		if !strings.HasPrefix(bad[i], want) {
			t.Errorf("mismatch %d: %q, want it to start with %q", i, bad[i], want)
		}
	}
	if !strings.Contains(bad[1], "m2 has {term 1 EntryConfChange type:ConfChangeAddNode node_id:10}") {
		t.Errorf("mismatch at index 2 does not show m2's entry: %s", bad[1])
	}
	if !strings.Contains(bad[2], `key:"a"`) || !strings.Contains(bad[2], `m3 has`) || !strings.Contains(bad[2], `key:"b"`) {
		t.Errorf("mismatch at index 3 does not show both puts: %s", bad[2])
	}
	if got := compareLogs(readLogs(t, dirs), 2); len(got) != 2 {
		t.Errorf("with a limit of 2: %d mismatches", len(got))
	}
}

// TestCompareLogsFinalOnly: entries that a later write at the same index
// replaced, entries above the commit index, and uncommitted entries that a
// snapshot record passed over are not compared; what remains agrees.
func TestCompareLogsFinalOnly(t *testing.T) {
	dir := t.TempDir()
	dirs := map[string]string{"m1": filepath.Join(dir, "1"), "m2": filepath.Join(dir, "2"), "m3": filepath.Join(dir, "3")}
	writeWAL(t, dirs["m1"],
		walStep{ents: []*raftpb.Entry{put(1, 1, "a"), put(2, 1, "b"), put(3, 2, "c"), put(4, 2, "d")}, commit: 4})
	// m2 held entries 3 and 4 of an old leader's term; the new leader's
	// replaced them; its entry 5 is not committed.
	writeWAL(t, dirs["m2"],
		walStep{ents: []*raftpb.Entry{put(1, 1, "a"), put(2, 1, "b"), put(3, 1, "x"), put(4, 1, "y")}, commit: 2},
		walStep{ents: []*raftpb.Entry{put(3, 2, "c"), put(4, 2, "d")}, commit: 4},
		walStep{ents: []*raftpb.Entry{put(5, 2, "uncommitted")}, commit: 4})
	// m3 held an uncommitted entry 3 of an old term when a snapshot at 4
	// arrived: the snapshot replaced it, the WAL did not rewrite it.
	writeWAL(t, dirs["m3"],
		walStep{ents: []*raftpb.Entry{put(1, 1, "a"), put(2, 1, "b"), put(3, 1, "x")}, commit: 2},
		walStep{snap: &walfmt.Snapshot{Index: 4, Term: 2}},
		walStep{ents: []*raftpb.Entry{put(5, 2, "e")}, commit: 5})
	logs := readLogs(t, dirs)
	if bad := compareLogs(logs, 10); len(bad) > 0 {
		t.Fatalf("mismatches in agreeing logs:\n%s", strings.Join(bad, "\n"))
	}
	held := map[string]int{}
	for _, l := range logs {
		held[l.name] = len(l.entries)
	}
	if want := map[string]int{"m1": 4, "m2": 4, "m3": 3}; held["m1"] != want["m1"] || held["m2"] != want["m2"] || held["m3"] != want["m3"] {
		t.Errorf("final entries held %v, want %v", held, want)
	}
	// The same m3 with its entry 5 committed differently from m2's
	// uncommitted one is still fine; m1 with another committed entry 2 is not.
	writeWAL(t, filepath.Join(dir, "1b"), walStep{ents: []*raftpb.Entry{put(1, 1, "a"), put(2, 2, "b")}, commit: 2})
	dirs["m1"] = filepath.Join(dir, "1b")
	bad := compareLogs(readLogs(t, dirs), 10)
	if len(bad) != 1 || !strings.HasPrefix(bad[0], "mismatching entries on raft index 2: m1 has {term 2 ") {
		t.Fatalf("got %q, want one mismatch at index 2 (terms 2 and 1)", bad)
	}
}
