package server

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/cairnkv/cairn/internal/alarm"
	"github.com/cairnkv/cairn/internal/auth"
	"github.com/cairnkv/cairn/internal/autocompact"
	"github.com/cairnkv/cairn/internal/confhistory"
	"github.com/cairnkv/cairn/internal/leaderwatch"
	"github.com/cairnkv/cairn/internal/lease"
	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/internal/metrics"
	"github.com/cairnkv/cairn/internal/peerquery"
	"github.com/cairnkv/cairn/internal/raftnode"
	"github.com/cairnkv/cairn/internal/reqid"
	"github.com/cairnkv/cairn/internal/servertls"
	"github.com/cairnkv/cairn/internal/transport"
	"github.com/cairnkv/cairn/internal/wait"
	"github.com/cairnkv/cairn/pkg/cluster"
	"github.com/cairnkv/cairn/pkg/store"
	"github.com/cairnkv/cairn/pkg/walfmt"
)

// Server is one running member.
type Server struct {
	cfg       memberconfig.Config
	log       *slog.Logger
	id        uint64
	clusterID uint64

	store atomic.Pointer[store.Store] // replaced when a snapshot is installed
	// replaced is closed (and renewed) when the store is replaced, so that
	// watch streams on the old one end and their clients resume.
	replaced atomic.Pointer[chan struct{}]
	members  *membership

	node      *raftnode.Node
	storage   *raft.MemoryStorage
	wal       *walfmt.Writer
	transport *transport.Transport
	peerSrv   []*http.Server
	tls       memberTLS
	// peerClient carries every request to a peer: raft messages,
	// snapshots, joining, forwarding to the leader.
	peerClient *http.Client

	reqIDs  *reqid.Generator
	waiters *wait.List[proposal, applyResult] // each proposal's result, to its proposer
	applied *wait.Index                       // wakes waiters once the applied index reaches theirs
	// deadlines end the proposals that outlive the request timeout.
	deadlines *wait.Deadlines

	leaderID   atomic.Uint64
	leaderless *leaderless
	forwarded  leaderwatch.Forwarded
	// heldProposals counts the forwarded proposals held (holdProposal).
	heldProposals atomic.Int64
	term          atomic.Uint64
	commit        atomic.Uint64

	leaderChanges   atomic.Uint64
	proposalsFailed atomic.Uint64
	counts          memberCounts // metrics.go
	metrics         *metrics.Member
	storeStats      *store.Stats

	applyc    chan toApply
	readc     chan chan error // linearizable read requests
	confirmc  chan struct{}   // asks the read loop for a round that confirms the leadership (lease.go)
	readState chan raft.ReadState

	// apply-loop state
	appliedIndex  uint64
	appliedTerm   uint64
	snapshotIndex uint64
	confState     *raftpb.ConfState
	confs         confhistory.History // confState by index, for snapshots sent to peers
	// snapshotForced asks for a snapshot after the entries being applied.
	snapshotForced bool

	// ready is closed once the member has published its attributes through
	// raft: it has a leader and has caught up with the cluster (etcd's
	// "ready to serve client requests").
	ready chan struct{}

	// versionCheck wakes clusterVersionLoop.
	versionCheck chan struct{}

	alarms *alarm.Alarms
	// diskShort: the disk has less room than the member keeps free
	// (diskspace.go); writes are refused.
	diskShort atomic.Bool
	lessor    *lease.Lessor
	auth      *auth.Store // users, roles, tokens (auth: added)

	stopOnce    sync.Once
	removedOnce sync.Once // Removed
	stopc       chan struct{}
	wg          sync.WaitGroup
	errc        chan error
}

type toApply struct {
	snapshot *raftpb.Snapshot
	entries  []*raftpb.Entry
}

