// Package transport carries raft messages and snapshots between members
// over HTTP on the peer URLs. It knows nothing of keys: a snapshot is a
// raft message plus an opaque stream (the db file).
package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/listen"
	"github.com/cairnkv/cairn/internal/servertls"
)

// Paths served on the peer port.
const (
	PathMessages = "/raft/messages"
	PathSnapshot = "/raft/snapshot"
	PathProbing  = "/raft/probing"
)

// ProbeInterval is how often a member measures the round trip to each peer.
const ProbeInterval = 5 * time.Second

// Headers every peer request carries.
const (
	HeaderClusterID = "X-Cairn-Cluster-ID"
	HeaderFrom      = "X-Cairn-From"
)

// Raft is the member's side of the transport: what it does with what arrives.
type Raft interface {
	// Process steps a message received from a peer.
	Process(ctx context.Context, m *raftpb.Message) error
	// ReceiveSnapshot stores the db stream of a snapshot message, then steps
	// the message.
	ReceiveSnapshot(ctx context.Context, m *raftpb.Message, db io.Reader) error
	// ReportUnreachable and ReportSnapshot tell raft how sending went.
	ReportUnreachable(id uint64)
	ReportSnapshot(id uint64, failed bool)
	// Removed is called when a peer refuses this member's messages because
	// the cluster removed it (an error of Process that wraps ErrRemoved).
	Removed()
}

// ErrRemoved, wrapped in an error of Raft.Process, says the sender was
// removed from the cluster; the sender is answered 410 Gone and stops.
var ErrRemoved = errors.New("the member has been permanently removed from the cluster")

// SnapshotSource opens the db stream that goes with an outgoing snapshot.
type SnapshotSource func(m *raftpb.Message) (io.ReadCloser, error)

// Transport sends to and receives from the peers of one member.
type Transport struct {
	ClusterID uint64
	MemberID  uint64
	Raft      Raft
	Snapshot  SnapshotSource
	// Routes are further handlers of the member's own on the peer port
	// (the member list for joining members, lease forwarding).
	Routes map[string]http.Handler
	Log    *slog.Logger
	// OnRoundTrip, if set, is told of each probe of a peer answered, with
	// the time the round trip took (see ProbeInterval); OnSnapshot of each
	// snapshot sent to a peer or received from one, and how long it took.
	OnRoundTrip func(peer uint64, rtt time.Duration)
	OnSnapshot  func(peer uint64, sent bool, took time.Duration)
	// OnPeerGone, if set, is told when a peer's process is gone: its
	// message stream to this member broke and every URL of the peer
	// refuses connections (nothing listens there any more). A partition,
	// a paused process or a slow network refuses nothing and is not
	// reported.
	OnPeerGone func(peer uint64)

	client *http.Client
	mu     sync.RWMutex
	peers  map[uint64]*peer

	// Open message streams from each peer, since when one has been open
	// without a break (ActiveSince), and since when none has been for a
	// known peer (InactiveSince).
	amu     sync.Mutex
	streams map[uint64]int
	since   map[uint64]time.Time
	lost    map[uint64]time.Time
	// from counts what arrives from each peer (guarded by amu; the
	// counters themselves are atomic).
	from map[uint64]*fromPeer

	heartbeatFailures atomic.Int64
	stopped           atomic.Bool
}

// fromPeer counts what arrives from one peer.
type fromPeer struct {
	received                         atomic.Int64 // message bytes
	snapshotsReceived, snapshotsOpen atomic.Int64
}

// PeerCount is what the transport counts of one peer (Counts).
type PeerCount struct {
	ID             uint64
	Sent, Received int64 // message bytes
	// SendFailures counts the messages that could not be sent to the
	// peer; Disconnects the times its message stream was lost.
	SendFailures, Disconnects int64
	// Snapshots sent to and received from the peer, and those under way.
	SnapshotsSent, SnapshotsSending       int64
	SnapshotsReceived, SnapshotsReceiving int64
}

