package api

// One fuzz target per gRPC service of a member (harness: fuzz_harness_test.go).
// An input is either raw bytes for one method or, read by a fuzzInput,
// a sequence of valid but extreme requests: huge counts and limits,
// negative and max-int64 revisions, TTLs and IDs, nested txns, compares
// and filters out of their enums, empty and 1.5 MiB keys, range ends below
// their keys, watch and keepalive streams of bogus IDs, garbage names.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/api/electionpb"
	"github.com/cairnkv/cairn/internal/api/lockpb"
	"github.com/cairnkv/cairn/internal/memberconfig"
)

// How deep the generated txns nest: a chain of txns (past the 128
// operations --max-txn-ops allows along a path of nesting), and a txn whose
// branches both hold txns, down to its leaves (16 deep is 1 MB, the
// deepest full tree under the 1.5 MiB request limit).
const (
	fuzzMaxTxnDepth     = 130
	fuzzMaxTxnTreeDepth = 16
)

// fuzzTxnBound is how long a txn may take: fuzzBound for each 64 KiB
// begun. A full tree of txns costs more for its size than a flat request:
// 16 deep, 1 MB of 131,071 txns, it takes 1-2 s on a loaded 2-core
// machine, in etcd 3.7.3 as in cairn, where a put of 1.5 MiB takes 50 ms.
// (When their cost doubled with each level, 12 deep took over 20 s.)
func fuzzTxnBound(txn *pb.TxnRequest) time.Duration {
	return fuzzBound * time.Duration(1+proto.Size(txn)/(64<<10))
}

// fuzzInput reads a fuzz input as the choices of a request generator; an
// input that has run out reads as zeros.
type fuzzInput struct{ b []byte }

func (in *fuzzInput) more() bool { return len(in.b) > 0 }

func (in *fuzzInput) byte() byte {
	if len(in.b) == 0 {
		return 0
	}
	c := in.b[0]
	in.b = in.b[1:]
	return c
}

func (in *fuzzInput) n(k int) int  { return int(in.byte()) % k }
func (in *fuzzInput) flag() bool   { return in.byte()&1 == 1 }
func (in *fuzzInput) int32() int32 { return int32(in.int64()) }

var fuzzInt64s = []int64{1, -1, 2, 3, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1,
	math.MaxInt32, math.MinInt32, math.MaxUint32, 1 << 32, 9_000_000_000, 9_000_000_001}

// int64 is mostly 0, else an extreme value, a small one, or any.
func (in *fuzzInput) int64() int64 {
	c := int(in.byte())
	switch {
	case c < 64:
		return 0
	case c < 64+len(fuzzInt64s):
		return fuzzInt64s[c-64]
	case c < 160:
		return int64(c - 128)
	}
	var v uint64
	for range 8 {
		v = v<<8 | uint64(in.byte())
	}
	return int64(v)
}

var fuzzBytes = [][]byte{nil, []byte("a"), []byte("b"), []byte("a/"), []byte("\x00"), []byte("\xff"), []byte("\xff\xff"), []byte("root")}

// fuzzLarge holds the bytes of the largest keys and values.
var fuzzLarge = bytes.Repeat([]byte{'x'}, memberconfig.DefaultMaxRequestBytes+1)

// fuzzLargeSizes: a value that fits in a put with a short key, the limit, one byte over.
var fuzzLargeSizes = []int{memberconfig.DefaultMaxRequestBytes - 512, memberconfig.DefaultMaxRequestBytes, memberconfig.DefaultMaxRequestBytes + 1}

// bytes is a key, name or value: a few short ones, some of the input's
// bytes, or about the largest request a member takes.
func (in *fuzzInput) bytes() []byte {
	i := in.n(len(fuzzBytes) + 4)
	switch {
	case i < len(fuzzBytes):
		return fuzzBytes[i]
	case i == len(fuzzBytes):
		k := min(in.n(32), len(in.b))
		b := bytes.Clone(in.b[:k])
		in.b = in.b[k:]
		return b
	}
	return fuzzLarge[:fuzzLargeSizes[i-len(fuzzBytes)-1]]
}

func (in *fuzzInput) string() string { return string(in.bytes()) }

// rangeEnd is a range end for key: none, every key from it, itself, below
// it, its prefix's end, or any.
func (in *fuzzInput) rangeEnd(key []byte) []byte {
	switch in.n(6) {
	case 0:
		return nil
	case 1:
		return []byte{0}
	case 2:
		return key
	case 3:
		if len(key) > 0 && key[len(key)-1] > 0 {
			return append(bytes.Clone(key[:len(key)-1]), key[len(key)-1]-1)
		}
		return []byte{}
	case 4:
		return append(bytes.Clone(key), 0xff)
	}
	return in.bytes()
}