// Start bootstraps or restarts the member from cfg.DataDir and starts its
// raft and apply loops and its peer listeners.
func Start(cfg memberconfig.Config) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, log: cfg.Logger, members: newMembership(), storage: raft.NewMemoryStorage(),
		waiters: wait.NewList[proposal, applyResult](), applied: wait.NewIndex(), deadlines: wait.NewDeadlines(100 * time.Millisecond),
		applyc: make(chan toApply, 128), readc: make(chan chan error, 1024), confirmc: make(chan struct{}, 1), readState: make(chan raft.ReadState, 1),
		leaderless: newLeaderless(2 * cfg.ElectionTimeout), stopc: make(chan struct{}), ready: make(chan struct{}), errc: make(chan error, 1), versionCheck: make(chan struct{}, 1),
		metrics: metrics.New(cfg.Metrics == "extensive"),
	}
	s.storeStats = newStoreStats(s.metrics)
	tokens, err := auth.NewTokenProvider(cfg.AuthToken, cfg.AuthTokenTTL, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("--auth-token: %w", err)
	}
	if s.tls, err = s.setUpTLS(); err != nil {
		return nil, err
	}
	s.peerClient = transport.NewClient(s.tls.peerDial, cfg.PeerLocalIP())
	if err := os.MkdirAll(cfg.SnapDir(), 0o700); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", cfg.DataDir, err)
	}
	var wal chan walRead
	if segs, _ := walfmt.ListSegments(cfg.WALPath()); len(segs) > 0 {
		wal = make(chan walRead, 1)
		go func() { wal <- s.readWAL() }()
	}
	walTaken := false
	defer func() {
		if wal != nil && !walTaken { // Start failed before bootstrap
			if wr := <-wal; wr.w != nil {
				wr.w.Close()
			}
		}
	}()
	st, err := s.openStore()
	if err != nil {
		return nil, err
	}
	s.store.Store(st)
	if err := s.bootstrapDefrag(st); err != nil {
		st.Close()
		return nil, err
	}
	replaced := make(chan struct{})
	s.replaced.Store(&replaced)
	if err := createBuckets(st); err != nil {
		st.Close()
		return nil, err
	}
	if err := s.openAuth(st, tokens); err != nil { // auth: added
		st.Close()
		return nil, err
	}
	s.alarms = alarm.New()
	if err := s.alarms.Load(st); err != nil {
		st.Close()
		return nil, err
	}
	minTTL := lease.MinTTL(int(cfg.ElectionTimeout/cfg.HeartbeatInterval), cfg.HeartbeatInterval)
	if s.lessor, err = lease.New(st, lease.Config{MinTTL: minTTL}); err != nil {
		st.Close()
		return nil, err
	}
	walTaken = true
	if err := s.bootstrap(wal); err != nil {
		st.Close()
		return nil, err
	}
	s.reqIDs = reqid.New(s.id)
	if err := s.initialCorruptCheck(); err != nil {
		s.Stop()
		return nil, err
	}
	s.transport = transport.New(s.clusterID, s.id, s, s.openSnapshotDB, s.peerClient, s.log)
	s.transport.OnRoundTrip = func(peer uint64, rtt time.Duration) { s.metrics.PeerRoundTrip(fmt.Sprintf("%x", peer), rtt) }
	s.transport.OnPeerGone = s.leaderGone
	s.transport.OnSnapshot = func(peer uint64, sent bool, took time.Duration) {
		s.metrics.PeerSnapshot(fmt.Sprintf("%x", peer), sent, took)
	}
	s.transport.Routes = map[string]http.Handler{
		pathMembers:              http.HandlerFunc(s.serveMembers),
		peerquery.PathLeaseRenew: http.HandlerFunc(s.serveLeaseRenew),
		peerquery.PathLeaseTTL:   http.HandlerFunc(s.serveLeaseTTL),
		peerquery.PathPromote:    http.HandlerFunc(s.servePromote),
		pathHashKV:               http.HandlerFunc(s.serveHashKV),
	}
	for _, m := range s.members.list() {
		s.transport.AddPeer(m.ID, m.PeerURLs)
	}
	if err := s.listenPeers(); err != nil {
		s.Stop()
		return nil, err
	}
	s.wg.Add(5)
	go s.raftLoop()
	go s.applyLoop()
	go s.readIndexLoop()
	go s.leaseLoop()
	go s.clusterVersionLoop()
	if vs := s.voters(); !cfg.NoInitialElectionTickAdvance && (cfg.ForceNewCluster || len(vs) == 1 && vs[0].ID == s.id) {
		s.wg.Add(1)
		go s.campaignAlone()
	}
	s.wg.Add(3)
	go s.publishAttributes()
	go s.idleMemoryLoop()
	go s.diskSpaceLoop()
	s.startCorruptChecks()
	s.startAutoPromote()
	if ac, _ := autocompact.Parse(cfg.AutoCompactionMode, cfg.AutoCompactionRetention); ac.Enabled() {
		s.wg.Add(1)
		go s.autoCompactLoop(ac)
	}
	s.log.Info("member started", "name", cfg.Name, "id", fmt.Sprintf("%x", s.id), "cluster-id", fmt.Sprintf("%x", s.clusterID), "data-dir", cfg.DataDir)
	return s, nil
}