// Counts returns the counts of every peer sent to or received from, and
// the heartbeats that could not be queued for their peer.
func (t *Transport) Counts() (peers []PeerCount, heartbeatFailures int64) {
	byID := map[uint64]*PeerCount{}
	get := func(id uint64) *PeerCount {
		if byID[id] == nil {
			byID[id] = &PeerCount{ID: id}
		}
		return byID[id]
	}
	t.mu.RLock()
	for id, p := range t.peers {
		pc := get(id)
		pc.Sent, pc.SendFailures, pc.Disconnects = p.sent.Load(), p.sendFailures.Load(), p.disconnects.Load()
		pc.SnapshotsSent, pc.SnapshotsSending = p.snapshotsSent.Load(), p.snapshotsOpen.Load()
	}
	t.mu.RUnlock()
	t.amu.Lock()
	for id, f := range t.from {
		pc := get(id)
		pc.Received, pc.SnapshotsReceived, pc.SnapshotsReceiving = f.received.Load(), f.snapshotsReceived.Load(), f.snapshotsOpen.Load()
	}
	t.amu.Unlock()
	for _, pc := range byID {
		peers = append(peers, *pc)
	}
	return peers, t.heartbeatFailures.Load()
}

// fromPeer returns the counts of what arrives from peer id.
func (t *Transport) fromPeer(id uint64) *fromPeer {
	t.amu.Lock()
	defer t.amu.Unlock()
	f := t.from[id]
	if f == nil {
		f = new(fromPeer)
		t.from[id] = f
	}
	return f
}

// NewClient returns the HTTP client for peer traffic; tlsConfig (nil for
// the defaults) is used with https peer URLs. Its TCP connections start
// from localIP when it is not nil (etcd's SetMemberLocalAddr gate).
func NewClient(tlsConfig *tls.Config, localIP net.IP) *http.Client {
	dialer := &net.Dialer{Timeout: time.Second, KeepAlive: 30 * time.Second}
	if localIP != nil {
		dialer.LocalAddr = &net.TCPAddr{IP: localIP}
	}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if ctx.Value(dialUnixKey{}) != nil {
			return dialer.DialContext(ctx, "unix", addr)
		}
		return dialer.DialContext(ctx, network, addr)
	}
	return &http.Client{Transport: unixPeers{&http.Transport{
		DialContext: dial,
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialTLS(ctx, dial, tlsConfig, network, addr)
		},
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     time.Minute,
	}}}
}

// tlsHandshakeTimeout bounds a peer connection's TLS handshake.
const tlsHandshakeTimeout = 5 * time.Second