// ---- KV

func (in *fuzzInput) rangeRequest() *pb.RangeRequest {
	key := in.bytes()
	return &pb.RangeRequest{Key: key, RangeEnd: in.rangeEnd(key), Limit: in.int64(), Revision: in.int64(),
		SortOrder: pb.RangeRequest_SortOrder(in.int32()), SortTarget: pb.RangeRequest_SortTarget(in.int32()),
		Serializable: in.flag(), KeysOnly: in.flag(), CountOnly: in.flag(),
		MinModRevision: in.int64(), MaxModRevision: in.int64(), MinCreateRevision: in.int64(), MaxCreateRevision: in.int64()}
}

func (in *fuzzInput) putRequest() *pb.PutRequest {
	return &pb.PutRequest{Key: in.bytes(), Value: in.bytes(), Lease: in.int64(), PrevKv: in.flag(), IgnoreValue: in.flag(), IgnoreLease: in.flag()}
}

func (in *fuzzInput) deleteRequest() *pb.DeleteRangeRequest {
	key := in.bytes()
	return &pb.DeleteRangeRequest{Key: key, RangeEnd: in.rangeEnd(key), PrevKv: in.flag()}
}

func (in *fuzzInput) compare() *pb.Compare {
	key := in.bytes()
	c := &pb.Compare{Result: pb.Compare_CompareResult(in.int32()), Target: pb.Compare_CompareTarget(in.int32()), Key: key, RangeEnd: in.rangeEnd(key)}
	switch in.n(6) {
	case 0:
		c.TargetUnion = &pb.Compare_Version{Version: in.int64()}
	case 1:
		c.TargetUnion = &pb.Compare_CreateRevision{CreateRevision: in.int64()}
	case 2:
		c.TargetUnion = &pb.Compare_ModRevision{ModRevision: in.int64()}
	case 3:
		c.TargetUnion = &pb.Compare_Value{Value: in.bytes()}
	case 4:
		c.TargetUnion = &pb.Compare_Lease{Lease: in.int64()}
	}
	return c
}

// ops is a txn branch: a few operations, or about etcd's limit of 128 (--max-txn-ops).
func (in *fuzzInput) ops(depth int) []*pb.RequestOp {
	n := in.n(4)
	if in.n(16) == 0 {
		n = 126 + in.n(5)
	}
	ops := make([]*pb.RequestOp, n)
	for i := range ops {
		ops[i] = in.op(depth)
	}
	return ops
}

func (in *fuzzInput) op(depth int) *pb.RequestOp {
	switch in.n(5) {
	case 0:
		return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: in.rangeRequest()}}
	case 1:
		return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: in.putRequest()}}
	case 2:
		return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: in.deleteRequest()}}
	case 3:
		if depth < fuzzMaxTxnTreeDepth {
			return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: in.txnRequest(depth + 1)}}
		}
	}
	return &pb.RequestOp{} // no request: refused
}

func (in *fuzzInput) txnRequest(depth int) *pb.TxnRequest {
	cmps := make([]*pb.Compare, in.n(3))
	for i := range cmps {
		cmps[i] = in.compare()
	}
	return &pb.TxnRequest{Compare: cmps, Success: in.ops(depth), Failure: in.ops(depth)}
}

// deepTxn is a txn nested depth deep, in both branches when both is set.
func deepTxn(depth int, both bool) *pb.TxnRequest {
	put := &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("a")}}}
	txn := &pb.TxnRequest{Success: []*pb.RequestOp{put}}
	for range depth {
		op := &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: txn}}
		txn = &pb.TxnRequest{Success: []*pb.RequestOp{op}}
		if both {
			txn.Failure = []*pb.RequestOp{op}
		}
	}
	return txn
}

func (fm *fuzzMember) genKV(t *testing.T, in *fuzzInput) {
	kv := pb.NewKVClient(fm.conn)
	for in.more() {
		ctx, cancel := bounded()
		var err error
		var what string
		switch in.n(7) {
		case 0:
			what = "Range"
			_, err = kv.Range(ctx, in.rangeRequest())
		case 1:
			what = "Put"
			_, err = kv.Put(ctx, in.putRequest())
		case 2:
			what = "DeleteRange"
			_, err = kv.DeleteRange(ctx, in.deleteRequest())
		case 3:
			what = "Txn"
			_, err = kv.Txn(ctx, in.txnRequest(0))
		case 4:
			what = "Txn (deep)"
			var txn *pb.TxnRequest
			if in.flag() {
				txn = deepTxn(in.n(fuzzMaxTxnTreeDepth+1), true)
			} else {
				txn = deepTxn(in.n(fuzzMaxTxnDepth+1), false)
			}
			tctx, tcancel := context.WithTimeout(context.Background(), fuzzTxnBound(txn))
			_, err = kv.Txn(tctx, txn)
			tcancel()
		case 5:
			what = "Compact"
			_, err = kv.Compact(ctx, &pb.CompactionRequest{Revision: in.int64(), Physical: in.flag()})
		case 6:
			what = "RangeStream"
			var s pb.KV_RangeStreamClient
			if s, err = kv.RangeStream(ctx, in.rangeRequest()); err == nil {
				for err == nil {
					_, err = s.Recv()
				}
			}
			if err == io.EOF {
				err = nil
			}
		}
		cancel()
		answered(t, what, err)
	}
}

