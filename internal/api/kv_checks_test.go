package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/internal/testnet"
)

// emptyOpWant is what etcd 3.7.3 answers to the empty operations of
// kvChecksScript, leaseWant to its puts to missing leases.
var emptyOpWant = []string{
	"txn, success op empty: InvalidArgument etcdserver: key not found",
	"txn, put then an empty op: InvalidArgument etcdserver: key not found",
	"txn, empty op in the failure branch: InvalidArgument etcdserver: key not found",
	"txn, empty op in a nested txn: InvalidArgument etcdserver: key not found",
	"after the empty ops: revision 1, tk count 0",
}

var leaseWant = []string{
	"put, lease never granted: NotFound etcdserver: requested lease not found",
	"txn, put then put with a lease never granted: NotFound etcdserver: requested lease not found",
	"txn, lease never granted in a nested txn: NotFound etcdserver: requested lease not found",
	"after the missing leases: revision 1, tk count 0, lk count 0",
	"txn, lease never granted in the branch not taken: ok, revision 2",
	"grant: ok",
	"revoke: ok",
	"put, lease revoked: NotFound etcdserver: requested lease not found",
	"txn, put with the revoked lease: NotFound etcdserver: requested lease not found",
	"after the revoked lease: revision 2, lk count 0",
	"put, live lease: ok, revision 3",
	"get lk: count 1, has its lease true",
}

// kvChecksScript makes the requests that etcd refuses for an empty
// operation in a txn (emptyOps) or else for a lease that does not exist,
// on a new member at endpoint, and describes what it answered and what was
// written.
func kvChecksScript(t *testing.T, endpoint string, emptyOps bool) []string {
	t.Helper()
	conn, err := grpc.NewClient(strings.TrimPrefix(endpoint, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv, lc := pb.NewKVClient(conn), pb.NewLeaseClient(conn)
	var out []string
	outcome := func(what string, rev int64, err error) {
		if err != nil {
			st := status.Convert(err)
			out = append(out, fmt.Sprintf("%s: %s %s", what, st.Code(), st.Message()))
		} else if rev != 0 {
			out = append(out, fmt.Sprintf("%s: ok, revision %d", what, rev))
		} else {
			out = append(out, what+": ok")
		}
	}
	count := func(key string) int64 {
		resp, err := kv.Range(ctx, &pb.RangeRequest{Key: []byte(key)})
		if err != nil {
			t.Fatalf("range %s: %v", key, err)
		}
		return resp.Count
	}
	rev := func() int64 {
		resp, err := kv.Range(ctx, &pb.RangeRequest{Key: []byte("any")})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	txn := func(what string, req *pb.TxnRequest) {
		resp, err := kv.Txn(ctx, req)
		outcome(what, resp.GetHeader().GetRevision(), err)
	}
	put := func(key string, lease int64) *pb.RequestOp {
		return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(key), Value: []byte("v"), Lease: lease}}}
	}
	nested := func(ops ...*pb.RequestOp) *pb.RequestOp {
		return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: &pb.TxnRequest{Success: ops}}}
	}
	never := &pb.Compare{Key: []byte("tk"), Target: pb.Compare_VERSION, Result: pb.Compare_GREATER, TargetUnion: &pb.Compare_Version{Version: 5}}
	const missing = 0x1234567

	if emptyOps {
		txn("txn, success op empty", &pb.TxnRequest{Success: []*pb.RequestOp{{}}})
		txn("txn, put then an empty op", &pb.TxnRequest{Success: []*pb.RequestOp{put("tk", 0), {}}})
		txn("txn, empty op in the failure branch", &pb.TxnRequest{Success: []*pb.RequestOp{put("tk", 0)}, Failure: []*pb.RequestOp{{}}})
		txn("txn, empty op in a nested txn", &pb.TxnRequest{Success: []*pb.RequestOp{nested(&pb.RequestOp{})}})
		out = append(out, fmt.Sprintf("after the empty ops: revision %d, tk count %d", rev(), count("tk")))
		return out
	}

	_, err = kv.Put(ctx, &pb.PutRequest{Key: []byte("lk"), Value: []byte("v"), Lease: missing})
	outcome("put, lease never granted", 0, err)
	txn("txn, put then put with a lease never granted", &pb.TxnRequest{Success: []*pb.RequestOp{put("tk", 0), put("lk", missing)}})
	txn("txn, lease never granted in a nested txn", &pb.TxnRequest{Success: []*pb.RequestOp{put("tk", 0), nested(put("lk", missing))}})
	out = append(out, fmt.Sprintf("after the missing leases: revision %d, tk count %d, lk count %d", rev(), count("tk"), count("lk")))
	txn("txn, lease never granted in the branch not taken", &pb.TxnRequest{Compare: []*pb.Compare{never},
		Success: []*pb.RequestOp{put("lk", missing)}, Failure: []*pb.RequestOp{put("tk", 0)}})

	g, err := lc.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: 60})
	outcome("grant", 0, err)
	if err != nil {
		return out
	}
	_, err = lc.LeaseRevoke(ctx, &pb.LeaseRevokeRequest{ID: g.ID})
	outcome("revoke", 0, err)
	_, err = kv.Put(ctx, &pb.PutRequest{Key: []byte("lk"), Value: []byte("v"), Lease: g.ID})
	outcome("put, lease revoked", 0, err)
	txn("txn, put with the revoked lease", &pb.TxnRequest{Success: []*pb.RequestOp{put("lk", g.ID)}})
	out = append(out, fmt.Sprintf("after the revoked lease: revision %d, lk count %d", rev(), count("lk")))

	live, err := lc.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: 60})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := kv.Put(ctx, &pb.PutRequest{Key: []byte("lk"), Value: []byte("v"), Lease: live.ID})
	outcome("put, live lease", resp.GetHeader().GetRevision(), err)
	got, err := kv.Range(ctx, &pb.RangeRequest{Key: []byte("lk")})
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, fmt.Sprintf("get lk: count %d, has its lease %v", got.Count, len(got.Kvs) == 1 && got.Kvs[0].Lease == live.ID))
	return out
}

