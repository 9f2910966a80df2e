package forensics

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/walfmt"
)

// dumpLogsJSON runs dump-logs -w json and decodes its lines.
func dumpLogsJSON(t *testing.T, args ...string) []walRecordJSON {
	t.Helper()
	out := mustRun(t, append([]string{"dump-logs", "-w", "json"}, args...)...)
	var recs []walRecordJSON
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r walRecordJSON
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestDumpLogsFixture checks, on the real etcd WAL, that every
// entry is listed once with the term and index of the raft log as walfmt
// reads it for a restart, each marked committed.
func TestDumpLogsFixture(t *testing.T) {
	data := filepath.Join(copyFixture(t), "data")
	log, err := walfmt.ReadAll(walDir(data), walfmt.Snapshot{})
	if err != nil {
		t.Fatal(err)
	}
	var entries []walRecordJSON
	counts := map[string]int{}
	for _, r := range dumpLogsJSON(t, data) {
		counts[r.Record]++
		if r.Record == "entry" {
			entries = append(entries, r)
		}
	}
	if len(entries) != len(log.Entries) || len(entries) != 81 {
		t.Fatalf("dump-logs lists %d entries, the WAL holds %d", len(entries), len(log.Entries))
	}
	for i, e := range log.Entries {
		r := entries[i]
		if *r.Term != e.GetTerm() || *r.Index != e.GetIndex() || r.State != entryCommitted || r.EntryType != e.GetType().String() {
			t.Errorf("entry %d: listed as term %d index %d %s %s, want term %d index %d committed %s",
				i, *r.Term, *r.Index, r.State, r.EntryType, e.GetTerm(), e.GetIndex(), e.GetType())
		}
	}
	if entries[0].RequestType != kindConfChange || *entries[0].Term != 1 || *entries[80].Term != 2 {
		t.Errorf("first entry %+v, last %+v", entries[0], entries[80])
	}
	want := map[string]int{"crc": 1, "metadata": 1, "snapshot": 2, "hardstate": 82, "entry": 81}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("%d %s records listed, want %d", counts[k], k, n)
		}
	}

	table := mustRun(t, "dump-logs", data)
	for _, want := range []string{
		`80  entry          1          1  committed   conf    ConfChangeAddNode node=1f4d227d440d78c2 context={"id":2255496909790476482,`,
		`   848  entry          2          9  committed   normal  id=78c2a22816870708 txn:{compare:{target:VALUE key:"foo" value:"baz"} success:{request_put:{key:"foo" value:"qux"}} success:{request_put:{key:"txnkey" value:"created-in-txn"}} failure:{request_put:{key:"foo" value:"failed"}}}`,
		`lease_grant:{TTL:600 ID:78c2a2281687072b}`,
		`put:{key:"leased-key" value:"v" lease:78c2a2281687072b}`,
		`compaction:{revision:10}`,
		`auth_user_add:{name:"root" options:{} hashedPassword:<redacted>}`,
		`authenticate:{name:"root" simple_token:<redacted>}`,
		`id=78c2a22816870750 user="root" auth_revision=7 put:{key:"after-auth" value:"yes"}`,
		`4208  snapshot       2         41  -           -       conf_state={voters:2255496909790476482 auto_leave:false}`,
		`# entries 1-81, commit index 81 (last hard state term 2, vote 1f4d227d440d78c2), 0 superseded; 81 shown`,
		`# crc chain and frames ok (last crc 8bfa9604)`,
	} {
		if !strings.Contains(table, want) {
			t.Errorf("dump-logs table lacks %q", want)
		}
	}
	if strings.Contains(table, "$2a$") {
		t.Error("dump-logs prints password hashes")
	}
}

// entry builds a raft entry.
func testEntry(term, index uint64, data []byte) *raftpb.Entry {
	return &raftpb.Entry{Term: proto.Uint64(term), Index: proto.Uint64(index), Type: raftpb.EntryType_EntryNormal.Enum(), Data: data}
}

func hardState(term, commit uint64) *raftpb.HardState {
	return &raftpb.HardState{Term: proto.Uint64(term), Vote: proto.Uint64(1), Commit: proto.Uint64(commit)}
}

