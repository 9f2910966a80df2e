package api

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/memberconfig"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestWatchEndsWhenReadIsRevoked: alice watches /a/k and /b/k; root takes
// her read of /a/k away (four ways), then writes both keys. Her watcher of
// /a/k is cancelled with "etcdserver: permission denied" and never gets
// the write after the revocation; her watcher of /b/k, still permitted,
// gets its write (or, with alice deleted, is cancelled too). etcd keeps
// such a watcher going.
func TestWatchEndsWhenReadIsRevoked(t *testing.T) {
	revocations := map[string]func(context.Context, *clientv3.Client) error{
		"permission revoked": func(ctx context.Context, root *clientv3.Client) error {
			_, err := root.RoleRevokePermission(ctx, "ra", "/a/k", "")
			return err
		},
		"role revoked": func(ctx context.Context, root *clientv3.Client) error {
			_, err := root.UserRevokeRole(ctx, "alice", "ra")
			return err
		},
		"role deleted": func(ctx context.Context, root *clientv3.Client) error {
			_, err := root.RoleDelete(ctx, "ra")
			return err
		},
		"user deleted": func(ctx context.Context, root *clientv3.Client) error {
			_, err := root.UserDelete(ctx, "alice")
			return err
		},
	}
	for name, revoke := range revocations {
		t.Run(name, func(t *testing.T) { watchEndsWhenReadIsRevoked(t, revoke, name == "user deleted") })
	}
}

func watchEndsWhenReadIsRevoked(t *testing.T, revoke func(context.Context, *clientv3.Client) error, bothEnd bool) {
	m := newMember(t, memberconfig.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	anon := m.client("", "")
	for _, step := range []func() error{
		func() error { _, err := anon.UserAdd(ctx, "root", "rootpw"); return err },
		func() error { _, err := anon.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := anon.UserAdd(ctx, "alice", "alicepw"); return err },
		func() error {
			_, err := anon.RoleAdd(ctx, "ra")
			return err
		},
		func() error {
			_, err := anon.RoleGrantPermission(ctx, "ra", "/a/k", "", clientv3.PermissionType(clientv3.PermRead))
			return err
		},
		func() error { _, err := anon.RoleAdd(ctx, "rb"); return err },
		func() error {
			_, err := anon.RoleGrantPermission(ctx, "rb", "/b/k", "", clientv3.PermissionType(clientv3.PermRead))
			return err
		},
		func() error { _, err := anon.UserGrantRole(ctx, "alice", "ra"); return err },
		func() error { _, err := anon.UserGrantRole(ctx, "alice", "rb"); return err },
		func() error { _, err := anon.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	root := m.client("root", "rootpw")

	conn := m.conn()
	auth, err := pb.NewAuthClient(conn).Authenticate(ctx, &pb.AuthenticateRequest{Name: "alice", Password: "alicepw"})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := pb.NewWatchClient(conn).Watch(metadata.AppendToOutgoingContext(ctx, rpctypes.TokenFieldNameGRPC, auth.Token))
	if err != nil {
		t.Fatal(err)
	}
	for i, key := range []string{"/a/k", "/b/k"} {
		if err := stream.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: &pb.WatchCreateRequest{Key: []byte(key), WatchId: int64(i + 1)}}}); err != nil {
			t.Fatal(err)
		}
		if resp, err := stream.Recv(); err != nil || !resp.Created || resp.Canceled {
			t.Fatalf("alice watches %s: %v %v", key, resp, err)
		}
	}

	if err := revoke(ctx, root); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"/a/k", "/b/k"} {
		if _, err := root.Put(ctx, key, "after"); err != nil {
			t.Fatal(err)
		}
	}
	denied := status.Convert(rpctypes.ErrGRPCPermissionDenied).Message()
	var got []string
	ended := map[int64]bool{}
	gotB := false
	for !ended[1] || !(ended[2] || !bothEnd && gotB) {
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		for _, ev := range resp.Events {
			got = append(got, fmt.Sprintf("%d: %s %s=%s", resp.WatchId, ev.Type, ev.Kv.Key, ev.Kv.Value))
			gotB = gotB || resp.WatchId == 2
		}
		if resp.Canceled {
			if resp.CancelReason != denied {
				t.Errorf("watcher %d cancelled for %q, want %q", resp.WatchId, resp.CancelReason, denied)
			}
			ended[resp.WatchId] = true
			got = append(got, fmt.Sprintf("%d: cancelled", resp.WatchId))
		}
	}
	want := "[1: cancelled 2: PUT /b/k=after]"
	if bothEnd {
		slices.Sort(got) // cancelled together, in no order
		want = "[1: cancelled 2: cancelled]"
	}
	if fmt.Sprint(got) != want {
		t.Errorf("alice's stream: %v, want %s", got, want)
	}
}