// dialTLS dials a peer over TLS with cfg made for the host dialled
// (servertls.ForHost): the peer's certificate must be for that host.
func dialTLS(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), cfg *tls.Config, network, addr string) (net.Conn, error) {
	if cfg == nil {
		cfg = &tls.Config{}
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	cfg = servertls.ForHost(cfg, host)
	raw, err := dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	hctx, cancel := context.WithTimeout(ctx, tlsHandshakeTimeout)
	defer cancel()
	conn := tls.Client(raw, cfg)
	if err := conn.HandshakeContext(hctx); err != nil {
		raw.Close()
		return nil, err
	}
	return conn, nil
}

// unixPeers sends a request to a unix:// (unixs://) peer URL as http
// (https) over a connection to the Unix socket its host names.
type unixPeers struct{ base *http.Transport }

type dialUnixKey struct{}

func (u unixPeers) RoundTrip(req *http.Request) (*http.Response, error) {
	if !listen.Unix(req.URL.Scheme) {
		return u.base.RoundTrip(req)
	}
	r := req.Clone(context.WithValue(req.Context(), dialUnixKey{}, true))
	r.URL.Scheme = "http"
	if listen.Secure(req.URL.Scheme) {
		r.URL.Scheme = "https"
	}
	return u.base.RoundTrip(r)
}

// CloseIdleConnections closes the idle peer connections.
func (u unixPeers) CloseIdleConnections() { u.base.CloseIdleConnections() }

// New returns a transport that sends with client (see NewClient); set the
// fields above before Start.
func New(clusterID, memberID uint64, r Raft, snap SnapshotSource, client *http.Client, log *slog.Logger) *Transport {
	return &Transport{
		ClusterID: clusterID, MemberID: memberID, Raft: r, Snapshot: snap, Log: log,
		client:  client,
		peers:   make(map[uint64]*peer),
		streams: make(map[uint64]int), since: make(map[uint64]time.Time), lost: make(map[uint64]time.Time), from: make(map[uint64]*fromPeer),
	}
}

// AddPeer starts sending to a peer at urls (replacing its URLs if known).
func (t *Transport) AddPeer(id uint64, urls []string) {
	if id == t.MemberID {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.peers[id]; ok {
		p.setURLs(urls)
		return
	}
	p := newPeer(t, id, urls)
	t.peers[id] = p
	t.amu.Lock()
	if t.streams[id] == 0 {
		t.lost[id] = time.Now() // not heard from since it became known
	}
	t.amu.Unlock()
	go p.run()
	go p.probe()
}

// RemovePeer stops sending to a peer.
func (t *Transport) RemovePeer(id uint64) {
	t.mu.Lock()
	p := t.peers[id]
	delete(t.peers, id)
	t.mu.Unlock()
	t.amu.Lock()
	delete(t.lost, id)
	t.amu.Unlock()
	if p != nil {
		p.stop()
	}
}

// Send queues messages for their peers; it never blocks. Messages to an
// unknown or overloaded peer are dropped and raft is told. The messages of
// one call for one peer are queued together, so that they leave in one
// write and can be coalesced.
func (t *Transport) Send(msgs []*raftpb.Message) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for id, p := range t.peers {
		var batch []*raftpb.Message
		for _, m := range msgs {
			if m.GetTo() != id {
				continue
			}
			if m.GetType() == raftpb.MessageType_MsgSnap {
				go p.sendSnapshot(m)
				continue
			}
			batch = append(batch, m)
		}
		if len(batch) > 0 && !p.enqueue(batch) {
			p.sendFailures.Add(int64(len(batch)))
			for _, m := range batch {
				if m.GetType() == raftpb.MessageType_MsgHeartbeat {
					t.heartbeatFailures.Add(1)
				}
			}
			t.Raft.ReportUnreachable(id)
		}
	}
}

// Queued returns how many messages wait to be sent, to all peers.
func (t *Transport) Queued() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := 0
	for _, p := range t.peers {
		p.qmu.Lock()
		n += len(p.queued)
		p.qmu.Unlock()
	}
	return n
}

// Stop stops every peer.
func (t *Transport) Stop() {
	t.stopped.Store(true)
	t.mu.Lock()
	peers := t.peers
	t.peers = map[uint64]*peer{}
	t.mu.Unlock()
	for _, p := range peers {
		p.stop()
	}
}

// Handler serves the peer endpoints.
func (t *Transport) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(PathMessages, t.serveMessages)
	mux.HandleFunc(PathSnapshot, t.serveSnapshot)
	mux.HandleFunc(PathProbing, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	for path, h := range t.Routes {
		mux.Handle(path, h)
	}
	return mux
}

// checkCluster refuses requests from members of another cluster.
func (t *Transport) checkCluster(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return false
	}
	got := r.Header.Get(HeaderClusterID)
	if got != strconv.FormatUint(t.ClusterID, 16) {
		// The request body may be an endless stream: answer now and close,
		// rather than read it to the end first.
		w.Header().Set("Connection", "close")
		http.Error(w, fmt.Sprintf("cluster ID mismatch: this member is in cluster %x, the request is from cluster %s", t.ClusterID, got), http.StatusPreconditionFailed)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		return false
	}
	return true
}