// putData encodes a put request with request ID id.
func putData(t *testing.T, id uint64, key, value string) []byte {
	t.Helper()
	b, err := proto.Marshal(&pb.InternalRaftRequest{Header: &pb.RequestHeader{ID: id}, Put: &pb.PutRequest{Key: []byte(key), Value: []byte(value)}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newTestWAL creates a data dir whose WAL the writer appends to.
func newTestWAL(t *testing.T, segmentSize int64) (string, *walfmt.Writer) {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	w, err := walfmt.Create(walDir(data), &pb.Metadata{NodeID: proto.Uint64(1), ClusterID: proto.Uint64(2)},
		walfmt.Options{SegmentSize: segmentSize, Sync: walfmt.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	return data, w
}

// TestDumpLogsSupersededEntries writes a raft log truncation: a
// leader of term 1 appends 1..10, 5 commit; a new leader of term 2
// replaces 6..10 by 6..8 and commits 7.
func TestDumpLogsSupersededEntries(t *testing.T) {
	data, w := newTestWAL(t, 0)
	var first []*raftpb.Entry
	for i := uint64(1); i <= 10; i++ {
		first = append(first, testEntry(1, i, putData(t, i, fmt.Sprint("k", i), "old")))
	}
	if err := w.Save(hardState(1, 5), first); err != nil {
		t.Fatal(err)
	}
	var second []*raftpb.Entry
	for i := uint64(6); i <= 8; i++ {
		second = append(second, testEntry(2, i, putData(t, 100+i, fmt.Sprint("k", i), "new")))
	}
	if err := w.Save(hardState(2, 7), second); err != nil {
		t.Fatal(err)
	}
	w.Close()

	type seen struct {
		term, index uint64
		state       string
	}
	list := func(args ...string) []seen {
		var out []seen
		for _, r := range dumpLogsJSON(t, append([]string{data}, args...)...) {
			if r.Record == "entry" {
				out = append(out, seen{*r.Term, *r.Index, r.State})
			}
		}
		return out
	}
	want := []seen{{1, 1, "committed"}, {1, 2, "committed"}, {1, 3, "committed"}, {1, 4, "committed"}, {1, 5, "committed"},
		{2, 6, "committed"}, {2, 7, "committed"}, {2, 8, "uncommitted"}}
	if got := list(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("resolved log:\n%v\nwant\n%v", got, want)
	}
	wantRaw := append(append([]seen(nil), want[:5]...),
		seen{1, 6, "superseded"}, seen{1, 7, "superseded"}, seen{1, 8, "superseded"}, seen{1, 9, "superseded"}, seen{1, 10, "superseded"})
	wantRaw = append(wantRaw, want[5:]...)
	if got := list("--raw"); fmt.Sprint(got) != fmt.Sprint(wantRaw) {
		t.Errorf("--raw:\n%v\nwant\n%v", got, wantRaw)
	}
	if table := mustRun(t, "dump-logs", data); !strings.Contains(table, "entries 1-8, commit index 7 (last hard state term 2, vote 1), 5 superseded; 8 shown") {
		t.Errorf("summary of a truncated log:\n%s", table)
	}
}

func TestDumpLogsFilters(t *testing.T) {
	data := filepath.Join(copyFixture(t), "data")
	indexes := func(args ...string) []string {
		var out []string
		for _, r := range dumpLogsJSON(t, append([]string{data}, args...)...) {
			if r.Index != nil {
				out = append(out, fmt.Sprintf("%s:%d", r.Record, *r.Index))
			} else {
				out = append(out, r.Record)
			}
		}
		return out
	}
	got := indexes("--start-index", "60", "--end-index", "62", "--entry-type", "Entry")
	if fmt.Sprint(got) != "[entry:60 entry:61 entry:62]" {
		t.Errorf("--start-index 60 --end-index 62 --entry-type Entry: %v", got)
	}
	got = indexes("--entry-type", "IRRLeaseGrant,IRRLeaseRevoke,ConfigChange,Snapshot")
	if fmt.Sprint(got) != "[snapshot:0 entry:1 snapshot:41 entry:44 entry:46 entry:48]" {
		t.Errorf("--entry-type IRRLeaseGrant,IRRLeaseRevoke,ConfigChange,Snapshot: %v", got)
	}
	got = indexes("--entry-type", "irrtxn,irrcompaction")
	if fmt.Sprint(got) != "[entry:9 entry:49]" {
		t.Errorf("--entry-type irrtxn,irrcompaction: %v", got)
	}
	mustFail(t, []string{`unknown --entry-type "IRRNope"`, "IRRPut"}, "dump-logs", data, "--entry-type", "IRRNope")
	mustFail(t, []string{"--end-index 3 is below --start-index 5"}, "dump-logs", data, "--start-index", "5", "--end-index", "3")
}

// TestDumpLogsStreamDecoder feeds entries to a decoder program
// as etcd-dump-logs does.
func TestDumpLogsStreamDecoder(t *testing.T) {
	data := filepath.Join(copyFixture(t), "data")
	decoder := filepath.Join(t.TempDir(), "decoder.sh")
	script := "#!/bin/sh\nwhile read -r line; do echo \"OK|${#line} hex digits\"; done\n"
	if err := os.WriteFile(decoder, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	recs := dumpLogsJSON(t, data, "--stream-decoder", decoder, "--entry-type", "IRRPut", "--end-index", "7")
	if len(recs) != 2 {
		t.Fatalf("%d records, want the puts at 6 and 7", len(recs))
	}
	for _, r := range recs {
		if r.Decoder == nil || r.Decoder.Status != "OK" || r.Decoder.Output != "50 hex digits" {
			t.Errorf("entry %d: decoder %+v", *r.Index, r.Decoder)
		}
	}
	table := mustRun(t, "dump-logs", data, "--stream-decoder", decoder, "--entry-type", "IRRPut", "--end-index", "6")
	if !strings.Contains(table, `put:{key:"foo" value:"bar"} | decoder OK: 50 hex digits`) {
		t.Errorf("table with decoder:\n%s", table)
	}
	mustFail(t, []string{"start stream decoder", "no-such-decoder"}, "dump-logs", data, "--stream-decoder", "/no-such-decoder")
}

// TestFastTextMatchesGeneric checks that the hand-written
// rendering of puts, deletes and txns is exactly the generic one.
func TestFastTextMatchesGeneric(t *testing.T) {
	reqs := []*pb.InternalRaftRequest{
		{Put: &pb.PutRequest{Key: []byte("k"), Value: []byte("v\x00\"\\\n\xff é\u0085"), Lease: 7, PrevKv: true, IgnoreValue: true, IgnoreLease: true}},
		{Put: &pb.PutRequest{}},
		{DeleteRange: &pb.DeleteRangeRequest{Key: []byte("a"), RangeEnd: []byte("b"), PrevKv: true}},
		{DeleteRange: &pb.DeleteRangeRequest{Key: []byte("a")}},
		{Txn: &pb.TxnRequest{
			Compare: []*pb.Compare{
				{Key: []byte("a"), Target: pb.Compare_MOD, TargetUnion: &pb.Compare_ModRevision{ModRevision: 0}},
				{Result: pb.Compare_GREATER, Key: []byte("b"), TargetUnion: &pb.Compare_Version{Version: 3}, RangeEnd: []byte("c")},
				{Result: pb.Compare_NOT_EQUAL, Target: pb.Compare_VALUE, Key: []byte("c"), TargetUnion: &pb.Compare_Value{Value: nil}},
				{Target: pb.Compare_LEASE, TargetUnion: &pb.Compare_Lease{Lease: 9}},
				{Target: pb.Compare_CREATE, TargetUnion: &pb.Compare_CreateRevision{CreateRevision: 4}},
				{Key: []byte("no target")},
			},
			Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("x")}}}},
			Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte("y")}}}},
		}},
		{Txn: &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("r")}}}}}},
		{LeaseGrant: &pb.LeaseGrantRequest{TTL: 5, ID: 6}},
	}
	for _, r := range reqs {
		generic := compactTextExcept(r.ProtoReflect(), "header", "ID")
		if got := requestBodyText(r); got != generic {
			t.Errorf("fast %s\ngeneric %s", got, generic)
		}
	}
}

