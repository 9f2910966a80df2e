package api

// The harness of the fuzz targets of fuzz_services_test.go: each target
// feeds one gRPC service of a live member, started once in the test's
// process, with what a broken or hostile client may send. Every request of
// an input must be answered within fuzzBound (a panic in the member fails
// the target, as it runs in the same process), and after every input the
// member must still take a put and answer a read of it.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/auth"
	"github.com/cairnkv/cairn/internal/memberconfig"
)

var (
	// fuzzBound is how long the member may take to answer a request:
	// 500 ms, or CAIRN_FUZZ_BOUND on a machine so loaded that a request of
	// 3 MiB takes longer on the loopback.
	fuzzBound = fuzzSlowdown * envDuration("CAIRN_FUZZ_BOUND", 500*time.Millisecond)
	// fuzzWaitBound is how long an input waits for a call that may wait by
	// design: a Campaign or Lock behind another holder, an Observe of a
	// name with no leader, a raw stream the client leaves open.
	fuzzWaitBound = fuzzBound / 10
)

const (
	// fuzzCompactEvery: every so many inputs the member's history is
	// compacted, so that a long run's database stays small.
	fuzzCompactEvery = 256
	// fuzzMarkerID is the watch ID and lease ID of the request a raw watch
	// or keepalive stream ends with, whose answer shows that the member
	// read the stream's other messages.
	fuzzMarkerID = math.MaxInt64 - 7
)

// envDuration is the duration in the environment variable name, or def.
func envDuration(name string, def time.Duration) time.Duration {
	d, err := time.ParseDuration(os.Getenv(name))
	if err != nil {
		return def
	}
	return d
}

// fuzzSentinel is the key the member must still write and read after an input.
var fuzzSentinel = []byte("\xff\xfffuzz-sentinel")

// rawCodec sends a request's bytes as they are and hands back the bytes of
// the answer: the client of a broken encoder.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = bytes.Clone(data)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// fuzzMayWait are the methods that wait by design: a Campaign or Lock waits
// for the holders before it, an Observe for a leader and then for ever.
var fuzzMayWait = map[string]bool{
	"/v3electionpb.Election/Campaign": true,
	"/v3electionpb.Election/Observe":  true,
	"/v3lockpb.Lock/Lock":             true,
}

// fuzzMember is the member a fuzz target feeds and the service it feeds.
type fuzzMember struct {
	*inProcessMember
	conn    *grpc.ClientConn
	service string
	methods []grpc.MethodInfo
	inputs  int
}

// newFuzzMember starts a member for the fuzz target f, which feeds service.
func newFuzzMember(f *testing.F, service string) *fuzzMember {
	f.Helper()
	// bcrypt's least cost: a password's hash at etcd's default cost
	// takes a good part of the bound on a loaded machine.
	m := startInProcess(f, 1, func(c *memberconfig.Config) { c.BcryptCost = bcrypt.MinCost })[0]
	info, ok := m.a.grpc.GetServiceInfo()[service]
	if !ok {
		f.Fatalf("the member serves no %s", service)
	}
	// Answers may be larger than gRPC's default 4 MiB (ranges of 1.5 MiB values).
	conn, err := grpc.NewClient(strings.TrimPrefix(m.curl, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32)))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { conn.Close() })
	// In a fixed order, so that an input picks the same method every run
	// (gRPC lists them from a map).
	methods := slices.SortedFunc(slices.Values(info.Methods), func(a, b grpc.MethodInfo) int { return strings.Compare(a.Name, b.Name) })
	return &fuzzMember{inProcessMember: m, conn: conn, service: service, methods: methods}
}

// fuzz runs the input data: bytes sent as they are to a method (an even
// first byte) or messages built from the bytes by gen (an odd one); then it
// checks that the member still serves.
func (fm *fuzzMember) fuzz(t *testing.T, data []byte, gen func(*testing.T, *fuzzInput)) {
	if len(data) > 0 && data[0]%2 == 1 {
		gen(t, &fuzzInput{b: data[1:]})
	} else if len(data) > 1 {
		fm.raw(t, data[1], data[2:])
	}
	fm.stillServes(t)
}