// ActiveSince returns since when a message stream from the peer has been
// open without a break; zero if none is.
func (t *Transport) ActiveSince(id uint64) time.Time {
	t.amu.Lock()
	defer t.amu.Unlock()
	return t.since[id]
}

// InactiveSince returns since when no message stream from a known peer has
// been open: when the last one broke, or when the peer became known if none
// has opened since; zero if one is open, or if the peer was never known (or
// was removed while none was open).
func (t *Transport) InactiveSince(id uint64) time.Time {
	t.amu.Lock()
	defer t.amu.Unlock()
	return t.lost[id]
}

// streamOpened and streamClosed count a peer's open message streams.
func (t *Transport) streamOpened(id uint64) {
	t.amu.Lock()
	defer t.amu.Unlock()
	if t.streams[id]++; t.streams[id] == 1 {
		t.since[id] = time.Now()
		delete(t.lost, id)
	}
}

func (t *Transport) streamClosed(id uint64) {
	t.amu.Lock()
	defer t.amu.Unlock()
	if t.streams[id]--; t.streams[id] <= 0 {
		delete(t.streams, id)
		delete(t.since, id)
		t.lost[id] = time.Now()
	}
}

func (t *Transport) serveMessages(w http.ResponseWriter, r *http.Request) {
	if !t.checkCluster(w, r) {
		return
	}
	from, err := strconv.ParseUint(r.Header.Get(HeaderFrom), 16, 64)
	if err == nil {
		t.streamOpened(from)
		defer t.streamClosed(from)
	}
	received := &t.fromPeer(from).received
	body := io.LimitReader(r.Body, 512<<20)
	var buf bytes.Buffer
	for {
		if err := readFrame(body, &buf, 256<<20); err != nil {
			if t.OnPeerGone != nil && !t.stopped.Load() {
				go t.checkGone(from)
			}
			if err == io.EOF {
				return
			}
			http.Error(w, "read message: "+err.Error(), http.StatusBadRequest)
			return
		}
		received.Add(int64(4 + buf.Len()))
		m := new(raftpb.Message)
		if err := proto.Unmarshal(buf.Bytes(), m); err != nil {
			http.Error(w, "decode message: "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := t.Raft.Process(r.Context(), m); err != nil {
			status := http.StatusInternalServerError
			if errors.Is(err, ErrRemoved) {
				status = http.StatusGone
			}
			// As in checkCluster: answer now, the stream does not end.
			w.Header().Set("Connection", "close")
			http.Error(w, "process: "+err.Error(), status)
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			return
		}
	}
}

// checkGone tells OnPeerGone when every URL of the peer refuses a
// connection. A process being killed closes its connections before its
// listeners, so a connection accepted now is tried again a few times.
func (t *Transport) checkGone(id uint64) {
	t.mu.RLock()
	p := t.peers[id]
	t.mu.RUnlock()
	if p == nil {
		return
	}
	p.mu.Lock()
	urls := append([]string(nil), p.urls...)
	p.mu.Unlock()
	if len(urls) == 0 {
		return
	}
	for try := 0; ; try++ {
		accepted := false
		for _, u := range urls {
			switch dialPeer(u) {
			case dialAccepted:
				accepted = true
			case dialFailed:
				return // not refused: the peer may be there, behind a partition
			}
		}
		if !accepted {
			break
		}
		if try == 4 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !t.stopped.Load() {
		t.OnPeerGone(id)
	}
}

type dialOutcome int

const (
	dialAccepted dialOutcome = iota
	dialRefused              // nothing listens on the port (or no socket file is there)
	dialFailed               // timed out, or another error
)

// dialPeer opens and closes a connection to a peer URL.
func dialPeer(rawURL string) dialOutcome {
	u, err := url.Parse(rawURL)
	if err != nil {
		return dialFailed
	}
	network, addr := "tcp", u.Host
	if listen.Unix(u.Scheme) {
		network, addr = "unix", u.Host+u.Path
	}
	conn, err := net.DialTimeout(network, addr, 500*time.Millisecond)
	switch {
	case err == nil:
		conn.Close()
		return dialAccepted
	case errors.Is(err, syscall.ECONNREFUSED), network == "unix" && errors.Is(err, os.ErrNotExist):
		return dialRefused
	default:
		return dialFailed
	}
}

func (t *Transport) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	if !t.checkCluster(w, r) {
		return
	}
	var buf bytes.Buffer
	if err := readFrame(r.Body, &buf, 64<<20); err != nil {
		http.Error(w, "read snapshot message: "+err.Error(), http.StatusBadRequest)
		return
	}
	m := new(raftpb.Message)
	if err := proto.Unmarshal(buf.Bytes(), m); err != nil || m.GetType() != raftpb.MessageType_MsgSnap {
		http.Error(w, "not a snapshot message", http.StatusBadRequest)
		return
	}
	f := t.fromPeer(m.GetFrom())
	f.snapshotsOpen.Add(1)
	start := time.Now()
	err := t.Raft.ReceiveSnapshot(r.Context(), m, r.Body)
	f.snapshotsOpen.Add(-1)
	if err != nil {
		t.Log.Warn("receiving snapshot failed", "from", fmt.Sprintf("%x", m.GetFrom()), "err", err)
		http.Error(w, "receive snapshot: "+err.Error(), http.StatusInternalServerError)
		return
	}
	f.snapshotsReceived.Add(1)
	if t.OnSnapshot != nil {
		t.OnSnapshot(m.GetFrom(), false, time.Since(start))
	}
	w.WriteHeader(http.StatusNoContent)
}

// readFrame reads one length-prefixed frame (4 bytes big endian, then the
// bytes) into buf. Its memory grows with the bytes that arrive, not with
// the length a peer claims. A clean end before the frame is io.EOF.
func readFrame(r io.Reader, buf *bytes.Buffer, maxLen uint32) error {
	var lenBuf [4]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return fmt.Errorf("read frame length: %w", err)
		}
		return err
	}
	n := binary.BigEndian.Uint32(lenBuf[:])
	if n > maxLen {
		return fmt.Errorf("frame of %d bytes, more than %d", n, maxLen)
	}
	buf.Reset()
	if _, err := io.CopyN(buf, r, int64(n)); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("read frame of %d bytes: %w", n, err)
	}
	return nil
}