// FuzzKV feeds the KV service: Range, RangeStream, Put, DeleteRange, Txn, Compact.
func FuzzKV(f *testing.F) {
	fm := newFuzzMember(f, "etcdserverpb.KV")
	put, _ := proto.Marshal(&pb.PutRequest{Key: []byte("a"), Value: []byte("v")})
	f.Add(append([]byte{0, 2}, put...))                  // a Put as it is
	f.Add([]byte{0, 3, 0x0a, 0x05, 'a'})                 // a Range with a truncated key
	f.Add([]byte{1, 1, 1, 0, 1, 0, 0, 0})                // a Put of an empty key
	f.Add([]byte{1, 1, 1, 10, 11, 0, 0, 0})              // a Put of about 1.5 MiB
	f.Add([]byte{1, 0, 2, 3, 200, 255, 255, 255, 255})   // a Range whose end is below its key, at a huge revision
	f.Add([]byte{1, 3, 2, 1, 2, 1, 1, 3, 0, 3, 1, 3, 1}) // a nested txn
	f.Add([]byte{1, 4, 0, 64})                           // a chain of txns 64 deep
	f.Add([]byte{1, 4, 0, 130})                          // a chain of txns as deep as the generator goes
	f.Add([]byte{1, 4, 1, 11})                           // a full tree of txns 11 deep (16 deep takes 15 s under -race)
	f.Add([]byte{1, 5, 69, 1})                           // a compaction at max int64
	f.Fuzz(func(t *testing.T, data []byte) { fm.fuzz(t, data, fm.genKV) })
}

// ---- Watch

func (in *fuzzInput) watchCreate() *pb.WatchCreateRequest {
	key := in.bytes()
	filters := make([]pb.WatchCreateRequest_FilterType, in.n(3))
	for i := range filters {
		filters[i] = pb.WatchCreateRequest_FilterType(in.int32())
	}
	return &pb.WatchCreateRequest{Key: key, RangeEnd: in.rangeEnd(key), StartRevision: in.int64(), ProgressNotify: in.flag(),
		Filters: filters, PrevKv: in.flag(), WatchId: in.int64(), Fragment: in.flag()}
}

// genWatch sends a sequence of creates, cancels and progress requests on
// one stream, with puts in between, and expects an answer to each create.
func (fm *fuzzMember) genWatch(t *testing.T, in *fuzzInput) {
	ctx, cancel := bounded()
	defer cancel()
	w, err := pb.NewWatchClient(fm.conn).Watch(ctx)
	if err != nil {
		answered(t, "Watch", err)
		return
	}
	var ids []int64
	creates := 0
	for i := 0; in.more() && i < 32; i++ {
		var req *pb.WatchRequest
		switch in.n(4) {
		case 0:
			creates++
			cr := in.watchCreate()
			ids = append(ids, cr.WatchId)
			req = &pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: cr}}
		case 1:
			id := in.int64()
			if len(ids) > 0 && in.flag() {
				id = ids[in.n(len(ids))]
			}
			req = &pb.WatchRequest{RequestUnion: &pb.WatchRequest_CancelRequest{CancelRequest: &pb.WatchCancelRequest{WatchId: id}}}
		case 2:
			req = &pb.WatchRequest{RequestUnion: &pb.WatchRequest_ProgressRequest{ProgressRequest: &pb.WatchProgressRequest{}}}
		case 3:
			pctx, pcancel := bounded()
			_, err := pb.NewKVClient(fm.conn).Put(pctx, &pb.PutRequest{Key: in.bytes(), Value: in.bytes()})
			pcancel()
			answered(t, "Put", err)
			continue
		}
		if err := w.Send(req); err != nil {
			break // the member ended the stream: Recv says why
		}
	}
	// A last create, so that a stream with none still shows the member
	// read the others.
	creates++
	if err := w.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: &pb.WatchCreateRequest{Key: fuzzSentinel}}}); err != nil {
		_, err = w.Recv()
		answered(t, "Watch", err)
		return
	}
	for created := 0; created < creates; {
		resp, err := w.Recv()
		if err != nil {
			answered(t, fmt.Sprintf("Watch (%d of %d creates answered)", created, creates), err)
			return
		}
		if resp.Created {
			created++
		}
	}
}