// answered fails t if err is a deadline the member let pass.
func answered(t *testing.T, what string, err error) {
	t.Helper()
	if status.Code(err) == codes.DeadlineExceeded {
		t.Fatalf("%s: no answer within %v: %v", what, fuzzBound, err)
	}
}

// bounded is a context of fuzzBound for one request.
func bounded() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), fuzzBound)
}

// raw sends data to the method sel picks, as the bytes of its request; a
// streaming request's data is cut into messages (splitMessages).
func (fm *fuzzMember) raw(t *testing.T, sel byte, data []byte) {
	m := fm.methods[int(sel)%len(fm.methods)]
	name := "/" + fm.service + "/" + m.Name
	bound := fuzzBound
	if fuzzMayWait[name] {
		bound = fuzzWaitBound
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	check := func(err error) {
		if !fuzzMayWait[name] {
			answered(t, name, err)
		}
	}
	if name == "/etcdserverpb.Cluster/MemberAdd" {
		// A learner, whatever the bytes say (field 2, isLearner, the last
		// one wins): a 1-member cluster takes a second voter, as etcd's
		// does (to restore a cluster from one member's data), and then has
		// no quorum. And one more peer URL (field 1), one of a few: see
		// fuzzPeerURL.
		data = protowire.AppendTag(bytes.Clone(data), 1, protowire.BytesType)
		data = protowire.AppendString(data, fuzzPeerURL())
		data = protowire.AppendTag(data, 2, protowire.VarintType)
		data = protowire.AppendVarint(data, 1)
	}
	opt := grpc.ForceCodec(rawCodec{})
	if !m.IsClientStream && !m.IsServerStream {
		var out []byte
		check(fm.conn.Invoke(ctx, name, &data, &out, opt))
		return
	}
	stream, err := fm.conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: m.IsServerStream, ClientStreams: m.IsClientStream}, name, opt)
	if err != nil {
		check(err)
		return
	}
	msgs := [][]byte{data}
	if m.IsClientStream {
		msgs = splitMessages(data)
	}
	// The two bidirectional streams stay open when the client stops
	// sending: they end with a request whose answer shows that the member
	// read the others.
	var marker proto.Message
	isMarker := func([]byte) bool { return false }
	switch name {
	case "/etcdserverpb.Watch/Watch":
		marker = &pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: &pb.WatchCreateRequest{Key: fuzzSentinel, WatchId: fuzzMarkerID}}}
		isMarker = func(b []byte) bool {
			var r pb.WatchResponse
			return proto.Unmarshal(b, &r) == nil && r.WatchId == fuzzMarkerID && r.Created
		}
	case "/etcdserverpb.Lease/LeaseKeepAlive":
		marker = &pb.LeaseKeepAliveRequest{ID: fuzzMarkerID}
		isMarker = func(b []byte) bool {
			var r pb.LeaseKeepAliveResponse
			return proto.Unmarshal(b, &r) == nil && r.ID == fuzzMarkerID
		}
	}
	if marker != nil {
		b, err := proto.Marshal(marker)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, b)
	}
	for _, msg := range msgs {
		if stream.SendMsg(&msg) != nil {
			break // the member ended the stream: RecvMsg says why
		}
	}
	if marker == nil {
		stream.CloseSend()
	}
	for {
		var out []byte
		err := stream.RecvMsg(&out)
		if errors.Is(err, io.EOF) || err == nil && isMarker(out) {
			return
		}
		if err != nil {
			check(err)
			return
		}
	}
}

// fuzzPeerURLs counts the peer URLs fuzzPeerURL gave.
var fuzzPeerURLs atomic.Int64

