package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/internal/testnet"
)

// Requests a hostile client may send, answered as etcd 3.7.3 answers them.
// Each script runs against a new member with auth on: root; alice with
// READ on exactly /a/k, READWRITE on the prefix /alice/ and WRITE on exactly
// /wo/key; bob with no role; and leases holding keys of each kind. Its
// lines must equal the ones etcd gave (the etcd subtests check that they
// still do, where the reference binary can be had).

type hostile struct {
	t      *testing.T
	conn   *grpc.ClientConn
	kv     pb.KVClient
	lc     pb.LeaseClient
	tokens map[string]string
	leases map[string]int64
	lines  []string
}

// hostileLeases are the leases the set-up grants, and the keys put with
// each: alice may write all of Lalice's and Lwo's keys, only read Lread's,
// neither of L1's, one of Lmix's.
var hostileLeases = []struct {
	name string
	keys []string
}{
	{"L1", []string{"/secret/x"}},
	{"Lempty", nil},
	{"Lalice", []string{"/alice/l"}},
	{"Lwo", []string{"/wo/key"}},
	{"Lread", []string{"/a/k"}},
	{"Lmix", []string{"/alice/m", "/secret/m"}},
}

func newHostile(t *testing.T, endpoint string) *hostile {
	t.Helper()
	conn, err := grpc.NewClient(strings.TrimPrefix(endpoint, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	h := &hostile{t: t, conn: conn, kv: pb.NewKVClient(conn), lc: pb.NewLeaseClient(conn),
		tokens: map[string]string{}, leases: map[string]int64{}}
	h.setUp(pb.NewAuthClient(conn))
	return h
}

func (h *hostile) setUp(ac pb.AuthClient) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	must := func(_ any, err error) {
		h.t.Helper()
		if err != nil {
			h.t.Fatalf("set-up: %v", err)
		}
	}
	must(ac.UserAdd(ctx, &pb.AuthUserAddRequest{Name: "root", Password: "rootpw"}))
	must(ac.UserGrantRole(ctx, &pb.AuthUserGrantRoleRequest{User: "root", Role: "root"}))
	must(ac.RoleAdd(ctx, &pb.AuthRoleAddRequest{Name: "ra"}))
	for _, p := range []*authpb.Permission{
		{PermType: authpb.READ, Key: []byte("/a/k")},
		{PermType: authpb.READWRITE, Key: []byte("/alice/"), RangeEnd: []byte("/alice0")},
		{PermType: authpb.WRITE, Key: []byte("/wo/key")},
	} {
		must(ac.RoleGrantPermission(ctx, &pb.AuthRoleGrantPermissionRequest{Name: "ra", Perm: p}))
	}
	must(ac.UserAdd(ctx, &pb.AuthUserAddRequest{Name: "alice", Password: "alicepw"}))
	must(ac.UserGrantRole(ctx, &pb.AuthUserGrantRoleRequest{User: "alice", Role: "ra"}))
	must(ac.UserAdd(ctx, &pb.AuthUserAddRequest{Name: "bob", Password: "bobpw"}))
	for _, l := range hostileLeases {
		g, err := h.lc.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: 600})
		must(g, err)
		h.leases[l.name] = g.ID
		for _, k := range l.keys {
			must(h.kv.Put(ctx, &pb.PutRequest{Key: []byte(k), Value: []byte("v"), Lease: g.ID}))
		}
	}
	must(ac.AuthEnable(ctx, &pb.AuthEnableRequest{}))
	for _, u := range []string{"root", "alice", "bob"} {
		r, err := ac.Authenticate(ctx, &pb.AuthenticateRequest{Name: u, Password: u + "pw"})
		must(r, err)
		h.tokens[u] = r.Token
	}
}

// ctx carries who's token ("anon": none).
func (h *hostile) ctx(who string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if tok, ok := h.tokens[who]; ok {
		ctx = metadata.AppendToOutgoingContext(ctx, "token", tok)
	}
	return ctx, cancel
}

// record adds one line: what, then ok and out, or the error's code and text.
func (h *hostile) record(what, out string, err error) {
	if err != nil {
		st := status.Convert(err)
		h.lines = append(h.lines, fmt.Sprintf("%s: %s %s", what, st.Code(), st.Message()))
		return
	}
	h.lines = append(h.lines, strings.TrimSpace(what+": ok "+out))
}