// FuzzWatch feeds the Watch service: streams of creates, cancels and progress requests.
func FuzzWatch(f *testing.F) {
	fm := newFuzzMember(f, "etcdserverpb.Watch")
	create, _ := proto.Marshal(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: &pb.WatchCreateRequest{Key: []byte("a")}}})
	f.Add(append([]byte{0, 0, byte(len(create))}, create...))
	f.Add([]byte{0, 0, 3, 0x0a, 0x05, 'a'})
	f.Add([]byte{1, 0, 1, 0, 69, 0, 0, 0, 1, 1, 0})                      // a create from max int64
	f.Add([]byte{1, 0, 1, 0, 65, 0, 0, 0, 0, 0, 0})                      // a create from -1
	f.Add([]byte{1, 0, 2, 3, 0, 0, 0, 0, 0, 65, 0, 0, 0, 0, 0, 65, 0})   // two creates of the same ID
	f.Add([]byte{1, 3, 1, 10, 0, 1, 0, 0, 0, 0, 0, 0, 1, 3, 1, 11, 2})   // a fragmented watch of a large put
	f.Add([]byte{1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 65, 2, 2}) // create, cancel, cancel a bogus ID, progress
	f.Fuzz(func(t *testing.T, data []byte) { fm.fuzz(t, data, fm.genWatch) })
}

// ---- Lease

func (fm *fuzzMember) genLease(t *testing.T, in *fuzzInput) {
	lc := pb.NewLeaseClient(fm.conn)
	var ids []int64
	id := func() int64 {
		if len(ids) > 0 && in.flag() {
			return ids[in.n(len(ids))]
		}
		return in.int64()
	}
	for in.more() {
		ctx, cancel := bounded()
		var err error
		var what string
		switch in.n(6) {
		case 0:
			what = "LeaseGrant"
			var resp *pb.LeaseGrantResponse
			if resp, err = lc.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: in.int64(), ID: in.int64()}); err == nil {
				ids = append(ids, resp.ID)
			}
		case 1:
			what = "LeaseRevoke"
			_, err = lc.LeaseRevoke(ctx, &pb.LeaseRevokeRequest{ID: id()})
		case 2:
			what = "LeaseTimeToLive"
			_, err = lc.LeaseTimeToLive(ctx, &pb.LeaseTimeToLiveRequest{ID: id(), Keys: in.flag()})
		case 3:
			what = "LeaseLeases"
			_, err = lc.LeaseLeases(ctx, &pb.LeaseLeasesRequest{})
		case 4:
			what = "Put with a lease"
			_, err = pb.NewKVClient(fm.conn).Put(ctx, &pb.PutRequest{Key: in.bytes(), Lease: id()})
		case 5:
			what, err = "LeaseKeepAlive", fm.keepAlives(ctx, in, id)
		}
		cancel()
		answered(t, what, err)
	}
}

// keepAlives sends keepalives for a few IDs on one stream and expects an
// answer to each.
func (fm *fuzzMember) keepAlives(ctx context.Context, in *fuzzInput, id func() int64) error {
	s, err := pb.NewLeaseClient(fm.conn).LeaseKeepAlive(ctx)
	if err != nil {
		return err
	}
	n := 1 + in.n(8)
	for range n {
		if err := s.Send(&pb.LeaseKeepAliveRequest{ID: id()}); err != nil {
			break // the member ended the stream: Recv says why
		}
	}
	for range n {
		if _, err := s.Recv(); err != nil {
			return err
		}
	}
	return nil
}

// FuzzLease feeds the Lease service: grants, revokes, time-to-live, keepalive streams.
func FuzzLease(f *testing.F) {
	fm := newFuzzMember(f, "etcdserverpb.Lease")
	grant, _ := proto.Marshal(&pb.LeaseGrantRequest{TTL: 5})
	f.Add(append([]byte{0, 0}, grant...))
	f.Add([]byte{0, 1, 2, 8, 1, 2, 8, 2})                // keepalives of raw IDs 1 and 2
	f.Add([]byte{1, 0, 69, 0})                           // a grant of TTL max int64
	f.Add([]byte{1, 0, 65, 69})                          // a grant of TTL -1 and ID max int64
	f.Add([]byte{1, 0, 100, 0, 5, 7, 1, 0, 1, 0, 2, 1})  // grant, keepalives of it, revoke it twice
	f.Add([]byte{1, 5, 7, 0, 65, 0, 69, 0, 70, 0, 0, 0}) // keepalives of bogus IDs
	f.Add([]byte{1, 0, 100, 0, 4, 1, 1, 0, 2, 1, 1, 0})  // a key on a lease, its time-to-live with keys
	f.Fuzz(func(t *testing.T, data []byte) { fm.fuzz(t, data, fm.genLease) })
}

