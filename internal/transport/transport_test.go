package transport

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// recorder is a Raft that records what arrives.
type recorder struct {
	mu          sync.Mutex
	got         []*raftpb.Message
	unreachable int
	arrived     chan struct{}
}

func newRecorder() *recorder { return &recorder{arrived: make(chan struct{}, 100)} }

func (r *recorder) Process(_ context.Context, m *raftpb.Message) error {
	r.mu.Lock()
	r.got = append(r.got, m)
	r.mu.Unlock()
	r.arrived <- struct{}{}
	return nil
}
func (r *recorder) ReceiveSnapshot(ctx context.Context, m *raftpb.Message, db io.Reader) error {
	io.Copy(io.Discard, db)
	return r.Process(ctx, m)
}
func (r *recorder) ReportUnreachable(uint64) {
	r.mu.Lock()
	r.unreachable++
	r.mu.Unlock()
	r.arrived <- struct{}{}
}
func (r *recorder) ReportSnapshot(uint64, bool) {}

func msg(to uint64, typ raftpb.MessageType) *raftpb.Message {
	return &raftpb.Message{To: proto.Uint64(to), From: proto.Uint64(1), Type: typ.Enum(), Term: proto.Uint64(3)}
}

func waitArrival(t *testing.T, r *recorder) {
	t.Helper()
	select {
	case <-r.arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("nothing arrived within 10s")
	}
}

func TestMessagesReachPeer(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	to := newRecorder()
	recv := New(7, 2, to, nil, log)
	srv := httptest.NewServer(recv.Handler())
	defer srv.Close()
	from := newRecorder()
	send := New(7, 1, from, nil, log)
	defer send.Stop()
	send.AddPeer(2, []string{srv.URL})
	send.Send([]*raftpb.Message{msg(2, raftpb.MessageType_MsgHeartbeat), msg(2, raftpb.MessageType_MsgApp)})
	waitArrival(t, to)
	waitArrival(t, to)
	if len(to.got) != 2 || to.got[1].GetType() != raftpb.MessageType_MsgApp || to.got[1].GetTerm() != 3 {
		t.Fatalf("received %v", to.got)
	}
}

func TestPeerOfAnotherClusterIsRefused(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	to := newRecorder()
	srv := httptest.NewServer(New(7, 2, to, nil, log).Handler())
	defer srv.Close()
	from := newRecorder()
	send := New(8, 1, from, nil, log) // another cluster ID
	defer send.Stop()
	send.AddPeer(2, []string{srv.URL})
	send.Send([]*raftpb.Message{msg(2, raftpb.MessageType_MsgHeartbeat)})
	waitArrival(t, from) // the sender learns the peer is unreachable for it
	to.mu.Lock()
	defer to.mu.Unlock()
	if len(to.got) != 0 {
		t.Fatalf("a member of another cluster delivered %d messages", len(to.got))
	}
}