func (h *hostile) txn(who, what string, req *pb.TxnRequest) {
	ctx, cancel := h.ctx(who)
	defer cancel()
	r, err := h.kv.Txn(ctx, req)
	h.record(who+" "+what, fmt.Sprintf("succeeded=%v", r.GetSucceeded()), err)
}

func opPut(key string, lease int64) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(key), Value: []byte("v"), Lease: lease}}}
}

func opRange(r *pb.RangeRequest) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: r}}
}

func opTxn(t *pb.TxnRequest) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: t}}
}

// neverTrue is a compare that fails: /alice/c does not exist.
var neverTrue = &pb.Compare{Key: []byte("/alice/c"), Target: pb.Compare_VERSION, Result: pb.Compare_GREATER, TargetUnion: &pb.Compare_Version{Version: 5}}

// compareOps are n compares that hold.
func compares(n int) []*pb.Compare {
	c := make([]*pb.Compare, n)
	for i := range c {
		c[i] = &pb.Compare{Key: []byte("/alice/c"), Target: pb.Compare_VERSION, Result: pb.Compare_LESS, TargetUnion: &pb.Compare_Version{Version: 5}}
	}
	return c
}

// ranges are n range operations.
func ranges(n int) []*pb.RequestOp {
	ops := make([]*pb.RequestOp, n)
	for i := range ops {
		ops[i] = opRange(&pb.RangeRequest{Key: fmt.Appendf(nil, "/alice/%d", i)})
	}
	return ops
}

// runHostile runs script on a cairn member and wants etcd 3.7.3's lines;
// the etcd subtest checks them on the reference binary.
func runHostile(t *testing.T, script func(*hostile), want []string) {
	t.Run("cairn", func(t *testing.T) {
		curl, _, _ := startMember(t, memberconfig.Config{})
		h := newHostile(t, curl)
		script(h)
		if diff := diffLines(want, h.lines); diff != "" {
			t.Errorf("cairn answers otherwise than etcd:\n%s", diff)
		}
	})
	t.Run("etcd", func(t *testing.T) {
		h := newHostile(t, etcdref.Start(t, testnet.FreeURL(t), testnet.FreeURL(t)))
		script(h)
		if !slices.Equal(h.lines, want) {
			t.Errorf("etcd answers otherwise than the test expects:\n%s", strings.Join(h.lines, "\n"))
		}
	})
}

// leaseAttachScript: a put names a lease, alone or in any branch of a txn
// at any depth (taken or not).
func leaseAttachScript(h *hostile) {
	for _, who := range []string{"alice", "bob", "root"} {
		for _, l := range hostileLeases {
			id, key := h.leases[l.name], "/alice/p"
			ctx, cancel := h.ctx(who)
			_, err := h.kv.Put(ctx, &pb.PutRequest{Key: []byte(key), Value: []byte("v"), Lease: id})
			cancel()
			h.record(who+" put "+l.name, "", err)
			h.txn(who, "txn success put "+l.name, &pb.TxnRequest{Success: []*pb.RequestOp{opPut(key, id)}})
			h.txn(who, "txn failure put "+l.name, &pb.TxnRequest{Compare: []*pb.Compare{neverTrue}, Failure: []*pb.RequestOp{opPut(key, id)}})
			h.txn(who, "txn put in the branch not taken "+l.name, &pb.TxnRequest{Compare: []*pb.Compare{neverTrue}, Success: []*pb.RequestOp{opPut(key, id)}})
			h.txn(who, "txn nested put "+l.name, &pb.TxnRequest{Success: []*pb.RequestOp{opTxn(&pb.TxnRequest{Success: []*pb.RequestOp{opPut(key, id)}})}})
			h.txn(who, "txn nested put not taken "+l.name, &pb.TxnRequest{Success: []*pb.RequestOp{opTxn(&pb.TxnRequest{Compare: []*pb.Compare{neverTrue}, Success: []*pb.RequestOp{opPut(key, id)}})}})
		}
	}
}

