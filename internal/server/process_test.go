package server

import (
	"context"
	"errors"
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
	// Then a heartbeat of the peer's: the stream goes on. At term 0 raft
	// takes it for a message of its own and the peer for its leader, so
	// the held proposals are stepped again, each forwarded to the peer.
	heartbeat := &raftpb.Message{Type: raftpb.MessageType_MsgHeartbeat.Enum(), From: proto.Uint64(peer), To: proto.Uint64(s.ID())}
	done := make(chan error, 1)
	go func() {
		for range 100 {
			// A message of its own each time, as the transport decodes
			// each frame: raft forwards the very message it is given
			// (sharing one, the test raced with the transport's encoding
			// of it).
			if err := s.Process(context.Background(), proto.Clone(prop).(*raftpb.Message)); err != nil {
				done <- err
				return
			}
		}
		done <- s.Process(context.Background(), heartbeat)
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

// TestLeaderlessMemberWaitsForALeader: as etcd's, a member without a
// leader holds a write and a linearizable read until it has one, and they
// go through then: a client does not retry a write, so failing it at once
// turned every election into errors. Until then, one whose client gives up
// fails with the client's deadline, not ErrNoLeader.
func TestLeaderlessMemberWaitsForALeader(t *testing.T) {
	purls := []string{testnet.FreeURL(t), testnet.FreeURL(t)}
	initial := "m1=" + purls[0] + ",m2=" + purls[1]
	start := func(i int) *Server {
		s, err := Start(memberconfig.Config{Name: fmt.Sprintf("m%d", i+1), DataDir: t.TempDir(), ListenPeerURLs: []string{purls[i]},
			InitialCluster: initial, HeartbeatInterval: 10 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
		return s
	}
	s := start(0) // its peer is not there yet: no quorum, no leader

	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := s.Propose(short, &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("k")}}); err == nil || errors.Is(err, ErrNoLeader) {
		t.Errorf("a put whose client gave up before any leader: %v, want its deadline", err)
	}
	if err := s.LinearizableReadNotify(short); err == nil || errors.Is(err, ErrNoLeader) {
		t.Errorf("a linearizable read whose client gave up before any leader: %v, want its deadline", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	put, read := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := s.Propose(ctx, &pb.InternalRaftRequest{Put: &pb.PutRequest{Key: []byte("k"), Value: []byte("v")}})
		put <- err
	}()
	go func() { read <- s.LinearizableReadNotify(ctx) }()
	time.Sleep(200 * time.Millisecond) // both wait, leaderless, meanwhile
	if s.Leader() != 0 {
		t.Fatal("a leader without a quorum")
	}
	start(1)
	for what, ch := range map[string]chan error{"put": put, "linearizable read": read} {
		if err := <-ch; err != nil {
			t.Errorf("the %s held until a leader was elected: %v", what, err)
		}
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
// even if the member has lost its leader by then. The survivor is the
// leader: it takes the proposal and leads on until it sees its quorum gone
// (a follower whose leader stopped would campaign at once, and drop it).
func TestProposalTakenThenLeaderLostIsATimeout(t *testing.T) {
	ss := startCluster(t, 3)
	for i, s := range ss {
		if s.Leader() == s.ID() {
			ss[0], ss[i] = ss[i], ss[0]
		}
	}
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