// peer sends batches of messages to one member, one request at a time.
type peer struct {
	t    *Transport
	id   uint64
	mu   sync.Mutex
	urls []string
	next int // index of the URL to try next

	qmu    sync.Mutex
	queued []*raftpb.Message
	wake   chan struct{} // has a value when queued may be non-empty
	// active: the current stream's request reached the peer over a
	// connection (run's goroutine only), so that its loss is logged once.
	active bool
	done   chan struct{}
	once   sync.Once
	// counts (Transport.Counts): message bytes written to the peer,
	// messages that could not be, streams lost, snapshots sent and under way
	sent, sendFailures, disconnects atomic.Int64
	snapshotsSent, snapshotsOpen    atomic.Int64
}

// peerQueueSize is how many messages may wait for one peer; more are
// dropped, as raft allows.
const peerQueueSize = 4096

func newPeer(t *Transport, id uint64, urls []string) *peer {
	return &peer{t: t, id: id, urls: urls, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (p *peer) setURLs(urls []string) {
	p.mu.Lock()
	p.urls = urls
	p.mu.Unlock()
}

func (p *peer) url() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.urls) == 0 {
		return ""
	}
	return p.urls[p.next%len(p.urls)]
}

func (p *peer) rotate() {
	p.mu.Lock()
	p.next++
	p.mu.Unlock()
}