// TestLeaseAttachInTxnAsEtcd: attaching a lease needs write on every key
// already attached to it, in a txn as in a put; alice's txn must not
// extend the life of root's /secret/x.
func TestLeaseAttachInTxnAsEtcd(t *testing.T) {
	var want []string
	denied := "PermissionDenied etcdserver: permission denied"
	for _, who := range []string{"alice", "bob", "root"} {
		for _, l := range hostileLeases {
			// alice may attach a lease whose keys she may all write; bob may
			// write no /alice/ key at all.
			ok := who == "root" || (who == "alice" && (l.name == "Lempty" || l.name == "Lalice" || l.name == "Lwo"))
			line := func(what, out string) {
				if ok {
					want = append(want, strings.TrimSpace(fmt.Sprintf("%s %s %s: ok %s", who, what, l.name, out)))
				} else {
					want = append(want, fmt.Sprintf("%s %s %s: %s", who, what, l.name, denied))
				}
			}
			line("put", "")
			line("txn success put", "succeeded=true")
			line("txn failure put", "succeeded=false")
			line("txn put in the branch not taken", "succeeded=false")
			line("txn nested put", "succeeded=true")
			line("txn nested put not taken", "succeeded=true")
		}
	}
	runHostile(t, leaseAttachScript, want)
}

// keepAlive renews the leases named, one after the other, on one stream as
// who, and records the answers: a refusal ends the stream.
func (h *hostile) keepAlive(who string, names ...string) {
	ctx, cancel := h.ctx(who)
	defer cancel()
	what := who + " keepalive " + strings.Join(names, " then ")
	s, err := h.lc.LeaseKeepAlive(ctx)
	if err != nil {
		h.record(what, "", err)
		return
	}
	var ttls []string
	for _, name := range names {
		id, ok := h.leases[name]
		if !ok {
			id = 0x7777 // never granted
		}
		if err := s.Send(&pb.LeaseKeepAliveRequest{ID: id}); err != nil {
			h.record(what, "", err)
			return
		}
		r, err := s.Recv()
		if err != nil {
			h.record(what, "", err)
			return
		}
		ttls = append(ttls, fmt.Sprintf("id=%v live=%v", r.ID == id, r.TTL > 0))
	}
	h.record(what, strings.Join(ttls, " "), nil)
}

// TestLeaseKeepAliveAsEtcd: renewing a lease needs write on every key
// attached to it, as revoking it does; a refusal ends the stream with
// PermissionDenied. A lease with no keys, or none granted, anyone may renew.
func TestLeaseKeepAliveAsEtcd(t *testing.T) {
	const denied = "PermissionDenied etcdserver: permission denied"
	want := []string{
		"alice keepalive L1: " + denied,
		"alice keepalive Lempty: ok id=true live=true",
		"alice keepalive Lalice: ok id=true live=true",
		"alice keepalive Lwo: ok id=true live=true",
		"alice keepalive Lread: " + denied,
		"alice keepalive Lmix: " + denied,
		"alice keepalive missing: ok id=true live=false",
		"bob keepalive L1: " + denied,
		"bob keepalive Lempty: ok id=true live=true",
		"bob keepalive Lalice: " + denied,
		"bob keepalive Lwo: " + denied,
		"bob keepalive Lread: " + denied,
		"bob keepalive Lmix: " + denied,
		"bob keepalive missing: ok id=true live=false",
		"root keepalive L1: ok id=true live=true",
		"root keepalive Lmix: ok id=true live=true",
		"anon keepalive Lempty: InvalidArgument etcdserver: user name is empty",
		"alice keepalive Lempty then L1 then Lempty: " + denied,
	}
	runHostile(t, func(h *hostile) {
		for _, who := range []string{"alice", "bob"} {
			for _, l := range hostileLeases {
				h.keepAlive(who, l.name)
			}
			h.keepAlive(who, "missing")
		}
		h.keepAlive("root", "L1")
		h.keepAlive("root", "Lmix")
		h.keepAlive("anon", "Lempty")
		h.keepAlive("alice", "Lempty", "L1", "Lempty")
	}, want)
}

// nestedTxn is a txn nested depth deep in the success branch, the
// innermost holding leaf.
func nestedTxn(depth int, leaf *pb.RequestOp) *pb.TxnRequest {
	t := &pb.TxnRequest{Success: []*pb.RequestOp{leaf}}
	for i := 1; i < depth; i++ {
		t = &pb.TxnRequest{Success: []*pb.RequestOp{opTxn(t)}}
	}
	return t
}

