package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// recorder is a Raft that records what arrives; with refuse set, Process
// refuses every message with it.
type recorder struct {
	mu          sync.Mutex
	got         []*raftpb.Message
	unreachable int
	arrived     chan struct{}
	refuse      error
	removed     chan struct{}
}

func newRecorder() *recorder {
	return &recorder{arrived: make(chan struct{}, 100), removed: make(chan struct{}, 100)}
}

func (r *recorder) Process(_ context.Context, m *raftpb.Message) error {
	if r.refuse != nil {
		return r.refuse
	}
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
func (r *recorder) Removed()                    { r.removed <- struct{}{} }

// unreachables is how many times the peer was reported unreachable.
func (r *recorder) unreachables() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unreachable
}

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
	recv := New(7, 2, to, nil, NewClient(nil, nil), log)
	srv := httptest.NewServer(recv.Handler())
	defer srv.Close()
	from := newRecorder()
	send := New(7, 1, from, nil, NewClient(nil, nil), log)
	defer send.Stop()
	send.AddPeer(2, []string{srv.URL})
	send.Send([]*raftpb.Message{msg(2, raftpb.MessageType_MsgHeartbeat), msg(2, raftpb.MessageType_MsgApp)})
	waitArrival(t, to)
	waitArrival(t, to)
	if len(to.got) != 2 || to.got[1].GetType() != raftpb.MessageType_MsgApp || to.got[1].GetTerm() != 3 {
		t.Fatalf("received %v", to.got)
	}
	sent, _ := send.Counts()
	received, _ := recv.Counts()
	if len(sent) != 1 || sent[0].ID != 2 || sent[0].Sent == 0 || len(received) != 1 || received[0].ID != 1 || received[0].Received != sent[0].Sent {
		t.Errorf("counts: sent %+v, received %+v", sent, received)
	}
}

// TestMessagesThatCannotBeQueuedAreCounted: messages for a peer whose
// queue is full are dropped and counted, heartbeats among them apart.
func TestMessagesThatCannotBeQueuedAreCounted(t *testing.T) {
	send := New(7, 1, newRecorder(), nil, NewClient(nil, nil), slog.New(slog.DiscardHandler))
	defer send.Stop()
	send.AddPeer(2, []string{"http://127.0.0.1:1"})
	var msgs []*raftpb.Message
	for range peerQueueSize {
		msgs = append(msgs, msg(2, raftpb.MessageType_MsgApp))
	}
	msgs = append(msgs, msg(2, raftpb.MessageType_MsgHeartbeat))
	send.Send(msgs)
	peers, heartbeats := send.Counts()
	if len(peers) != 1 || peers[0].SendFailures != peerQueueSize+1 || heartbeats != 1 {
		t.Errorf("counts %+v, heartbeat failures %d; want %d failures, 1 heartbeat", peers, heartbeats, peerQueueSize+1)
	}
}

// TestUnreachablePeerIsNeverActive: a stream to a peer that cannot be
// reached, with nothing to send, is not taken for a connection (it was once
// logged as "peer became active", then lost, on every attempt).
func TestUnreachablePeerIsNeverActive(t *testing.T) {
	from := newRecorder()
	send := New(7, 1, from, nil, NewClient(nil, nil), slog.New(slog.DiscardHandler))
	defer send.Stop()
	send.AddPeer(2, []string{"http://127.0.0.1:1"})
	waitFor(t, "two attempts to reach the peer", func() bool { return from.unreachables() >= 2 })
	if peers, _ := send.Counts(); len(peers) != 1 || peers[0].Disconnects != 0 {
		t.Errorf("counts %+v; want no disconnects from a peer never reached", peers)
	}
}

// TestRemovedMemberIsTold: a peer that refuses a member's messages because
// the member was removed answers 410, and the member's Raft is told (it may
// never see the entry that removed it).
func TestRemovedMemberIsTold(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	to := newRecorder()
	to.refuse = fmt.Errorf("%w: member 1", ErrRemoved)
	srv := httptest.NewServer(New(7, 2, to, nil, NewClient(nil, nil), log).Handler())
	defer srv.Close()
	from := newRecorder()
	send := New(7, 1, from, nil, NewClient(nil, nil), log)
	defer send.Stop()
	send.AddPeer(2, []string{srv.URL})
	send.Send([]*raftpb.Message{msg(2, raftpb.MessageType_MsgHeartbeat)})
	select {
	case <-from.removed:
	case <-time.After(10 * time.Second):
		t.Fatal("the removed member was not told")
	}
}

