package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cairnkv/cairn/internal/client/clienttest"
	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/internal/server"
	"github.com/cairnkv/cairn/internal/testnet"
)

// TestAuthTokenWorksOnEveryMember logs in on one member of three and uses
// the token on the others: every member assigns the token when it applies
// the Authenticate request, and a member that has not applied it yet
// catches up first.
func TestAuthTokenWorksOnEveryMember(t *testing.T) {
	var curls, purls, initial []string
	for i := 1; i <= 3; i++ {
		curls = append(curls, testnet.FreeURL(t))
		purls = append(purls, testnet.FreeURL(t))
		initial = append(initial, fmt.Sprintf("m%d=%s", i, purls[i-1]))
	}
	for i := range 3 {
		s, err := server.Start(memberconfig.Config{Name: fmt.Sprintf("m%d", i+1), DataDir: t.TempDir(), BcryptCost: testBcryptCost, ListenClientURLs: curls[i : i+1],
			ListenPeerURLs: purls[i : i+1], InitialCluster: strings.Join(initial, ",")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
		a := New(s, nil)
		if err := a.Serve(curls[i : i+1]); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(a.Stop)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: curls[:1], DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	setUpAuth(t, ctx, cli)

	conns := make([]*grpc.ClientConn, 3)
	for i, u := range curls {
		if conns[i], err = grpc.NewClient(strings.TrimPrefix(u, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
			t.Fatal(err)
		}
		defer conns[i].Close()
	}
	for i := range 3 {
		r, err := pb.NewAuthClient(conns[i]).Authenticate(ctx, &pb.AuthenticateRequest{Name: "alice", Password: "alicepw"})
		if err != nil {
			t.Fatalf("login on member %d: %v", i+1, err)
		}
		for j := range 3 {
			if err := rawRange(ctx, conns[j], r.Token, "/app/x"); err != nil {
				t.Errorf("token from member %d on member %d: %v", i+1, j+1, err)
			}
		}
	}
}

// TestAuthStateArrivesWithSnapshot: a member that was down while the auth
// state changed, and that catches up from a snapshot (the log it missed
// is compacted), serves the new auth state.
func TestAuthStateArrivesWithSnapshot(t *testing.T) {
	var curls, purls, initial []string
	for i := 1; i <= 3; i++ {
		curls = append(curls, testnet.FreeURL(t))
		purls = append(purls, testnet.FreeURL(t))
		initial = append(initial, fmt.Sprintf("m%d=%s", i, purls[i-1]))
	}
	ms := make([]*member, 3)
	for i := range 3 {
		ms[i] = &member{t: t, curl: curls[i], cfg: memberconfig.Config{Name: fmt.Sprintf("m%d", i+1), DataDir: t.TempDir(), BcryptCost: testBcryptCost,
			ListenClientURLs: curls[i : i+1], ListenPeerURLs: purls[i : i+1], InitialCluster: strings.Join(initial, ","),
			SnapshotCount: 20, SnapshotCatchUpEntries: 5}}
		ms[i].start()
		t.Cleanup(ms[i].stop)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: curls, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(ctx, "warm-up", "x"); err != nil {
		t.Fatal(err)
	}
	// Stop a follower (the test is about it catching up, not failover).
	down := 0
	for down < 2 && ms[down].s.ID() == ms[down].s.Leader() {
		down++
	}
	ms[down].stop()
	// Clients of the members still up: a write sent on a connection to the
	// stopped one fails, and clientv3 does not retry it.
	live := slices.Delete(slices.Clone(curls), down, down+1)
	liveCli, err := clientv3.New(clientv3.Config{Endpoints: live, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer liveCli.Close()
	setUpAuth(t, ctx, liveCli)
	root, err := clientv3.New(clientv3.Config{Endpoints: live, DialTimeout: 5 * time.Second, Username: "root", Password: "rootpw"})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for i := range 60 {
		if _, err := root.Put(ctx, fmt.Sprintf("/app/k%02d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	ms[down].start()
	// Until it hears from the leader, the restarted member answers "no
	// leader"; then it knows alice and her role once it has caught up.
	clienttest.Poll(t, 10*time.Second, "the restarted member to know the leader", func() bool { return ms[down].s.Leader() != 0 })
	alice, err := clientv3.New(clientv3.Config{Endpoints: curls[down : down+1], DialTimeout: 30 * time.Second, Username: "alice", Password: "alicepw"})
	if err != nil {
		t.Fatalf("alice logs in on the member that missed her creation: %v", err)
	}
	defer alice.Close()
	r, err := alice.Get(ctx, "/app/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || r.Count != 61 {
		t.Fatalf("alice counts /app/ on the restarted member: %v %v", r, err)
	}
	if _, err := alice.Get(ctx, "secret"); err == nil {
		t.Error("alice reads secret on the restarted member")
	}
	st, err := alice.AuthStatus(ctx)
	if err != nil || !st.Enabled {
		t.Errorf("auth status on the restarted member: %v %v", st, err)
	}
}