// TestTxnLimitsAsEtcd: --max-txn-ops (128) bounds the operations of a txn
// and its nested txns as etcd counts them (see store.ValidateTxn), at the
// same boundaries; a txn nested 64 deep is answered, by anyone.
func TestTxnLimitsAsEtcd(t *testing.T) {
	const tooMany = "InvalidArgument etcdserver: too many operations in txn request"
	want := []string{
		"bob 64 levels: PermissionDenied etcdserver: permission denied",
		"alice 64 levels: ok succeeded=true",
		"bob 1000 levels: " + tooMany,
		"root 128 levels: ok succeeded=true",
		"root 129 levels: " + tooMany,
		"root 128 success ops: ok succeeded=true",
		"root 129 success ops: " + tooMany,
		"root 129 compares: " + tooMany,
		"root 129 failure ops: " + tooMany,
		"root 128 success and 128 failure ops: ok succeeded=true",
		"root 100 failure ops, 28 nested: ok succeeded=true",
		"root 100 failure ops, 29 nested: " + tooMany,
		"root 10 ops, 117 nested: ok succeeded=true",
		"root 10 ops, 118 nested: " + tooMany,
	}
	runHostile(t, func(h *hostile) {
		h.txn("bob", "64 levels", nestedTxn(64, opPut("/alice/x", 0)))
		h.txn("alice", "64 levels", nestedTxn(64, opPut("/alice/x", 0)))
		h.txn("bob", "1000 levels", nestedTxn(1000, opPut("/alice/x", 0)))
		h.txn("root", "128 levels", nestedTxn(128, opPut("/alice/x", 0)))
		h.txn("root", "129 levels", nestedTxn(129, opPut("/alice/x", 0)))
		h.txn("root", "128 success ops", &pb.TxnRequest{Success: ranges(128)})
		h.txn("root", "129 success ops", &pb.TxnRequest{Success: ranges(129)})
		h.txn("root", "129 compares", &pb.TxnRequest{Compare: compares(129)})
		h.txn("root", "129 failure ops", &pb.TxnRequest{Failure: ranges(129)})
		h.txn("root", "128 success and 128 failure ops", &pb.TxnRequest{Success: ranges(128), Failure: ranges(128)})
		for _, m := range []int{28, 29} {
			h.txn("root", fmt.Sprintf("100 failure ops, %d nested", m), &pb.TxnRequest{Failure: ranges(100), Success: []*pb.RequestOp{opTxn(&pb.TxnRequest{Success: ranges(m)})}})
		}
		for _, m := range []int{117, 118} {
			h.txn("root", fmt.Sprintf("10 ops, %d nested", m), &pb.TxnRequest{Success: append(ranges(10), opTxn(&pb.TxnRequest{Success: ranges(m)}))})
		}
	}, want)
}