// ---- Cluster

// peerURLs are peer URLs for an add or an update: none, the member's own,
// malformed, or one of fuzzPeerURL's twice.
func (in *fuzzInput) peerURLs(self []string) []string {
	switch in.n(6) {
	case 0:
		return nil
	case 1:
		return self
	case 2:
		return []string{"unix://x", ""}
	case 3:
		return []string{"http://[::1", "http://127.0.0.1:99999"}
	case 4:
		return []string{in.string()}
	}
	u := fuzzPeerURL()
	return []string{u, u}
}

func (fm *fuzzMember) genCluster(t *testing.T, in *fuzzInput) {
	cc := pb.NewClusterClient(fm.conn)
	self, _ := fm.s.Member(fm.s.ID())
	ids := []uint64{fm.s.ID()}
	id := func() uint64 {
		if in.flag() {
			return ids[in.n(len(ids))]
		}
		return uint64(in.int64())
	}
	for in.more() {
		ctx, cancel := bounded()
		var err error
		var what string
		switch in.n(5) {
		case 0:
			what = "MemberList"
			_, err = cc.MemberList(ctx, &pb.MemberListRequest{Linearizable: in.flag()})
		case 1:
			what = "MemberAdd"
			var resp *pb.MemberAddResponse
			// Only learners: see fuzzMember.raw.
			urls := in.peerURLs(self.PeerURLs)
			if in.flag() {
				urls = []string{fuzzPeerURL()}
			}
			if resp, err = cc.MemberAdd(ctx, &pb.MemberAddRequest{PeerURLs: urls, IsLearner: true}); err == nil {
				ids = append(ids, resp.Member.ID)
			}
		case 2:
			what = "MemberRemove"
			_, err = cc.MemberRemove(ctx, &pb.MemberRemoveRequest{ID: id()})
		case 3:
			what = "MemberUpdate"
			_, err = cc.MemberUpdate(ctx, &pb.MemberUpdateRequest{ID: id(), PeerURLs: in.peerURLs(self.PeerURLs)})
		case 4:
			what = "MemberPromote"
			_, err = cc.MemberPromote(ctx, &pb.MemberPromoteRequest{ID: id()})
		}
		cancel()
		answered(t, what, err)
	}
	// The member's own peer URLs as they were, for the next input.
	ctx, cancel := bounded()
	defer cancel()
	_, err := cc.MemberUpdate(ctx, &pb.MemberUpdateRequest{ID: fm.s.ID(), PeerURLs: self.PeerURLs})
	answered(t, "MemberUpdate", err)
}

// FuzzCluster feeds the Cluster service: adds, removes, updates and
// promotions of members, the member's own among them.
func FuzzCluster(f *testing.F) {
	fm := newFuzzMember(f, "etcdserverpb.Cluster")
	f.Add([]byte{0, 1, 0x0a, 0x03, 'x', 'y', 'z'})
	f.Add([]byte{0, 0})                            // MemberAdd of no bytes: the harness's learner
	f.Add([]byte{1, 1, 0, 1})                      // add a learner
	f.Add([]byte{1, 1, 0, 1, 4, 1, 1})             // add a learner and promote it
	f.Add([]byte{1, 1, 0, 1, 2, 1, 1, 1, 0, 1})    // add a learner, remove it, add another
	f.Add([]byte{1, 1, 1, 0})                      // add a learner of the member's own peer URLs
	f.Add([]byte{1, 2, 1, 0})                      // remove the member itself
	f.Add([]byte{1, 3, 1, 0, 4, 3, 'x', ':', '/'}) // update the member's peer URLs to garbage
	// add a learner at http://127.0.0.1:9, remove it, add it again (the
	// removed ID within the same second)
	add := append([]byte{1, 4, 8, 18}, "http://127.0.0.1:9\x00"...)
	f.Add(slices.Concat([]byte{1}, add, []byte{2, 1, 1}, add))
	f.Fuzz(func(t *testing.T, data []byte) { fm.fuzz(t, data, fm.genCluster) })
}

// ---- Maintenance

var fuzzVersions = []string{"", "3.6", "3.6.0", "3.5", "3.7", "3.8", "4.0", "2.0", "3", "a.b", "-1.-1", "99999999999999999999.1"}