// campaignAlone: the only voter need not wait out an election timeout to
// lead. Raft refuses to campaign while configuration changes of its log are
// unapplied, so it first waits for the log it has: a new cluster's first
// entries (one per initial member, not yet in the storage), or a restarted
// member's.
func (s *Server) campaignAlone() {
	defer s.wg.Done()
	last, err := s.storage.LastIndex()
	if err != nil {
		return
	}
	select {
	case <-s.applied.Wait(max(last, uint64(len(s.members.list())))):
	case <-s.stopc:
		return
	}
	if s.leaderID.Load() != 0 {
		return
	}
	if err := s.node.Campaign(); err != nil {
		s.log.Warn("campaigning at start failed", "err", err)
	}
}

// bootstrap starts raft from the WAL and snapshot (wal, which readWAL is
// reading, when there is a WAL), or creates them.
func (s *Server) bootstrap(wal <-chan walRead) error {
	if wal != nil {
		return s.restart(<-wal)
	}
	if s.cfg.InitialClusterState == "existing" {
		return s.join()
	}
	if s.cfg.Discover != nil {
		s.log.Info("Bootstrapping cluster using v3 discovery.")
		initial, err := s.cfg.Discover(cluster.MemberID(s.cfg.InitialAdvertisePeerURLs, s.cfg.InitialClusterToken, 0), s.cfg.InitialCluster)
		if err != nil {
			return fmt.Errorf("failed to join discovery cluster (%w)", err)
		}
		s.cfg.InitialCluster = initial
	}
	return s.startNew()
}

func (s *Server) raftConfig() *raft.Config {
	return &raft.Config{
		ID:              s.id,
		ElectionTick:    int(s.cfg.ElectionTimeout / s.cfg.HeartbeatInterval),
		HeartbeatTick:   1,
		Storage:         s.storage,
		MaxSizePerMsg:   1 << 20,
		MaxInflightMsgs: 512,
		CheckQuorum:     true,
		PreVote:         !s.cfg.NoPreVote,
		Logger:          raftLogger{s.log},
	}
}

// startNew creates the WAL of a member of a new cluster.
func (s *Server) startNew() error {
	members, peers, err := initialPeers(s.cfg.InitialCluster, s.cfg.InitialClusterToken)
	if err != nil {
		return err
	}
	var ids []uint64
	for _, m := range members {
		ids = append(ids, m.ID)
		if m.Name == s.cfg.Name {
			s.id = m.ID
		}
		s.members.members[m.ID] = &m
	}
	s.clusterID = cluster.ID(ids)
	w, err := walfmt.Create(s.cfg.WALPath(), newMetadata(s.id, s.clusterID), s.walOptions())
	if err != nil {
		return err
	}
	s.wal = w
	s.confState = &raftpb.ConfState{}
	s.confs.Reset(0, s.confState)
	s.node, err = raftnode.Start(s.raftConfig(), peers)
	return err
}