// TestNestedTxnAnswersFast: a txn nested 64 deep used to double its cost
// with each level and never be answered. Measured here on a member (the
// median of 5): refused to a user without permission, and applied.
func TestNestedTxnAnswersFast(t *testing.T) {
	curl, _, _ := startMember(t, memberconfig.Config{})
	h := newHostile(t, curl)
	req := nestedTxn(64, opPut("/alice/x", 0))
	for _, who := range []string{"bob", "alice"} {
		var took []time.Duration
		for range 5 {
			start := time.Now()
			h.txn(who, "64 levels", req)
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		t.Logf("%s, 64 levels: median %v (%v)", who, took[2], took)
		if took[2] > 200*time.Millisecond {
			t.Errorf("%s, 64 levels: median %v", who, took[2])
		}
	}
	if want := []string{"bob 64 levels: PermissionDenied etcdserver: permission denied", "alice 64 levels: ok succeeded=true"}; h.lines[0] != want[0] || h.lines[5] != want[1] {
		t.Errorf("answers %q, want %q", h.lines, want)
	}
}

// rawBytes is a gRPC codec that sends bytes as they are, to send requests
// that do not decode.
type rawBytes struct{}

func (rawBytes) Marshal(v any) ([]byte, error)      { return *(v.(*[]byte)), nil }
func (rawBytes) Unmarshal(data []byte, v any) error { *(v.(*[]byte)) = data; return nil }
func (rawBytes) Name() string                       { return "proto" }

// validationScript sends requests that etcd refuses or answers in a way of
// its own: sort options and compares out of their enums, empty tokens,
// bytes that do not decode.
func validationScript(h *hostile) {
	rng := func(what string, req *pb.RangeRequest) {
		ctx, cancel := h.ctx("root")
		defer cancel()
		r, err := h.kv.Range(ctx, req)
		h.record("root "+what, fmt.Sprintf("count=%d", r.GetCount()), err)
	}
	rng("range sort target 7", &pb.RangeRequest{Key: []byte("/a"), SortTarget: 7})
	rng("range sort target -1", &pb.RangeRequest{Key: []byte("/a"), SortTarget: -1})
	rng("range sort order 3", &pb.RangeRequest{Key: []byte("/a"), SortOrder: 3})
	rng("range sort order -1", &pb.RangeRequest{Key: []byte("/a"), SortOrder: -1})
	rng("serializable range sort target 7", &pb.RangeRequest{Key: []byte("/a"), SortTarget: 7, Serializable: true})
	rng("range sort by value, descending", &pb.RangeRequest{Key: []byte("/a"), SortTarget: pb.RangeRequest_VALUE, SortOrder: pb.RangeRequest_DESCEND})
	h.txn("root", "txn range sort target 7", &pb.TxnRequest{Success: []*pb.RequestOp{opRange(&pb.RangeRequest{Key: []byte("/a"), SortTarget: 7})}})
	h.txn("root", "nested txn range sort order 3", &pb.TxnRequest{Failure: []*pb.RequestOp{opTxn(&pb.TxnRequest{Success: []*pb.RequestOp{opRange(&pb.RangeRequest{Key: []byte("/a"), SortOrder: 3})}})}})
	for _, c := range []struct {
		what string
		cmp  *pb.Compare
	}{
		{"compare result 9", &pb.Compare{Key: []byte("/secret/x"), Target: pb.Compare_VERSION, Result: 9}},
		{"compare result -1", &pb.Compare{Key: []byte("/secret/x"), Target: pb.Compare_MOD, Result: -1}},
		{"compare result 9 of a value", &pb.Compare{Key: []byte("/secret/x"), Target: pb.Compare_VALUE, Result: 9}},
		{"compare result 9 of a missing value", &pb.Compare{Key: []byte("/nokey"), Target: pb.Compare_VALUE, Result: 9}},
		{"compare target 9", &pb.Compare{Key: []byte("/secret/x"), Target: 9, Result: pb.Compare_EQUAL}},
		{"compare target 9, not equal", &pb.Compare{Key: []byte("/secret/x"), Target: 9, Result: pb.Compare_NOT_EQUAL}},
	} {
		h.txn("root", c.what, &pb.TxnRequest{Compare: []*pb.Compare{c.cmp}})
	}
	md := func(what string, kv ...string) {
		ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), kv...), 10*time.Second)
		defer cancel()
		_, err := h.kv.Range(ctx, &pb.RangeRequest{Key: []byte("/a")})
		h.record(what, "", err)
	}
	md("empty token", "token", "")
	md("empty authorization", "authorization", "")
	md("token 'Bearer '", "token", "Bearer ")
	md("empty token, root's authorization", "token", "", "authorization", h.tokens["root"])
	md("root's token, empty authorization", "token", h.tokens["root"], "authorization", "")
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "token", ""), 10*time.Second)
	_, err := pb.NewAuthClient(h.conn).AuthStatus(ctx, &pb.AuthStatusRequest{})
	cancel()
	h.record("empty token, AuthStatus", "", err)
	for _, method := range []string{"/etcdserverpb.KV/Range", "/etcdserverpb.KV/Txn", "/etcdserverpb.Lease/LeaseGrant",
		"/etcdserverpb.Auth/Authenticate", "/etcdserverpb.Auth/AuthStatus", "/etcdserverpb.Maintenance/Status"} {
		ctx, cancel := h.ctx("root")
		in, out := []byte{0xff, 0xff, 0xff}, []byte(nil)
		err := h.conn.Invoke(ctx, method, &in, &out, grpc.ForceCodec(rawBytes{}))
		cancel()
		// protobuf's texts put a space or a no-break space after
		// "proto:", by the binary, so that none depends on them.
		h.record("garbage to "+method, "", status.Error(status.Code(err), strings.ReplaceAll(status.Convert(err).Message(), "\u00a0", " ")))
	}
}