// fuzzPeerURL is one of a few peer URLs for a member to add, in turn: an
// add meets a member of the same URLs, or the ID of one removed a moment
// before (an ID is a hash of the peer URLs and the second of the add, and
// the members an input added are removed after it).
func fuzzPeerURL() string {
	return "http://127.0.0.1:" + strconv.FormatInt(1+fuzzPeerURLs.Add(1)%3, 10)
}

// splitMessages cuts data into messages: a length byte, then that many
// bytes (or what is left).
func splitMessages(data []byte) [][]byte {
	var msgs [][]byte
	for len(data) > 0 {
		n := min(int(data[0]), len(data)-1)
		msgs = append(msgs, data[1:1+n])
		data = data[1+n:]
	}
	return msgs
}

// stillServes puts back what an input may have changed that stops a put
// from a client without credentials (auth enabled, an alarm raised, a
// downgrade) or that would carry over into the next input (leases, members
// added), then checks that the member takes a put and reads it back within
// the bound.
func (fm *fuzzMember) stillServes(t *testing.T) {
	t.Helper()
	fm.inputs++
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fm.restore(ctx); err != nil {
		t.Fatalf("putting the member back after the input: %v", err)
	}
	kv := pb.NewKVClient(fm.conn)
	bctx, bcancel := bounded()
	defer bcancel()
	val := strconv.AppendInt(nil, int64(fm.inputs), 10)
	if _, err := kv.Put(bctx, &pb.PutRequest{Key: fuzzSentinel, Value: val}); err != nil {
		t.Fatalf("the member takes no put after the input: %v", err)
	}
	resp, err := kv.Range(bctx, &pb.RangeRequest{Key: fuzzSentinel})
	if err != nil {
		t.Fatalf("the member answers no range after the input: %v", err)
	}
	if len(resp.Kvs) != 1 || !bytes.Equal(resp.Kvs[0].Value, val) {
		t.Fatalf("the member reads %v for the value %q just put", resp.Kvs, val)
	}
	if fm.inputs%fuzzCompactEvery == 0 {
		if _, err := kv.Compact(ctx, &pb.CompactionRequest{Revision: resp.Header.Revision}); err != nil {
			t.Fatalf("compacting after the input: %v", err)
		}
	}
}

func (fm *fuzzMember) restore(ctx context.Context) error {
	s := fm.s
	if s.AuthStore().Enabled() {
		// As root, the only user auth can be enabled with.
		if _, err := s.Propose(auth.WithInfo(ctx, s.AuthStore().RootInfo()), &pb.InternalRaftRequest{AuthDisable: &pb.AuthDisableRequest{}}); err != nil {
			return err
		}
	}
	mc := pb.NewMaintenanceClient(fm.conn)
	for _, a := range s.Alarms() {
		if _, err := mc.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_DEACTIVATE, MemberID: a.MemberID, Alarm: a.Alarm}); err != nil {
			return err
		}
	}
	if s.DowngradeInfo().Enabled {
		if _, err := mc.Downgrade(ctx, &pb.DowngradeRequest{Action: pb.DowngradeRequest_CANCEL}); err != nil {
			return err
		}
	}
	lc := pb.NewLeaseClient(fm.conn)
	leases, err := lc.LeaseLeases(ctx, &pb.LeaseLeasesRequest{})
	if err != nil {
		return err
	}
	for _, l := range leases.Leases {
		// (a lease of a short TTL may expire in between)
		if _, err := lc.LeaseRevoke(ctx, &pb.LeaseRevokeRequest{ID: l.ID}); err != nil && rpctypes.Error(err) != rpctypes.ErrLeaseNotFound {
			return err
		}
	}
	cc := pb.NewClusterClient(fm.conn)
	for _, m := range s.Members() {
		if m.ID != s.ID() {
			if _, err := cc.MemberRemove(ctx, &pb.MemberRemoveRequest{ID: m.ID}); err != nil {
				return err
			}
		}
	}
	return nil
}