// initialPeers returns the members of a new cluster (--initial-cluster)
// and the raft peers to bootstrap it with, both by member ID as etcd orders
// them. raft turns the peers into the conf change entries 1..N of term 1,
// which every member writes on its own: their order must be the same on
// every member (and on etcd's), as raft takes equal indexes and terms for
// equal entries.
func initialPeers(initialCluster, token string) ([]Member, []raft.Peer, error) {
	initial, err := cluster.ParseInitial(initialCluster)
	if err != nil {
		return nil, nil, err
	}
	var members []Member
	for name, urls := range initial {
		members = append(members, Member{ID: cluster.MemberID(urls, token, 0), Name: name, PeerURLs: urls})
	}
	slices.SortFunc(members, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
	peers := make([]raft.Peer, len(members))
	for i, m := range members {
		ctx, err := encodeMemberContext(m)
		if err != nil {
			return nil, nil, err
		}
		peers[i] = raft.Peer{ID: m.ID, Context: ctx}
	}
	return members, peers, nil
}

// walRead is a restarting member's WAL, opened after the newest snapshot.
type walRead struct {
	snap *raftpb.Snapshot
	w    *walfmt.Writer
	rr   *walfmt.ReadResult
	err  error
}

// readWAL loads the newest snapshot the WAL records and opens the WAL after
// it, cutting a torn tail. It needs nothing of the store, so Start runs it
// beside the store's index rebuild: at a restart of a large member each
// takes a core for a while.
func (s *Server) readWAL() walRead {
	snap, walSnap, err := s.loadSnapshot()
	if err != nil {
		return walRead{err: err}
	}
	w, rr, err := walfmt.Open(s.cfg.WALPath(), walSnap, s.walOptions())
	if errors.Is(err, walfmt.ErrTornFrame) {
		res, rerr := walfmt.Repair(s.cfg.WALPath())
		if rerr != nil {
			return walRead{err: fmt.Errorf("open wal: %w (repair refused: %v)", err, rerr)}
		}
		s.log.Warn("repaired torn wal tail", "segment", res.Segment, "offset", res.Offset, "cut-bytes", res.CutBytes, "saved-to", res.BrokenPath)
		w, rr, err = walfmt.Open(s.cfg.WALPath(), walSnap, s.walOptions())
	}
	return walRead{snap: snap, w: w, rr: rr, err: err}
}

// restart resumes from the newest snapshot and the WAL after it, as
// readWAL found them.
func (s *Server) restart(wr walRead) error {
	if wr.err != nil {
		return wr.err
	}
	snap, w, rr := wr.snap, wr.w, wr.rr
	s.wal = w
	s.id, s.clusterID = rr.Metadata.GetNodeID(), rr.Metadata.GetClusterID()
	if snap != nil {
		if err := s.storage.ApplySnapshot(snap); err != nil {
			return err
		}
		s.snapshotIndex = snap.GetMetadata().GetIndex()
		s.confState = snap.GetMetadata().GetConfState()
	} else {
		s.confState = &raftpb.ConfState{}
	}
	s.confs.Reset(s.snapshotIndex, s.confState)
	if rr.HardState != nil {
		if err := s.storage.SetHardState(rr.HardState); err != nil {
			return err
		}
	}
	if s.cfg.ForceNewCluster {
		var err error
		if rr.Entries, err = s.forceNewCluster(snap, rr.HardState, rr.Entries); err != nil {
			return err
		}
	}
	if err := s.storage.Append(rr.Entries); err != nil {
		return err
	}
	ci, term := s.st().ConsistentIndex()
	if ci < s.snapshotIndex {
		// The member stopped after recording a snapshot from the leader and
		// before its db took the place of this one: install it now. With
		// no such db, the db is older than the log says (a copy put back,
		// say): refused, in etcd's words.
		st, err := s.replaceDB(s.snapshotIndex)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: the db is at raft index %d, older than the snapshot at %d: failed to find database snapshot file (snap: snapshot file doesn't exist)",
				ErrCorruptedDataDir, ci, s.snapshotIndex)
		}
		if err != nil {
			return fmt.Errorf("%w: the db is at raft index %d, older than the snapshot at %d: %w", ErrCorruptedDataDir, ci, s.snapshotIndex, err)
		}
		ci, term = st.ConsistentIndex()
		s.log.Info("installed the snapshot db received before the restart", "index", s.snapshotIndex, "consistent-index", ci)
	}
	if ci < s.snapshotIndex {
		return fmt.Errorf("%w: the db is at raft index %d, older than the snapshot at %d", ErrCorruptedDataDir, ci, s.snapshotIndex)
	}
	s.appliedIndex, s.appliedTerm = ci, term
	if err := s.members.load(s.st()); err != nil {
		return err
	}
	node, err := raftnode.Restart(s.raftConfig())
	if err != nil {
		return err
	}
	s.node = node
	s.log.Info("restarted from the data dir", "snapshot-index", s.snapshotIndex, "applied-index", ci, "wal-entries", len(rr.Entries))
	return nil
}