// TestRequestValidationAsEtcd: what etcd validates, cairn validates alike.
func TestRequestValidationAsEtcd(t *testing.T) {
	const (
		sortOption = "InvalidArgument etcdserver: invalid sort option"
		badToken   = "Unauthenticated etcdserver: invalid auth token"
		garbage    = "Internal grpc: error unmarshalling request: proto: cannot parse invalid wire-format data"
	)
	want := []string{
		"root range sort target 7: " + sortOption,
		"root range sort target -1: " + sortOption,
		"root range sort order 3: " + sortOption,
		"root range sort order -1: " + sortOption,
		"root serializable range sort target 7: " + sortOption,
		"root range sort by value, descending: ok count=0",
		"root txn range sort target 7: " + sortOption,
		"root nested txn range sort order 3: " + sortOption,
		"root compare result 9: ok succeeded=true",
		"root compare result -1: ok succeeded=true",
		"root compare result 9 of a value: ok succeeded=true",
		"root compare result 9 of a missing value: ok succeeded=false",
		"root compare target 9: ok succeeded=true",
		"root compare target 9, not equal: ok succeeded=false",
		"empty token: " + badToken,
		"empty authorization: " + badToken,
		"token 'Bearer ': " + badToken,
		"empty token, root's authorization: " + badToken,
		"root's token, empty authorization: ok",
		"empty token, AuthStatus: " + badToken,
		"garbage to /etcdserverpb.KV/Range: " + garbage,
		"garbage to /etcdserverpb.KV/Txn: " + garbage,
		"garbage to /etcdserverpb.Lease/LeaseGrant: " + garbage,
		"garbage to /etcdserverpb.Auth/Authenticate: " + garbage,
		"garbage to /etcdserverpb.Auth/AuthStatus: " + garbage,
		"garbage to /etcdserverpb.Maintenance/Status: " + garbage,
	}
	runHostile(t, validationScript, want)
}

// checkOrderScript sends malformed requests with no token, a bad token and
// as users without the permission, to see which of its errors etcd answers
// first; then the errors of the store whose order etcd fixes (a lease that
// does not exist and a key that does not, compaction at revision 0).
func checkOrderScript(h *hostile) {
	h.tokens["bad"] = "not-a-token"
	put := func(who, what string, req *pb.PutRequest) {
		ctx, cancel := h.ctx(who)
		defer cancel()
		_, err := h.kv.Put(ctx, req)
		h.record(who+" "+what, "", err)
	}
	manyOps := make([]*pb.RequestOp, 129) // one past --max-txn-ops' default
	for i := range manyOps {
		manyOps[i] = opPut(fmt.Sprintf("/secret/%d", i), 0)
	}
	for _, who := range []string{"anon", "bad", "bob", "alice"} {
		ctx, cancel := h.ctx(who)
		_, err := h.kv.Range(ctx, &pb.RangeRequest{Limit: 2, MinModRevision: 79})
		h.record(who+" range no key", "", err)
		_, err = h.kv.Range(ctx, &pb.RangeRequest{Key: []byte("/secret/x"), SortOrder: 3})
		h.record(who+" range sort order 3", "", err)
		_, err = h.kv.DeleteRange(ctx, &pb.DeleteRangeRequest{RangeEnd: []byte("/z")})
		h.record(who+" delete no key", "", err)
		cancel()
		put(who, "put no key", &pb.PutRequest{Value: []byte("v")})
		put(who, "put ignore_value with a value", &pb.PutRequest{Key: []byte("/secret/x"), Value: []byte("v"), IgnoreValue: true})
		put(who, "put ignore_lease with a lease", &pb.PutRequest{Key: []byte("/secret/x"), Lease: h.leases["L1"], IgnoreLease: true})
		h.txn(who, "txn compare no key", &pb.TxnRequest{Compare: []*pb.Compare{{Target: pb.Compare_VERSION}}})
		h.txn(who, "txn range no key", &pb.TxnRequest{Success: []*pb.RequestOp{opRange(&pb.RangeRequest{})}})
		h.txn(who, "txn empty op", &pb.TxnRequest{Success: []*pb.RequestOp{{}}})
		h.txn(who, "txn put ignore_value with a value", &pb.TxnRequest{Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("/secret/x"), Value: []byte("v"), IgnoreValue: true}}}}})
		h.txn(who, "txn duplicate key", &pb.TxnRequest{Success: []*pb.RequestOp{opPut("/secret/x", 0), opPut("/secret/x", 0)}})
		h.txn(who, "txn too many ops", &pb.TxnRequest{Success: manyOps})
	}
	const noLease = 987654321
	for _, who := range []string{"alice", "root"} {
		put(who, "put ignore_value, no such lease, no such key", &pb.PutRequest{Key: []byte("/alice/none"), Lease: noLease, IgnoreValue: true})
		h.txn(who, "txn put ignore_value, no such lease, no such key", &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("/alice/none"), Lease: noLease, IgnoreValue: true}}}}})
		h.txn(who, "txn put ignore_value to no such key, then put to no such lease", &pb.TxnRequest{Success: []*pb.RequestOp{
			{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("/alice/none"), IgnoreValue: true}}},
			opPut("/alice/y", noLease)}})
		h.txn(who, "txn put to no such lease, then put ignore_value to no such key", &pb.TxnRequest{Success: []*pb.RequestOp{
			opPut("/alice/y", noLease),
			{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("/alice/none"), IgnoreValue: true}}}}})
	}
	compact := func(who string, rev int64) {
		ctx, cancel := h.ctx(who)
		defer cancel()
		_, err := h.kv.Compact(ctx, &pb.CompactionRequest{Revision: rev})
		h.record(fmt.Sprintf("%s compact %d", who, rev), "", err)
	}
	compact("anon", 1000)
	compact("bob", 1000)
	compact("anon", 0)
	compact("root", 1000)
	compact("root", 0)
	compact("root", 0)
	compact("root", 3)
	compact("root", 2)
	compact("root", 3)
	compact("root", 0)
}