// TestTxnWithAnEmptyOpAsEtcd: a txn with an empty operation (a RequestOp
// with no request), in any branch or a nested txn, is refused with
// `etcdserver: key not found` (InvalidArgument) and writes nothing.
func TestTxnWithAnEmptyOpAsEtcd(t *testing.T) { runKVChecks(t, true, emptyOpWant) }

// TestPutToAMissingLeaseAsEtcd: a put, alone or in the branch a txn takes
// (nested or not), to a lease never granted or revoked is refused with
// `etcdserver: requested lease not found` (NotFound) and writes nothing,
// the whole txn included; in the branch not taken it does not matter.
func TestPutToAMissingLeaseAsEtcd(t *testing.T) { runKVChecks(t, false, leaseWant) }

// runKVChecks runs kvChecksScript on a cairn member and wants etcd 3.7.3's
// answers; the etcd subtest checks them on the reference binary when it
// can be had.
func runKVChecks(t *testing.T, emptyOps bool, want []string) {
	t.Run("cairn", func(t *testing.T) {
		curl, _, _ := startMember(t, memberconfig.Config{})
		if diff := diffLines(want, kvChecksScript(t, curl, emptyOps)); diff != "" {
			t.Errorf("cairn answers otherwise than etcd:\n%s", diff)
		}
	})
	t.Run("etcd", func(t *testing.T) {
		curl := etcdref.Start(t, testnet.FreeURL(t), testnet.FreeURL(t))
		if got := kvChecksScript(t, curl, emptyOps); !slices.Equal(got, want) {
			t.Errorf("etcd answers otherwise than the test expects:\n%s", strings.Join(got, "\n"))
		}
	})
}
