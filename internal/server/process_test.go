package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/internal/testnet"
)

// startLeaderless starts m1 of a two-member cluster whose m2 never runs:
// m1 can never win an election, so it never has a leader.
func startLeaderless(t *testing.T) (s *Server, peerID uint64) {
	t.Helper()
	initial := "m1=" + testnet.FreeURL(t) + ",m2=" + testnet.FreeURL(t)
	s, err := Start(memberconfig.Config{Name: "m1", DataDir: t.TempDir(), ListenPeerURLs: []string{strings.TrimPrefix(strings.Split(initial, ",")[0], "m1=")},
		InitialCluster: initial, HeartbeatInterval: 10 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	for _, m := range s.Members() {
		if m.ID != s.ID() {
			peerID = m.ID
		}
	}
	return s, peerID
}

// TestForwardedProposalNeverBlocksThePeerStream: a proposal a peer forwards
// while this member has no leader used to block Process (and so the reader
// of that peer's stream) for good; raft takes no proposal then.
func TestForwardedProposalNeverBlocksThePeerStream(t *testing.T) {
	s, peer := startLeaderless(t)
	prop := &raftpb.Message{Type: raftpb.MessageType_MsgProp.Enum(), From: proto.Uint64(peer), To: proto.Uint64(s.ID()),
		Entries: []*raftpb.Entry{{Data: []byte("forwarded")}}}
	// A heartbeat of the peer's at term 0 is stale: raft reads and ignores it.
	stale := &raftpb.Message{Type: raftpb.MessageType_MsgHeartbeat.Enum(), From: proto.Uint64(peer), To: proto.Uint64(s.ID())}
	done := make(chan error, 1)
	go func() {
		for range 100 {
			if err := s.Process(context.Background(), prop); err != nil {
				done <- err
				return
			}
		}
		done <- s.Process(context.Background(), stale)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Process blocked on a proposal forwarded while the member has no leader")
	}
}

// TestLeaderlessMemberFailsAtOnce: a member without a leader refuses a
// write or a linearizable read at once with ErrNoLeader (not proposed, so a
// client may send it elsewhere) rather than when the request times out.
func TestLeaderlessMemberFailsAtOnce(t *testing.T) {
	s, _ := startLeaderless(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := s.Propose(ctx, &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("k")}}); err != ErrNoLeader {
		t.Errorf("propose: %v, want %v", err, ErrNoLeader)
	}
	if err := s.LinearizableReadNotify(ctx); err != ErrNoLeader {
		t.Errorf("linearizable read: %v, want %v", err, ErrNoLeader)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("refusing took %v", took)
	}
}

// startCluster starts n members in this process with fast elections and
// waits until every one of them is ready.
func startCluster(t *testing.T, n int) []*Server {
	t.Helper()
	var initial, purls []string
	for i := 1; i <= n; i++ {
		purls = append(purls, testnet.FreeURL(t))
		initial = append(initial, fmt.Sprintf("m%d=%s", i, purls[i-1]))
	}
	var ss []*Server
	for i := range n {
		s, err := Start(memberconfig.Config{Name: fmt.Sprintf("m%d", i+1), DataDir: t.TempDir(), ListenPeerURLs: []string{purls[i]},
			InitialCluster: strings.Join(initial, ","), HeartbeatInterval: 20 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
		ss = append(ss, s)
	}
	for _, s := range ss {
		select {
		case <-s.Ready():
		case <-time.After(20 * time.Second):
			t.Fatal("a member was not ready within 20 s")
		}
	}
	return ss
}

// TestProposalTakenThenLeaderLostIsATimeout: a proposal raft took may still
// commit, so when it is not applied in time the answer is a timeout (outcome
// unknown), never ErrNoLeader (which says: not proposed, send it elsewhere),
// even if the member has lost its leader by then.
func TestProposalTakenThenLeaderLostIsATimeout(t *testing.T) {
	ss := startCluster(t, 3)
	ss[1].Stop()
	ss[2].Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := ss[0].Propose(ctx, &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("k")}})
	if ss[0].Leader() != 0 {
		t.Fatalf("the survivor still has leader %x", ss[0].Leader())
	}
	if err != ErrTimeout {
		t.Errorf("propose: %v, want %v", err, ErrTimeout)
	}
}