// TestCheckOrderAsEtcd: etcd validates the shape of a KV request before
// it looks at the token and the permissions, and cairn does alike.
func TestCheckOrderAsEtcd(t *testing.T) {
	const (
		noKey   = "InvalidArgument etcdserver: key is not provided"
		noLease = "NotFound etcdserver: requested lease not found"
		gone    = "OutOfRange etcdserver: mvcc: required revision has been compacted"
	)
	var want []string
	for _, who := range []string{"anon", "bad", "bob", "alice"} {
		for _, line := range []string{
			"range no key: " + noKey,
			"range sort order 3: InvalidArgument etcdserver: invalid sort option",
			"delete no key: " + noKey,
			"put no key: " + noKey,
			"put ignore_value with a value: InvalidArgument etcdserver: value is provided",
			"put ignore_lease with a lease: InvalidArgument etcdserver: lease is provided",
			"txn compare no key: " + noKey,
			"txn range no key: " + noKey,
			"txn empty op: InvalidArgument etcdserver: key not found",
			"txn put ignore_value with a value: InvalidArgument etcdserver: value is provided",
			"txn duplicate key: InvalidArgument etcdserver: duplicate key given in txn request",
			"txn too many ops: InvalidArgument etcdserver: too many operations in txn request",
		} {
			want = append(want, who+" "+line)
		}
	}
	want = append(want,
		"alice put ignore_value, no such lease, no such key: "+noLease,
		"alice txn put ignore_value, no such lease, no such key: "+noLease,
		"alice txn put ignore_value to no such key, then put to no such lease: InvalidArgument etcdserver: key not found",
		"alice txn put to no such lease, then put ignore_value to no such key: "+noLease,
		"root put ignore_value, no such lease, no such key: "+noLease,
		"root txn put ignore_value, no such lease, no such key: "+noLease,
		"root txn put ignore_value to no such key, then put to no such lease: InvalidArgument etcdserver: key not found",
		"root txn put to no such lease, then put ignore_value to no such key: "+noLease,
		// Compaction is checked for auth first, then its revision; 0 is a
		// revision like another: ok once, on a store never compacted.
		"anon compact 1000: InvalidArgument etcdserver: user name is empty",
		"bob compact 1000: PermissionDenied etcdserver: permission denied",
		"anon compact 0: InvalidArgument etcdserver: user name is empty",
		"root compact 1000: OutOfRange etcdserver: mvcc: required revision is a future revision",
		"root compact 0: ok",
		"root compact 0: "+gone,
		"root compact 3: ok",
		"root compact 2: "+gone,
		"root compact 3: "+gone,
		"root compact 0: "+gone,
	)
	runHostile(t, checkOrderScript, want)
}
