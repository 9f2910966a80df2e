package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/featuregate"
	"github.com/cairnkv/cairn/internal/hashcheck"
	"github.com/cairnkv/cairn/pkg/store"
)

// The member's side of corruption detection (internal/hashcheck): the
// peer route, the initial check at start, the leader's periodic and
// compaction hash check loops.

// ErrCorrupt is the error of the requests refused while the CORRUPT alarm
// is raised (etcd's "corrupt cluster", gRPC code DataLoss).
var ErrCorrupt = errors.New("etcdserver: corrupt cluster")

const pathHashKV = hashcheck.Path

// DefaultCompactHashCheckTime is etcd's --compact-hash-check-time.
const DefaultCompactHashCheckTime = time.Minute

// memberView is the member as internal/hashcheck and
// internal/clusterversion see it.
type memberView struct{ *Server }

func (m memberView) Store() *store.Store { return m.st() }

func (m memberView) Peers() []hashcheck.Peer {
	var out []hashcheck.Peer
	for _, mem := range m.members.list() {
		out = append(out, hashcheck.Peer{ID: mem.ID, URLs: mem.PeerURLs})
	}
	return out
}

func (m memberView) RaiseCorrupt(ctx context.Context, id uint64) error {
	_, err := m.Propose(ctx, &pb.InternalRaftRequest{Alarm: &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: id, Alarm: pb.AlarmType_CORRUPT}})
	return err
}

// hashChecker is the member's checker: one check ends after the request
// timeout (etcd's: 5s + 2 election timeouts) or when the member stops.
func (s *Server) hashChecker() *hashcheck.Checker {
	return hashcheck.New(memberView{s}, hashcheck.Config{Logger: s.log, Client: s.peerClient, Timeout: s.RequestTimeout(), Stop: s.stopc})
}

// serveHashKV answers a peer's hash query with this member's HashKV.
func (s *Server) serveHashKV(w http.ResponseWriter, r *http.Request) {
	s.hashChecker().ServeHTTP(w, r)
}

// initialCorruptCheck runs the initial check when the InitialCorruptCheck
// gate is on: the member refuses to start on a mismatch.
func (s *Server) initialCorruptCheck() error {
	if !s.cfg.Features.Enabled(featuregate.InitialCorruptCheck) {
		return nil
	}
	return s.hashChecker().InitialCheck()
}

// startCorruptChecks starts the loops of the periodic and the compaction
// hash checks that the configuration asks for; they run on the leader.
func (s *Server) startCorruptChecks() {
	leads := func() bool { return s.leaderID.Load() == s.id }
	if s.cfg.CorruptCheckTime > 0 {
		s.log.Info("enabled corruption checking", "local-member-id", strconv.FormatUint(s.id, 16), "interval", s.cfg.CorruptCheckTime.String())
		s.wg.Go(func() { s.hashChecker().PeriodicLoop(s.cfg.CorruptCheckTime, leads) })
	}
	if s.cfg.Features.Enabled(featuregate.CompactHashCheck) {
		interval := s.cfg.CompactHashCheckTime
		if interval <= 0 {
			interval = DefaultCompactHashCheckTime
		}
		s.wg.Go(func() { s.hashChecker().CompactHashLoop(interval, leads) })
	}
}
