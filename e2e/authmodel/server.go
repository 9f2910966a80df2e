package authmodel

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/internal/testnet"
)

// server is one single-member cluster under test, spoken to over raw gRPC
// so that every token, good, stale or forged, goes out as the test says.
type server struct {
	kind     string // "cairn" or "etcd"
	conn     *grpc.ClientConn
	kv       pb.KVClient
	watch    pb.WatchClient
	lease    pb.LeaseClient
	maint    pb.MaintenanceClient
	cluster  pb.ClusterClient
	auth     pb.AuthClient
	tokens   map[string]string // the last token each user was given
	memberID uint64
	peerURLs []string
}

// startServer starts bin (etcd, or cairn under the name etcd, which makes
// it take etcd's command line) as a fresh single member with auth enabled
// and root logged in; it is killed at the end of the test.
func startServer(t *testing.T, kind, bin string) *server {
	t.Helper()
	curl, purl := testnet.FreeURL(t), testnet.FreeURL(t)
	etcdref.Run(t, bin, "m1", filepath.Join(t.TempDir(), "data"), curl, purl, "--unsafe-no-fsync", "--bcrypt-cost", "4")
	conn, err := grpc.NewClient(curl[len("http://"):], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	s := &server{kind: kind, conn: conn, kv: pb.NewKVClient(conn), watch: pb.NewWatchClient(conn),
		lease: pb.NewLeaseClient(conn), maint: pb.NewMaintenanceClient(conn), cluster: pb.NewClusterClient(conn),
		auth: pb.NewAuthClient(conn), tokens: map[string]string{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	steps := []func() error{
		func() error {
			_, err := s.auth.UserAdd(ctx, &pb.AuthUserAddRequest{Name: rootUser, Password: rootUser})
			return err
		},
		func() error { _, err := s.auth.RoleAdd(ctx, &pb.AuthRoleAddRequest{Name: rootRole}); return err },
		func() error {
			_, err := s.auth.UserGrantRole(ctx, &pb.AuthUserGrantRoleRequest{User: rootUser, Role: rootRole})
			return err
		},
		func() error {
			ml, err := s.cluster.MemberList(ctx, &pb.MemberListRequest{})
			if err == nil {
				s.memberID, s.peerURLs = ml.Members[0].ID, ml.Members[0].PeerURLs
			}
			return err
		},
		func() error { _, err := s.auth.AuthEnable(ctx, &pb.AuthEnableRequest{}); return err },
		func() error {
			r, err := s.auth.Authenticate(ctx, &pb.AuthenticateRequest{Name: rootUser, Password: rootUser})
			if err == nil {
				s.tokens[rootUser] = r.Token
			}
			return err
		},
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("%s: setting up auth, step %d: %v", kind, i, err)
		}
	}
	return s
}

// ctx carries who's token: none for the anonymous client, a forged one for
// badToken, and for a user the last one it was given (a user never logged
// in sends a forged one).
func (s *server) ctx(parent context.Context, who string) context.Context {
	switch tok, ok := s.tokens[who]; {
	case who == anonymous:
		return parent
	case ok:
		return metadata.AppendToOutgoingContext(parent, "token", tok)
	}
	return metadata.AppendToOutgoingContext(parent, "token", "forged.17")
}

// watchResult is what a watch delivered: the first answer, then the events.
type watchResult struct {
	created, canceled bool
	reason            string
	compactRev        int64
	events            []*mvccpb.Event
}

// do sends req as who and returns the answer. A watch waits for want
// events, then a short while for any more.
func (s *server) do(who string, req any, want int) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = s.ctx(ctx, who)
	switch r := req.(type) {
	case *pb.RangeRequest:
		return s.kv.Range(ctx, r)
	case *pb.PutRequest:
		return s.kv.Put(ctx, r)
	case *pb.DeleteRangeRequest:
		return s.kv.DeleteRange(ctx, r)
	case *pb.TxnRequest:
		return s.kv.Txn(ctx, r)
	case *pb.CompactionRequest:
		return s.kv.Compact(ctx, r)
	case *pb.WatchCreateRequest:
		return s.watchOnce(ctx, r, want)
	case *pb.LeaseGrantRequest:
		return s.lease.LeaseGrant(ctx, r)
	case *pb.LeaseRevokeRequest:
		return s.lease.LeaseRevoke(ctx, r)
	case *pb.LeaseKeepAliveRequest:
		st, err := s.lease.LeaseKeepAlive(ctx)
		if err != nil {
			return nil, err
		}
		if err := st.Send(r); err != nil {
			return nil, err
		}
		return st.Recv()
	case *pb.LeaseTimeToLiveRequest:
		return s.lease.LeaseTimeToLive(ctx, r)
	case *pb.LeaseLeasesRequest:
		return s.lease.LeaseLeases(ctx, r)
	case *pb.StatusRequest:
		return s.maint.Status(ctx, r)
	case *pb.AlarmRequest:
		return s.maint.Alarm(ctx, r)
	case *pb.HashKVRequest:
		return s.maint.HashKV(ctx, r)
	case *pb.HashRequest:
		return s.maint.Hash(ctx, r)
	case *pb.DefragmentRequest:
		return s.maint.Defragment(ctx, r)
	case *pb.SnapshotRequest:
		st, err := s.maint.Snapshot(ctx, r)
		if err != nil {
			return nil, err
		}
		return st.Recv() // the first chunk says whether it is allowed
	case *pb.MoveLeaderRequest:
		return s.maint.MoveLeader(ctx, r)
	case *pb.MemberListRequest:
		return s.cluster.MemberList(ctx, r)
	case *pb.MemberUpdateRequest:
		return s.cluster.MemberUpdate(ctx, r)
	case *pb.MemberPromoteRequest:
		return s.cluster.MemberPromote(ctx, r)
	case *pb.AuthStatusRequest:
		return s.auth.AuthStatus(ctx, r)
	case *pb.AuthenticateRequest:
		resp, err := s.auth.Authenticate(ctx, r)
		if err == nil {
			s.tokens[r.Name] = resp.Token
		}
		return resp, err
	case *pb.AuthUserAddRequest:
		return s.auth.UserAdd(ctx, r)
	case *pb.AuthUserDeleteRequest:
		return s.auth.UserDelete(ctx, r)
	case *pb.AuthUserGetRequest:
		return s.auth.UserGet(ctx, r)
	case *pb.AuthUserListRequest:
		return s.auth.UserList(ctx, r)
	case *pb.AuthUserChangePasswordRequest:
		return s.auth.UserChangePassword(ctx, r)
	case *pb.AuthUserGrantRoleRequest:
		return s.auth.UserGrantRole(ctx, r)
	case *pb.AuthUserRevokeRoleRequest:
		return s.auth.UserRevokeRole(ctx, r)
	case *pb.AuthRoleAddRequest:
		return s.auth.RoleAdd(ctx, r)
	case *pb.AuthRoleDeleteRequest:
		return s.auth.RoleDelete(ctx, r)
	case *pb.AuthRoleGetRequest:
		return s.auth.RoleGet(ctx, r)
	case *pb.AuthRoleListRequest:
		return s.auth.RoleList(ctx, r)
	case *pb.AuthRoleGrantPermissionRequest:
		return s.auth.RoleGrantPermission(ctx, r)
	case *pb.AuthRoleRevokePermissionRequest:
		return s.auth.RoleRevokePermission(ctx, r)
	}
	panic(fmt.Sprintf("no call for %T", req))
}

// extraWait is how long a watch listens, after the events it must deliver,
// for events it must not. A watch from a past revision sends its history in
// one go, so the wait is short.
const extraWait = 15 * time.Millisecond

func (s *server) watchOnce(ctx context.Context, r *pb.WatchCreateRequest, want int) (*watchResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := s.watch.Watch(ctx)
	if err != nil {
		return nil, err
	}
	if err := st.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: r}}); err != nil {
		return nil, err
	}
	res := &watchResult{}
	type recv struct {
		resp *pb.WatchResponse
		err  error
	}
	ch := make(chan recv, 1)
	go func() {
		for {
			resp, err := st.Recv()
			select {
			case ch <- recv{resp, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var timer <-chan time.Time
	for {
		if len(res.events) >= want && timer == nil && res.created {
			timer = time.After(extraWait)
		}
		select {
		case <-timer:
			return res, nil
		case <-ctx.Done():
			return res, nil // the caller sees the events missing
		case x := <-ch:
			if x.err != nil {
				return res, x.err
			}
			if x.resp.Created {
				res.created = true
			}
			if x.resp.Canceled {
				res.canceled, res.reason, res.compactRev = true, x.resp.CancelReason, x.resp.CompactRevision
				return res, nil
			}
			res.events = append(res.events, x.resp.Events...)
		}
	}
}

// liveWatch is a watch held open through the run: whatever it delivers is
// checked against the permissions in force when each event happened.
type liveWatch struct {
	who      string
	key, end string
	cancel   context.CancelFunc

	mu       sync.Mutex
	events   []*mvccpb.Event
	checked  int // events already checked
	canceled string
	err      error
}

// openLive creates a watch from the current revision on; created tells
// whether the server accepted it (else reason says why).
func (s *server) openLive(who, key, end string) (*liveWatch, bool, string, error) {
	ctx, cancel := context.WithCancel(context.Background())
	st, err := s.watch.Watch(s.ctx(ctx, who))
	if err != nil {
		cancel()
		return nil, false, "", err
	}
	lw := &liveWatch{who: who, key: key, end: end, cancel: cancel}
	if err := st.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: &pb.WatchCreateRequest{
		Key: []byte(key), RangeEnd: []byte(end), PrevKv: true}}}); err != nil {
		cancel()
		return nil, false, "", err
	}
	first, err := st.Recv()
	if err != nil {
		cancel()
		return nil, false, "", err
	}
	if first.Canceled || !first.Created {
		cancel()
		return nil, false, first.CancelReason, nil
	}
	go func() {
		for {
			resp, err := st.Recv()
			lw.mu.Lock()
			if err != nil {
				if ctx.Err() == nil {
					lw.err = err
				}
				lw.mu.Unlock()
				return
			}
			if resp.Canceled {
				lw.canceled = resp.CancelReason
			}
			lw.events = append(lw.events, resp.Events...)
			lw.mu.Unlock()
		}
	}()
	return lw, true, "", nil
}

// fresh returns the events delivered since the last call.
func (lw *liveWatch) fresh() []*mvccpb.Event {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	evs := lw.events[lw.checked:]
	lw.checked = len(lw.events)
	return evs
}