// TestLeaseIDsInHex: dump-logs prints lease IDs as etcdctl and dump-db
// history do, in hexadecimal, in every request that carries one.
func TestLeaseIDsInHex(t *testing.T) {
	const id = 0x694d77aa9e6d7c0b
	for _, c := range []struct {
		r    *pb.InternalRaftRequest
		want string
	}{
		{&pb.InternalRaftRequest{LeaseGrant: &pb.LeaseGrantRequest{TTL: 60, ID: id}}, "lease_grant:{TTL:60 ID:694d77aa9e6d7c0b}"},
		{&pb.InternalRaftRequest{LeaseRevoke: &pb.LeaseRevokeRequest{ID: 0x1f}}, "lease_revoke:{ID:000000000000001f}"},
		{&pb.InternalRaftRequest{LeaseCheckpoint: &pb.LeaseCheckpointRequest{Checkpoints: []*pb.LeaseCheckpoint{{ID: id, Remaining_TTL: 30}}}},
			"lease_checkpoint:{checkpoints:{ID:694d77aa9e6d7c0b remaining_TTL:30}}"},
		{&pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("k"), Lease: id}}, `put:{key:"k" lease:694d77aa9e6d7c0b}`},
		{&pb.InternalRaftRequest{Txn: &pb.TxnRequest{Compare: []*pb.Compare{{Target: pb.Compare_LEASE, Key: []byte("k"), TargetUnion: &pb.Compare_Lease{Lease: id}}}}},
			`txn:{compare:{target:LEASE key:"k" lease:694d77aa9e6d7c0b}}`},
	} {
		if got := requestBodyText(c.r); got != c.want {
			t.Errorf("got %s, want %s", got, c.want)
		}
	}
}