// createBuckets adds the buckets the member keeps besides the store's own.
func createBuckets(st *store.Store) error {
	w := st.Write()
	for _, b := range [][]byte{store.BucketAlarm, store.BucketCluster, store.BucketMembers, store.BucketMembersRemoved,
		store.BucketAuth, store.BucketAuthUsers, store.BucketAuthRoles} {
		if err := w.Backend().CreateBucket(b); err != nil {
			w.End()
			return err
		}
	}
	return w.End()
}

func (s *Server) st() *store.Store { return s.store.Load() }

// listenPeers serves the transport on every --listen-peer-urls, over TLS
// for the https ones. Refused connections (a handshake that fails) are
// logged as warnings.
func (s *Server) listenPeers() error {
	for _, u := range s.cfg.ListenPeerURLs {
		ln, secure, err := s.cfg.Listen.URL(u)
		if err != nil {
			return fmt.Errorf("listen on peer URL %s: %w", u, err)
		}
		srv := &http.Server{Handler: s.transport.Handler(), ReadHeaderTimeout: 5 * time.Second,
			TLSConfig: s.tls.peer, ErrorLog: servertls.ErrorLog(s.log, "peer")}
		s.peerSrv = append(s.peerSrv, srv)
		if secure {
			go srv.ServeTLS(ln, "", "")
		} else {
			go srv.Serve(ln)
		}
	}
	return nil
}

// ClientTLS is the TLS configuration of the https client listeners (nil
// when there is none); for a self-signed certificate (--auto-tls) the
// files are in Config().ClientTLS.
func (s *Server) ClientTLS() *tls.Config { return s.tls.client }

// ID returns the member's ID.
func (s *Server) ID() uint64 { return s.id }

// ClusterID returns the cluster's ID.
func (s *Server) ClusterID() uint64 { return s.clusterID }

// Leader returns the ID of the current leader (0: none known).
func (s *Server) Leader() uint64 { return s.leaderID.Load() }

// LeaderChanges counts the leader changes this member has seen.
func (s *Server) LeaderChanges() uint64 { return s.leaderChanges.Load() }

// ProposalsPending counts the proposals waiting for their result.
func (s *Server) ProposalsPending() int { return s.waiters.Len() }

// Term returns the current raft term.
func (s *Server) Term() uint64 { return s.term.Load() }

// Store returns the member's MVCC store.
func (s *Server) Store() *store.Store { return s.st() }

// StoreReplaced returns a channel closed when the current store is replaced
// by one received with a snapshot.
func (s *Server) StoreReplaced() <-chan struct{} { return *s.replaced.Load() }

// Config returns the member's configuration.
func (s *Server) Config() memberconfig.Config { return s.cfg }

// Ready is closed once the member serves clients: it has published its
// name and client URLs through raft, so it has a leader and has applied the
// log up to that entry.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Done is closed when the member stops, on Stop or on a fatal error.
func (s *Server) Done() <-chan struct{} { return s.stopc }

// Err returns the fatal error that stopped the member, if any.
func (s *Server) Err() error {
	select {
	case err := <-s.errc:
		return err
	default:
		return nil
	}
}

func (s *Server) fatal(err error) {
	s.log.Error("member stopping on a fatal error", "err", err)
	select {
	case s.errc <- err:
	default:
	}
	s.stopOnce.Do(func() { close(s.stopc) })
}

// Stop stops the member cleanly: loops end, the WAL and the db are synced
// and closed.
func (s *Server) Stop() {
	s.stopOnce.Do(func() { close(s.stopc) })
	for _, srv := range s.peerSrv {
		srv.Close()
	}
	s.leaderless.Stop()
	s.wg.Wait()
	if s.transport != nil {
		s.transport.Stop()
	}
	if s.wal != nil {
		s.wal.Close()
	}
	s.st().Close()
}

func (s *Server) stopping() bool {
	select {
	case <-s.stopc:
		return true
	default:
		return false
	}
}