func (fm *fuzzMember) genMaintenance(t *testing.T, in *fuzzInput) {
	mc := pb.NewMaintenanceClient(fm.conn)
	for in.more() {
		ctx, cancel := bounded()
		var err error
		var what string
		switch in.n(8) {
		case 0:
			what = "Alarm"
			member := uint64(in.int64())
			if in.flag() {
				member = fm.s.ID()
			}
			_, err = mc.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_AlarmAction(in.int32()), MemberID: member, Alarm: pb.AlarmType(in.int32())})
		case 1:
			what = "Status"
			_, err = mc.Status(ctx, &pb.StatusRequest{})
		case 2:
			what = "Defragment"
			_, err = mc.Defragment(ctx, &pb.DefragmentRequest{})
		case 3:
			what = "Hash"
			_, err = mc.Hash(ctx, &pb.HashRequest{})
		case 4:
			what = "HashKV"
			_, err = mc.HashKV(ctx, &pb.HashKVRequest{Revision: in.int64()})
		case 5:
			what = "Snapshot"
			var s pb.Maintenance_SnapshotClient
			if s, err = mc.Snapshot(ctx, &pb.SnapshotRequest{}); err == nil {
				for err == nil {
					_, err = s.Recv()
				}
			}
			if err == io.EOF {
				err = nil
			}
		case 6:
			what = "MoveLeader"
			target := uint64(in.int64())
			if in.flag() {
				target = fm.s.ID()
			}
			_, err = mc.MoveLeader(ctx, &pb.MoveLeaderRequest{TargetID: target})
		case 7:
			what = "Downgrade"
			v := fuzzVersions[in.n(len(fuzzVersions))]
			_, err = mc.Downgrade(ctx, &pb.DowngradeRequest{Action: pb.DowngradeRequest_DowngradeAction(in.int32()), Version: v})
		}
		cancel()
		answered(t, what, err)
	}
}

// FuzzMaintenance feeds the Maintenance service: alarms, status, defragment,
// hashes, snapshots, leader moves, downgrades.
func FuzzMaintenance(f *testing.F) {
	fm := newFuzzMember(f, "etcdserverpb.Maintenance")
	f.Add([]byte{0, 0, 0x08, 0x01, 0x18, 0x01}) // Alarm: activate NOSPACE
	f.Add([]byte{1, 0, 65, 1, 1, 65})           // activate NOSPACE on the member
	f.Add([]byte{1, 0, 65, 1, 1, 69})           // activate an alarm out of the enum
	f.Add([]byte{1, 4, 69, 4, 65, 4, 0})        // HashKV at max int64, -1, 0
	f.Add([]byte{1, 2, 5, 3})                   // defragment, snapshot, hash
	f.Add([]byte{1, 7, 65, 1, 7, 64, 1})        // downgrade enable to 3.6, validate
	f.Add([]byte{1, 6, 0, 1, 6, 69, 0})         // move the leader to itself, to max int64
	f.Fuzz(func(t *testing.T, data []byte) { fm.fuzz(t, data, fm.genMaintenance) })
}

// ---- Auth

