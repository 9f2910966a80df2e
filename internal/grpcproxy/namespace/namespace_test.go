package namespace

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/api/electionpb"
	"github.com/cairnkv/cairn/internal/api/lockpb"
)

func TestRangeEnd(t *testing.T) {
	for _, tc := range []struct {
		prefix, end, want string
	}{
		{"t/", "", ""},           // one key
		{"t/", "\x00", "t0"},     // from the key on: up to the namespace's end
		{"t/", "b", "t/b"},       // an ordinary end
		{"a\xff", "\x00", "b"},   // the end carries
		{"\xff", "\x00", "\x00"}, // no key after the namespace: no end
	} {
		if got := string(Prefix(tc.prefix).RangeEnd([]byte(tc.end))); got != tc.want {
			t.Errorf("Prefix(%q).RangeEnd(%q) = %q, want %q", tc.prefix, tc.end, got, tc.want)
		}
	}
}

// TestTxn: the compares and the operations of both branches, nested
// transactions included, get the prefix; the responses lose it.
func TestTxn(t *testing.T) {
	p := Prefix("t/")
	req := &pb.TxnRequest{
		Compare: []*pb.Compare{{Key: []byte("c"), RangeEnd: []byte("\x00")}},
		Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("k")}}}},
		Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{
			Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte("d"), RangeEnd: []byte("e")}}}},
		}}}},
	}
	p.TxnRequest(req)
	if c := req.Compare[0]; string(c.Key) != "t/c" || string(c.RangeEnd) != "t0" {
		t.Errorf("compare: %q..%q", c.Key, c.RangeEnd)
	}
	if k := req.Success[0].GetRequestPut().Key; string(k) != "t/k" {
		t.Errorf("put: %q", k)
	}
	if d := req.Failure[0].GetRequestTxn().Success[0].GetRequestDeleteRange(); string(d.Key) != "t/d" || string(d.RangeEnd) != "t/e" {
		t.Errorf("nested delete: %q..%q", d.Key, d.RangeEnd)
	}
	resp := &pb.TxnResponse{Responses: []*pb.ResponseOp{{Response: &pb.ResponseOp_ResponseTxn{ResponseTxn: &pb.TxnResponse{
		Responses: []*pb.ResponseOp{{Response: &pb.ResponseOp_ResponseRange{ResponseRange: &pb.RangeResponse{Kvs: []*mvccpb.KeyValue{{Key: []byte("t/x")}}}}}},
	}}}}}
	p.TxnResponse(resp)
	if k := resp.Responses[0].GetResponseTxn().Responses[0].GetResponseRange().Kvs[0].Key; string(k) != "x" {
		t.Errorf("nested range response key: %q", k)
	}
}

// TestLeaseKeys: a lease's keys outside the namespace are not shown.
func TestLeaseKeys(t *testing.T) {
	r := &pb.LeaseTimeToLiveResponse{Keys: [][]byte{[]byte("t/a"), []byte("other"), []byte("t/b")}}
	Prefix("t/").LeaseTimeToLiveResponse(r)
	if len(r.Keys) != 2 || string(r.Keys[0]) != "a" || string(r.Keys[1]) != "b" {
		t.Errorf("keys: %q", r.Keys)
	}
}

// TestWire: the Election and Lock messages, rewritten on the wire, decode
// to the same messages with the names and keys changed and nothing else.
func TestWire(t *testing.T) {
	p := Prefix("t/")
	enc := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	out, err := p.WireRequest("/v3electionpb.Election/Proclaim", enc(&electionpb.ProclaimRequest{
		Leader: &electionpb.LeaderKey{Name: []byte("e"), Key: []byte("e/1"), Rev: 7, Lease: 9}, Value: []byte("v")}))
	if err != nil {
		t.Fatal(err)
	}
	var proclaim electionpb.ProclaimRequest
	if err := proto.Unmarshal(out, &proclaim); err != nil {
		t.Fatal(err)
	}
	want := &electionpb.ProclaimRequest{Leader: &electionpb.LeaderKey{Name: []byte("t/e"), Key: []byte("t/e/1"), Rev: 7, Lease: 9}, Value: []byte("v")}
	if !proto.Equal(&proclaim, want) {
		t.Errorf("proclaim: %v, want %v", &proclaim, want)
	}

	out, err = p.WireResponse("/v3electionpb.Election/Leader", enc(&electionpb.LeaderResponse{
		Header: &pb.ResponseHeader{Revision: 3}, Kv: &mvccpb.KeyValue{Key: []byte("t/e/1"), Value: []byte("t/v")}}))
	if err != nil {
		t.Fatal(err)
	}
	var leader electionpb.LeaderResponse
	if err := proto.Unmarshal(out, &leader); err != nil {
		t.Fatal(err)
	}
	if string(leader.Kv.Key) != "e/1" || string(leader.Kv.Value) != "t/v" || leader.Header.Revision != 3 {
		t.Errorf("leader: %v", &leader)
	}

	out, err = p.WireResponse("/v3lockpb.Lock/Lock", enc(&lockpb.LockResponse{Key: []byte("t/l/1")}))
	if err != nil {
		t.Fatal(err)
	}
	var lock lockpb.LockResponse
	if err := proto.Unmarshal(out, &lock); err != nil {
		t.Fatal(err)
	}
	if string(lock.Key) != "l/1" {
		t.Errorf("lock key: %q", lock.Key)
	}
	if _, err := p.WireRequest("/v3lockpb.Lock/Lock", []byte{0x0a, 0x05, 'x'}); err == nil {
		t.Error("a truncated message was rewritten")
	}
}