// enqueue queues msgs for the peer, all or none.
func (p *peer) enqueue(msgs []*raftpb.Message) bool {
	p.qmu.Lock()
	if len(p.queued)+len(msgs) > peerQueueSize {
		p.qmu.Unlock()
		return false
	}
	p.queued = append(p.queued, msgs...)
	p.qmu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return true
}

// take returns the queued messages and empties the queue; spare is a slice
// the caller is done with, reused as the next queue.
func (p *peer) take(spare []*raftpb.Message) []*raftpb.Message {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	msgs := p.queued
	p.queued = spare[:0]
	return msgs
}

func (p *peer) stop() { p.once.Do(func() { close(p.done) }) }

// run keeps one long-lived streaming request open to the peer and writes
// into it whatever is queued, in batches: messages flow without waiting for
// a round trip each. When the stream breaks it is opened again.
func (p *peer) run() {
	var buf bytes.Buffer
	for {
		select {
		case <-p.done:
			return
		default:
		}
		pr, pw := io.Pipe()
		ended := make(chan error, 1)
		connected := make(chan struct{}, 1)
		go func() {
			err := p.post(PathMessages, pr, connected)
			pr.CloseWithError(errStreamEnded)
			if err == nil {
				err = errStreamEnded
			}
			ended <- err
		}()
		err := p.stream(pw, &buf, ended, connected)
		pw.CloseWithError(err)
		if err == errPeerStopped {
			return
		}
		if p.active {
			p.active = false
			p.disconnects.Add(1)
			p.t.Log.Warn("lost TCP streaming connection with remote peer", "stream-writer-type", "stream Message",
				"local-member-id", fmt.Sprintf("%x", p.t.MemberID), "remote-peer-id", fmt.Sprintf("%x", p.id), "error", err)
			p.t.Log.Warn("peer became inactive (message send to peer failed)", "peer-id", fmt.Sprintf("%x", p.id), "error", err)
		}
		p.rotate()
		p.t.Raft.ReportUnreachable(p.id)
		select { // back off a little before the next connection
		case <-p.done:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

var (
	errPeerStopped = errors.New("peer stopped")
	errStreamEnded = errors.New("message stream ended")
)

// stream writes what is queued into an open request body, coalesced, in
// as few writes as the size of the batch allows, until the peer is stopped,
// the request ends (ended) or a write fails. The stream is active from when
// its request's headers were written to a connection (connected).
func (p *peer) stream(w io.Writer, buf *bytes.Buffer, ended <-chan error, connected <-chan struct{}) error {
	select { // messages may have waited for this stream
	case p.wake <- struct{}{}:
	default:
	}
	var batch []*raftpb.Message
	for {
		select {
		case <-p.done:
			return errPeerStopped
		case err := <-ended:
			return err
		case <-connected:
			p.active = true
			p.t.Log.Info("peer became active", "peer-id", fmt.Sprintf("%x", p.id))
			continue
		case <-p.wake:
		}
		batch = p.take(batch)
		if err := p.write(w, buf, coalesce(batch)); err != nil {
			p.sendFailures.Add(int64(len(batch)))
			return err
		}
		clear(batch) // let the messages be collected
	}
}

// maxWriteBytes is how much stream gathers before it writes.
const maxWriteBytes = 4 << 20

func (p *peer) write(w io.Writer, buf *bytes.Buffer, msgs []*raftpb.Message) error {
	buf.Reset()
	for i, m := range msgs {
		if err := appendFrame(buf, m); err != nil {
			p.t.Log.Error("encoding a raft message failed", "peer", fmt.Sprintf("%x", p.id), "err", err)
		}
		if buf.Len() >= maxWriteBytes || i == len(msgs)-1 {
			if _, err := w.Write(buf.Bytes()); err != nil {
				return err
			}
			p.sent.Add(int64(buf.Len()))
			buf.Reset()
		}
	}
	return nil
}

// appendFrame appends m to buf as a frame: its length (4 bytes, big
// endian), then its bytes.
func appendFrame(buf *bytes.Buffer, m *raftpb.Message) error {
	var lenBuf [4]byte
	start := buf.Len()
	buf.Write(lenBuf[:])
	data, err := proto.MarshalOptions{}.MarshalAppend(buf.AvailableBuffer(), m)
	if err != nil {
		buf.Truncate(start)
		return err
	}
	buf.Write(data)
	binary.BigEndian.PutUint32(buf.Bytes()[start:], uint32(len(data)))
	return nil
}

// post sends body to the peer's path; connected, if not nil, is told
// when the request's headers have been written to a connection.
func (p *peer) post(path string, body io.Reader, connected chan<- struct{}) error {
	u := p.url()
	if u == "" {
		return errors.New("peer has no URL")
	}
	// Both the message stream and a snapshot may run long; stopping the
	// peer ends them.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-p.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	reqCtx := ctx
	if connected != nil {
		reqCtx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			WroteHeaders: func() {
				select {
				case connected <- struct{}{}:
				default:
				}
			},
		})
	}
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, u+path, body)
	if err != nil {
		return err
	}
	req.Header.Set(HeaderClusterID, strconv.FormatUint(p.t.ClusterID, 16))
	req.Header.Set(HeaderFrom, strconv.FormatUint(p.t.MemberID, 16))
	resp, err := p.t.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		switch resp.StatusCode {
		case http.StatusPreconditionFailed:
			p.t.Log.Error("peer refused us", "peer", fmt.Sprintf("%x", p.id), "reason", string(bytes.TrimSpace(msg)))
		case http.StatusGone:
			p.t.Raft.Removed()
		}
		return fmt.Errorf("peer %x: %s: %s", p.id, resp.Status, bytes.TrimSpace(msg))
	}
	io.Copy(io.Discard, resp.Body)
	return nil
}