func (fm *fuzzMember) genAuth(t *testing.T, in *fuzzInput) {
	ac := pb.NewAuthClient(fm.conn)
	base := context.Background()
	for in.more() {
		ctx, cancel := context.WithTimeout(base, fuzzBound)
		var err error
		var what string
		switch in.n(17) {
		case 0:
			what = "AuthEnable"
			_, err = ac.AuthEnable(ctx, &pb.AuthEnableRequest{})
		case 1:
			what = "AuthDisable"
			_, err = ac.AuthDisable(ctx, &pb.AuthDisableRequest{})
		case 2:
			what = "AuthStatus"
			_, err = ac.AuthStatus(ctx, &pb.AuthStatusRequest{})
		case 3:
			what = "Authenticate"
			var resp *pb.AuthenticateResponse
			if resp, err = ac.Authenticate(ctx, &pb.AuthenticateRequest{Name: in.string(), Password: in.string()}); err == nil {
				// the input's next requests as that user
				base = metadata.AppendToOutgoingContext(context.Background(), "token", resp.Token)
			}
		case 4:
			what = "UserAdd"
			_, err = ac.UserAdd(ctx, &pb.AuthUserAddRequest{Name: in.string(), Password: in.string(), Options: &authpb.UserAddOptions{NoPassword: in.flag()}})
		case 5:
			what = "UserGet"
			_, err = ac.UserGet(ctx, &pb.AuthUserGetRequest{Name: in.string()})
		case 6:
			what = "UserList"
			_, err = ac.UserList(ctx, &pb.AuthUserListRequest{})
		case 7:
			what = "UserDelete"
			_, err = ac.UserDelete(ctx, &pb.AuthUserDeleteRequest{Name: in.string()})
		case 8:
			what = "UserChangePassword"
			_, err = ac.UserChangePassword(ctx, &pb.AuthUserChangePasswordRequest{Name: in.string(), Password: in.string()})
		case 9:
			what = "UserGrantRole"
			_, err = ac.UserGrantRole(ctx, &pb.AuthUserGrantRoleRequest{User: in.string(), Role: in.string()})
		case 10:
			what = "UserRevokeRole"
			_, err = ac.UserRevokeRole(ctx, &pb.AuthUserRevokeRoleRequest{Name: in.string(), Role: in.string()})
		case 11:
			what = "RoleAdd"
			_, err = ac.RoleAdd(ctx, &pb.AuthRoleAddRequest{Name: in.string()})
		case 12:
			what = "RoleGet"
			_, err = ac.RoleGet(ctx, &pb.AuthRoleGetRequest{Role: in.string()})
		case 13:
			what = "RoleList"
			_, err = ac.RoleList(ctx, &pb.AuthRoleListRequest{})
		case 14:
			what = "RoleDelete"
			_, err = ac.RoleDelete(ctx, &pb.AuthRoleDeleteRequest{Role: in.string()})
		case 15:
			what = "RoleGrantPermission"
			key := in.bytes()
			_, err = ac.RoleGrantPermission(ctx, &pb.AuthRoleGrantPermissionRequest{Name: in.string(),
				Perm: &authpb.Permission{PermType: authpb.Permission_Type(in.int32()), Key: key, RangeEnd: in.rangeEnd(key)}})
		case 16:
			what = "RoleRevokePermission"
			key := in.bytes()
			_, err = ac.RoleRevokePermission(ctx, &pb.AuthRoleRevokePermissionRequest{Role: in.string(), Key: key, RangeEnd: in.rangeEnd(key)})
		}
		cancel()
		answered(t, what, err)
	}
}

// FuzzAuth feeds the Auth service: users, roles, permissions, enabling and
// authenticating, with garbage names.
func FuzzAuth(f *testing.F) {
	fm := newFuzzMember(f, "etcdserverpb.Auth")
	f.Add([]byte{0, 4, 0x0a, 0x01, 'u'})
	f.Add([]byte{1, 4, 1, 1, 0, 5, 1, 8, 1})             // add user "a" of password "a", get it, list users
	f.Add([]byte{1, 4, 7, 7, 0, 9, 7, 7, 0, 3, 7, 7})    // add root, grant it root, enable, authenticate as root
	f.Add([]byte{1, 11, 8, 4, 8, 8, 0, 15, 8, 69, 1, 1}) // a role, a user of an empty name, a permission of a type out of the enum
	f.Add([]byte{1, 4, 10, 10, 0})                       // a user whose name and password are about 1.5 MiB
	f.Fuzz(func(t *testing.T, data []byte) { fm.fuzz(t, data, fm.genAuth) })
}

// ---- Election and Lock

// contendersBlock tells whether a contender for name with lease (0: a new
// one) would wait for another: a key of another lease under the name.
func (fm *fuzzMember) contendersBlock(t *testing.T, name []byte, lease int64) bool {
	c := contendersOf(name)
	resp, err := fm.s.Store().Range(&pb.RangeRequest{Key: c.prefix, RangeEnd: c.end, KeysOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if lease == 0 || !bytes.Equal(kv.Key, c.key(lease)) {
			return true
		}
	}
	return false
}

// waitCall runs call, which may wait by design when mayWait: it then gets
// fuzzWaitBound, else the fuzzBound to answer.
func waitCall(t *testing.T, what string, mayWait bool, call func(context.Context) error) error {
	bound := fuzzBound
	if mayWait {
		bound = fuzzWaitBound
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	err := call(ctx)
	if !mayWait {
		answered(t, what, err)
	}
	return err
}

func (in *fuzzInput) leaderKey(held []*electionpb.LeaderKey) *electionpb.LeaderKey {
	if len(held) > 0 && in.flag() {
		return held[in.n(len(held))]
	}
	return &electionpb.LeaderKey{Name: in.bytes(), Key: in.bytes(), Rev: in.int64(), Lease: in.int64()}
}

// lease is a lease for a contender: none (the member grants one), one
// granted for the input, or any.
func (fm *fuzzMember) lease(t *testing.T, in *fuzzInput) int64 {
	switch in.n(3) {
	case 0:
		return 0
	case 1:
		ctx, cancel := bounded()
		defer cancel()
		resp, err := pb.NewLeaseClient(fm.conn).LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: 60})
		if err != nil {
			t.Fatalf("LeaseGrant: %v", err)
		}
		return resp.ID
	}
	return in.int64()
}