func TestPeerOfAnotherClusterIsRefused(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	to := newRecorder()
	srv := httptest.NewServer(New(7, 2, to, nil, NewClient(nil, nil), log).Handler())
	defer srv.Close()
	from := newRecorder()
	send := New(8, 1, from, nil, NewClient(nil, nil), log) // another cluster ID
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

// Garbage on the peer port is answered with 400 and reaches nothing.
func TestGarbageIsRefused(t *testing.T) {
	to := newRecorder()
	srv := httptest.NewServer(New(7, 2, to, nil, NewClient(nil, nil), slog.New(slog.DiscardHandler)).Handler())
	defer srv.Close()
	frame := func(claimed uint32, body string) string {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], claimed)
		return string(b[:]) + body
	}
	for name, body := range map[string]string{
		"short length":           "\x00\x01",
		"length beyond the body": frame(200<<20, "abc"),
		"length over the limit":  frame(300<<20, "abc"),
		"not protobuf":           frame(4, "\xff\xff\xff\xff"),
	} {
		for _, path := range []string{PathMessages, PathSnapshot} {
			req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set(HeaderClusterID, "7")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", name, path, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%s to %s: status %d, want 400", name, path, resp.StatusCode)
			}
		}
	}
	if len(to.got) != 0 {
		t.Fatalf("garbage delivered %d messages", len(to.got))
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte("\x00\x00\x00\x03abc"))
	f.Add([]byte("\x00\x00\x00\x05ab"))
	f.Add([]byte("\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var buf bytes.Buffer
		if err := readFrame(bytes.NewReader(data), &buf, 1<<10); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(data))
		if n > 1<<10 || !bytes.Equal(buf.Bytes(), data[4:4+n]) {
			t.Fatalf("read %q from %q", buf.Bytes(), data)
		}
	})
}

// BenchmarkReadFrame is the receive side of the peer stream: one frame of a
// typical raft append (about 300 bytes) per op, the buffer reused.
func BenchmarkReadFrame(b *testing.B) {
	frame := binary.BigEndian.AppendUint32(nil, 300)
	frame = append(frame, bytes.Repeat([]byte{7}, 300)...)
	stream := bytes.Repeat(frame, 1024)
	r := bytes.NewReader(stream)
	var buf bytes.Buffer
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if r.Len() == 0 {
			r.Reset(stream)
		}
		if err := readFrame(r, &buf, 1<<20); err != nil {
			b.Fatal(err)
		}
	}
}

// TestInactiveSince: a peer is inactive from when it becomes known until
// its message stream opens, and again from when the stream breaks.
func TestInactiveSince(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	recv := New(7, 2, newRecorder(), nil, NewClient(nil, nil), log)
	srv := httptest.NewServer(recv.Handler())
	defer srv.Close()
	added := time.Now()
	recv.AddPeer(1, []string{"http://127.0.0.1:1"}) // recv never sends to it
	defer recv.Stop()
	if since := recv.InactiveSince(1); since.Before(added) || since.After(time.Now()) {
		t.Errorf("inactive since %v, want when it was added (%v)", since, added)
	}
	send := New(7, 1, newRecorder(), nil, NewClient(nil, nil), log)
	send.AddPeer(2, []string{srv.URL})
	send.Send([]*raftpb.Message{msg(2, raftpb.MessageType_MsgHeartbeat)})
	waitFor(t, "the stream from 1 to open", func() bool { return !recv.ActiveSince(1).IsZero() })
	if since := recv.InactiveSince(1); !since.IsZero() {
		t.Errorf("inactive since %v while the stream is open", since)
	}
	stopped := time.Now()
	send.Stop()
	waitFor(t, "the stream from 1 to break", func() bool { return recv.ActiveSince(1).IsZero() })
	if since := recv.InactiveSince(1); since.Before(stopped) {
		t.Errorf("inactive since %v, want after the sender stopped (%v)", since, stopped)
	}
	if since := recv.InactiveSince(3); !since.IsZero() {
		t.Errorf("an unknown peer inactive since %v", since)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