// probe measures the round trip of a request to the peer every
// ProbeInterval, for OnRoundTrip, until the peer is stopped.
func (p *peer) probe() {
	if p.t.OnRoundTrip == nil {
		return
	}
	tick := time.NewTicker(ProbeInterval)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-tick.C:
		}
		u := p.url()
		if u == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), ProbeInterval)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+PathProbing, nil)
		if err == nil {
			start := time.Now()
			var resp *http.Response
			if resp, err = p.t.client.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					p.t.OnRoundTrip(p.id, time.Since(start))
				}
			}
		}
		cancel()
	}
}

// sendSnapshot streams a snapshot message and its db to the peer.
func (p *peer) sendSnapshot(m *raftpb.Message) {
	db, err := p.t.Snapshot(m)
	if err != nil {
		p.t.Log.Error("opening snapshot to send failed", "peer", fmt.Sprintf("%x", p.id), "err", err)
		p.t.Raft.ReportSnapshot(p.id, true)
		return
	}
	defer db.Close()
	data, err := proto.Marshal(m)
	if err != nil {
		p.t.Raft.ReportSnapshot(p.id, true)
		return
	}
	var lenBuf [4]byte
	binary.BigEndian.PutUint32(lenBuf[:], uint32(len(data)))
	body := io.MultiReader(bytes.NewReader(lenBuf[:]), bytes.NewReader(data), db)
	p.snapshotsOpen.Add(1)
	start := time.Now()
	err = p.post(PathSnapshot, body, nil)
	p.snapshotsOpen.Add(-1)
	if err != nil {
		p.t.Log.Warn("sending snapshot failed", "peer", fmt.Sprintf("%x", p.id), "err", err)
		p.t.Raft.ReportSnapshot(p.id, true)
		return
	}
	p.snapshotsSent.Add(1)
	if p.t.OnSnapshot != nil {
		p.t.OnSnapshot(p.id, true, time.Since(start))
	}
	p.t.Log.Info("sent snapshot", "peer", fmt.Sprintf("%x", p.id), "index", m.GetSnapshot().GetMetadata().GetIndex())
	p.t.Raft.ReportSnapshot(p.id, false)
}