func (fm *fuzzMember) genElection(t *testing.T, in *fuzzInput) {
	ec := electionpb.NewElectionClient(fm.conn)
	var held []*electionpb.LeaderKey
	for in.more() {
		switch in.n(5) {
		case 0:
			name, lease, value := in.bytes(), fm.lease(t, in), in.bytes()
			waitCall(t, "Campaign", fm.contendersBlock(t, name, lease), func(ctx context.Context) error {
				resp, err := ec.Campaign(ctx, &electionpb.CampaignRequest{Name: name, Lease: lease, Value: value})
				if err == nil {
					held = append(held, resp.Leader)
				}
				return err
			})
		case 1:
			leader, value := in.leaderKey(held), in.bytes()
			waitCall(t, "Proclaim", false, func(ctx context.Context) error {
				_, err := ec.Proclaim(ctx, &electionpb.ProclaimRequest{Leader: leader, Value: value})
				return err
			})
		case 2:
			name := in.bytes()
			waitCall(t, "Leader", false, func(ctx context.Context) error {
				_, err := ec.Leader(ctx, &electionpb.LeaderRequest{Name: name})
				return err
			})
		case 3:
			leader := in.leaderKey(held)
			waitCall(t, "Resign", false, func(ctx context.Context) error {
				_, err := ec.Resign(ctx, &electionpb.ResignRequest{Leader: leader})
				return err
			})
		case 4:
			// An Observe answers at once with the leader if there is one.
			name := in.bytes()
			waitCall(t, "Observe", !fm.contendersBlock(t, name, 0), func(ctx context.Context) error {
				s, err := ec.Observe(ctx, &electionpb.LeaderRequest{Name: name})
				if err == nil {
					_, err = s.Recv()
				}
				return err
			})
		}
	}
}

// FuzzElection feeds the Election service: campaigns, proclamations,
// resignations and observations, with bogus leases and leader keys.
func FuzzElection(f *testing.F) {
	fm := newFuzzMember(f, "v3electionpb.Election")
	f.Add([]byte{0, 0, 0x0a, 0x01, 'e'})
	f.Add([]byte{1, 0, 1, 1, 2, 1, 1, 1, 3, 1, 0}) // campaign, proclaim, resign
	f.Add([]byte{1, 0, 1, 0, 0, 0, 1, 1, 0})       // campaign twice for "a", the second waits
	f.Add([]byte{1, 0, 1, 2, 69, 0})               // campaign on lease max int64
	f.Add([]byte{1, 4, 1, 0, 1, 1, 0, 4, 1})       // observe with no leader, with one
	f.Add([]byte{1, 3, 0, 1, 2, 69, 65})           // resign a leader key of garbage
	f.Fuzz(func(t *testing.T, data []byte) { fm.fuzz(t, data, fm.genElection) })
}

func (fm *fuzzMember) genLock(t *testing.T, in *fuzzInput) {
	lc := lockpb.NewLockClient(fm.conn)
	var held [][]byte
	for in.more() {
		switch in.n(2) {
		case 0:
			name, lease := in.bytes(), fm.lease(t, in)
			waitCall(t, "Lock", fm.contendersBlock(t, name, lease), func(ctx context.Context) error {
				resp, err := lc.Lock(ctx, &lockpb.LockRequest{Name: name, Lease: lease})
				if err == nil {
					held = append(held, resp.Key)
				}
				return err
			})
		case 1:
			key := in.bytes()
			if len(held) > 0 && in.flag() {
				key = held[in.n(len(held))]
			}
			waitCall(t, "Unlock", false, func(ctx context.Context) error {
				_, err := lc.Unlock(ctx, &lockpb.UnlockRequest{Key: key})
				return err
			})
		}
	}
}

// FuzzLock feeds the Lock service: locks and unlocks, with bogus leases and keys.
func FuzzLock(f *testing.F) {
	fm := newFuzzMember(f, "v3lockpb.Lock")
	f.Add([]byte{0, 0, 0x0a, 0x01, 'l'})
	f.Add([]byte{1, 0, 1, 1, 1, 1, 0})     // lock "a", unlock it
	f.Add([]byte{1, 0, 1, 0, 0, 1, 0})     // lock "a" twice, the second waits
	f.Add([]byte{1, 0, 0, 2, 69, 1, 0, 4}) // lock "" on lease max int64, unlock "\x00"
	f.Fuzz(func(t *testing.T, data []byte) { fm.fuzz(t, data, fm.genLock) })
}
