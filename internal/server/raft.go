package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/transport"
	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/failpoint"
	"github.com/cairnkv/cairn/pkg/snapfmt"
	"github.com/cairnkv/cairn/pkg/store"
	"github.com/cairnkv/cairn/pkg/walfmt"
	"github.com/cairnkv/cairn/pkg/writebehind"
)

func newMetadata(id, clusterID uint64) *pb.Metadata {
	return &pb.Metadata{NodeID: proto.Uint64(id), ClusterID: proto.Uint64(clusterID)}
}

// encodeMemberContext is the context of a conf change that adds m: the
// member's JSON, as etcd puts it there.
func encodeMemberContext(m Member) ([]byte, error) { return json.Marshal(m) }

// raftLoop drives raft: ticks, and for each Ready persists, sends, hands
// committed entries to the apply loop and advances.
func (s *Server) raftLoop() {
	defer s.wg.Done()
	ticker := time.NewTicker(s.cfg.HeartbeatInterval)
	defer ticker.Stop()
	for {
		if rd, ok := s.node.Ready(); ok {
			if err := s.handleReady(rd); err != nil {
				s.fatal(err)
				return
			}
			s.node.Advance()
		}
		// Advance leaves a token on Wake, so after a Ready this does not
		// block; a tick that is due is taken between two Readies, however
		// steady their stream.
		select {
		case <-s.stopc:
			return
		case <-ticker.C:
			s.node.Tick()
		case <-s.node.Wake():
		}
	}
}

func (s *Server) handleReady(rd raft.Ready) error {
	if rd.SoftState != nil {
		old := s.leaderID.Swap(rd.SoftState.Lead)
		if old != rd.SoftState.Lead {
			s.onLeaderChange(old, rd.SoftState.Lead)
		}
	}
	if rd.HardState != nil && !raft.IsEmptyHardState(rd.HardState) {
		s.term.Store(rd.HardState.GetTerm())
		s.commit.Store(rd.HardState.GetCommit())
	}
	for _, rs := range rd.ReadStates {
		select {
		case s.readState <- rs:
		default: // nobody waits for it any more
		}
	}
	// The leader may send its appends while it writes them to its own WAL
	// (raft thesis 10.2.1); a follower acknowledges only what it has synced.
	leader := s.leaderID.Load() == s.id
	if leader {
		s.transport.Send(rd.Messages)
	}
	hasSnapshot := rd.Snapshot != nil && !raft.IsEmptySnap(rd.Snapshot)
	// Committed entries that earlier Readies already wrote to the WAL are
	// applied while this one's entries are written: a leader's writes reach
	// their clients one fsync sooner. (raft commits a leader's entries only
	// after the Ready that appends them is written; a follower may learn of
	// an entry's commit in the Ready that appends it, and applies such
	// entries after the write, as it does a snapshot.)
	applyNow := !hasSnapshot && !overlaps(rd.CommittedEntries, rd.Entries)
	if applyNow && !s.dispatchApply(toApply{entries: rd.CommittedEntries}) {
		return nil
	}
	if hasSnapshot {
		if err := s.persistSnapshot(rd.Snapshot); err != nil {
			return err
		}
	}
	failpoint.Hit("raftBeforeSave")
	if err := s.wal.Save(rd.HardState, rd.Entries); err != nil {
		return fmt.Errorf("save wal: %w", err)
	}
	failpoint.Hit("raftAfterSave")
	if hasSnapshot {
		if err := s.storage.ApplySnapshot(rd.Snapshot); err != nil {
			return fmt.Errorf("apply snapshot to raft storage: %w", err)
		}
	}
	if err := s.storage.Append(rd.Entries); err != nil {
		return fmt.Errorf("append to raft storage: %w", err)
	}
	if !leader {
		s.transport.Send(rd.Messages)
	}
	if !applyNow {
		ap := toApply{entries: rd.CommittedEntries}
		if hasSnapshot {
			ap.snapshot = rd.Snapshot
		}
		s.dispatchApply(ap)
	}
	return nil
}

// overlaps reports whether any committed entry is among the entries being
// appended (so not yet in the WAL).
func overlaps(committed, appending []*raftpb.Entry) bool {
	return len(committed) > 0 && len(appending) > 0 &&
		committed[len(committed)-1].GetIndex() >= appending[0].GetIndex()
}

// dispatchApply hands work to the apply loop; false if the member stopped
// first. Nothing to apply is not sent.
func (s *Server) dispatchApply(ap toApply) bool {
	if len(ap.entries) == 0 && ap.snapshot == nil {
		return true
	}
	select {
	case s.applyc <- ap:
		return true
	case <-s.stopc:
		return false
	}
}

func (s *Server) onLeaderChange(old, lead uint64) {
	if lead != 0 {
		s.leaderChanges.Add(1)
	}
	switch {
	case lead == s.id:
		s.log.Info("became leader", "term", s.term.Load())
	case lead == 0:
		s.log.Warn("lost the leader", "previous", fmt.Sprintf("%x", old))
	default:
		s.log.Info("following a leader", "leader", fmt.Sprintf("%x", lead))
	}
	s.leaderless.Set(lead)
	s.leaderChanged(lead)
}

// persistSnapshot writes a snapshot received from the leader: the .snap file
// and its WAL record, before the WAL entries after it.
func (s *Server) persistSnapshot(snap *raftpb.Snapshot) error {
	md := snap.GetMetadata()
	failpoint.Hit("raftBeforeSaveSnapshot")
	start := time.Now()
	_, tm, err := snapfmt.WriteTimed(s.cfg.SnapDir(), snap)
	if err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	s.metrics.SnapSave.Observe(time.Since(start).Seconds())
	s.metrics.SnapMarshalling.Observe(tm.Marshal.Seconds())
	s.metrics.SnapFsync.Observe(tm.Fsync.Seconds())
	failpoint.Hit("raftAfterSaveSnapshot")
	return s.wal.SaveSnapshot(walfmt.Snapshot{Index: md.GetIndex(), Term: md.GetTerm(), ConfState: md.GetConfState()})
}

// loadSnapshot finds the newest .snap file the WAL also records (a member
// that crashed between writing a .snap file and its WAL record leaves a file
// the WAL cannot replay from; it is passed over, as are damaged files).
func (s *Server) loadSnapshot() (*raftpb.Snapshot, walfmt.Snapshot, error) {
	valid, err := walfmt.ValidSnapshots(s.cfg.WALPath())
	if err != nil {
		return nil, walfmt.Snapshot{}, err
	}
	recorded := map[[2]uint64]bool{}
	for _, v := range valid {
		recorded[[2]uint64{v.Term, v.Index}] = true
	}
	files, skipped, err := snapfmt.List(s.cfg.SnapDir())
	if err != nil {
		return nil, walfmt.Snapshot{}, err
	}
	for _, sk := range skipped {
		s.log.Warn("skipping a badly named snapshot file", "path", sk.Path, "err", sk.Err)
	}
	for i := len(files) - 1; i >= 0; i-- {
		f := files[i]
		if !recorded[[2]uint64{f.Term, f.Index}] {
			s.log.Warn("skipping a snapshot file the WAL does not record", "path", f.Path)
			continue
		}
		snap, err := snapfmt.Read(f.Path)
		if err != nil {
			s.log.Warn("skipping a damaged snapshot file", "path", f.Path, "err", err)
			continue
		}
		md := snap.GetMetadata()
		return snap, walfmt.Snapshot{Index: md.GetIndex(), Term: md.GetTerm()}, nil
	}
	return nil, walfmt.Snapshot{}, nil
}

// Process steps a message from a peer (transport.Raft). A proposal a
// follower forwards that raft drops, because this member is handing
// leadership over or has just lost it, is held until a leader is known,
// then stepped again (holdProposal): raft appended it nowhere, and a
// dropped proposal gets no answer, so its proposer would wait for its
// timeout.
func (s *Server) Process(ctx context.Context, m *raftpb.Message) error {
	if err := s.checkPeerMessage(m); err != nil {
		return err
	}
	if m.GetType() == raftpb.MessageType_MsgProp {
		err := s.node.Step(m)
		if errors.Is(err, raft.ErrProposalDropped) {
			if s.heldProposals.Add(1) <= maxHeldProposals {
				go s.holdProposal(m)
				return nil
			}
			s.heldProposals.Add(-1)
		}
		if err != nil {
			s.proposalsFailed.Add(1)
		}
		return nil
	}
	return s.node.Step(m)
}

// maxHeldProposals bounds the forwarded proposals held at once.
const maxHeldProposals = 4096

// holdProposal steps a forwarded proposal that raft dropped again once this
// member knows a leader and is not handing leadership over (checked at each
// change of leader and heartbeat), for at most an election timeout.
func (s *Server) holdProposal(m *raftpb.Message) {
	defer s.heldProposals.Add(-1)
	changed := s.leaderless.Changed()
	deadline := time.After(s.cfg.ElectionTimeout)
	retry := time.NewTicker(s.cfg.HeartbeatInterval) // a transfer raft gives up changes no leader
	defer retry.Stop()
	for {
		select {
		case <-changed:
		case <-retry.C:
		case <-deadline:
			s.proposalsFailed.Add(1)
			return
		case <-s.stopc:
			return
		}
		changed = s.leaderless.Changed()
		if s.leaderID.Load() == 0 || s.node.Transferring() {
			continue
		}
		if err := s.node.Step(m); !errors.Is(err, raft.ErrProposalDropped) {
			return
		}
	}
}

// checkPeerMessage lets only messages between members of this cluster reach
// raft, which trusts what it is given (a forged commit index makes it panic).
func (s *Server) checkPeerMessage(m *raftpb.Message) error {
	if s.members.isRemoved(m.GetFrom()) {
		return fmt.Errorf("%w: %w", transport.ErrRemoved, ErrMemberIDRemoved)
	}
	if m.GetTo() != s.id {
		return fmt.Errorf("%w: message for member %x, this is member %x", ErrBadPeerMessage, m.GetTo(), s.id)
	}
	if _, ok := s.members.get(m.GetFrom()); !ok {
		return fmt.Errorf("%w: message from %x, not a member of this cluster", ErrBadPeerMessage, m.GetFrom())
	}
	return nil
}

// ReceiveSnapshot stores the db that comes with a snapshot message as
// <index>.snap.db, then steps the message (transport.Raft).
func (s *Server) ReceiveSnapshot(ctx context.Context, m *raftpb.Message, db io.Reader) error {
	if err := s.checkPeerMessage(m); err != nil {
		return err
	}
	index := m.GetSnapshot().GetMetadata().GetIndex()
	path := s.receivedDBPath(index)
	tmp := path + ".tmp"
	start := time.Now()
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	// Synced as it comes: the journal commits that this member's WAL
	// fsyncs wait for then have little of it to write out (writebehind).
	out := writebehind.New(f, writebehind.DefaultInterval, false)
	n, err := io.Copy(out, db)
	syncStart := time.Now()
	if serr := out.Close(); err == nil {
		err = serr
		s.metrics.SnapDBFsync.Observe(time.Since(syncStart).Seconds())
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	failpoint.Hit("snapshotBeforeReceive")
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("save snapshot db: %w", err)
	}
	failpoint.Hit("snapshotAfterReceive")
	s.metrics.SnapDBSave.Observe(time.Since(start).Seconds())
	s.log.Info("received snapshot", "from", fmt.Sprintf("%x", m.GetFrom()), "index", index, "bytes", n)
	return s.node.Step(m)
}

func (s *Server) receivedDBPath(index uint64) string {
	return filepath.Join(s.cfg.SnapDir(), fmt.Sprintf("%016x.snap.db", index))
}

// Removed stops a member that its peers say was removed from the cluster
// (transport.Raft): it may have missed the entry that removes it, which
// the others no longer send it, and would stay leaderless for good.
func (s *Server) Removed() {
	s.removedOnce.Do(func() {
		s.log.Warn("the member has been permanently removed from the cluster", "local-member-id", fmt.Sprintf("%x", s.id))
		go s.Stop()
	})
}

// ReportUnreachable tells raft a peer could not be reached (transport.Raft).
func (s *Server) ReportUnreachable(id uint64) { s.node.ReportUnreachable(id) }

// ReportSnapshot tells raft how sending a snapshot went (transport.Raft).
func (s *Server) ReportSnapshot(id uint64, failed bool) {
	status := raft.SnapshotFinish
	if failed {
		status = raft.SnapshotFailure
	}
	s.node.ReportSnapshot(id, status)
}

// openSnapshotDB streams the current db to go with an outgoing snapshot,
// and makes the message describe that db (describeDB).
func (s *Server) openSnapshotDB(m *raftpb.Message) (io.ReadCloser, error) {
	s.confs.Applying.Lock()
	db, err := s.st().Backend().OpenSnapshot()
	if err != nil {
		s.confs.Applying.Unlock()
		return nil, err
	}
	s.describeDB(m, db)
	s.confs.Applying.Unlock()
	pr, pw := io.Pipe()
	go func() {
		_, err := db.WriteTo(pw)
		db.Close()
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// raftLogger sends raft's log lines to slog.
type raftLogger struct{ l *slog.Logger }

func (r raftLogger) Debug(v ...any)                 {}
func (r raftLogger) Debugf(format string, v ...any) {}
func (r raftLogger) Info(v ...any)                  {}
func (r raftLogger) Infof(format string, v ...any)  {}
func (r raftLogger) Warning(v ...any)               { r.l.Warn(fmt.Sprint(v...)) }
func (r raftLogger) Warningf(format string, v ...any) {
	r.l.Warn(fmt.Sprintf(format, v...))
}
func (r raftLogger) Error(v ...any)                 { r.l.Error(fmt.Sprint(v...)) }
func (r raftLogger) Errorf(format string, v ...any) { r.l.Error(fmt.Sprintf(format, v...)) }
func (r raftLogger) Fatal(v ...any)                 { r.l.Error(fmt.Sprint(v...)); panic(fmt.Sprint(v...)) }
func (r raftLogger) Fatalf(format string, v ...any) {
	r.l.Error(fmt.Sprintf(format, v...))
	panic(fmt.Sprintf(format, v...))
}
func (r raftLogger) Panic(v ...any) { panic(fmt.Sprint(v...)) }
func (r raftLogger) Panicf(format string, v ...any) {
	panic(fmt.Sprintf(format, v...))
}

// describeDB makes an outgoing snapshot message describe the db that goes
// with it. raft hands the transport the last snapshot the member stored,
// while the db is the current one, newer: a peer added since that snapshot
// is not in its ConfState, and the peer's raft refuses it ("attempted to
// restore snapshot but it is not in the ConfState"); the leader sent the
// same snapshot again and again until it stored a newer one, so a member
// added under light load did not join for seconds, and with no writes not
// at all. The message gets the db's own index and term (its consistent
// index) and the ConfState as of that index. The leader's raft, which
// thinks it sent the older snapshot, takes the peer's answer at the newer
// index as progress past it.
func (s *Server) describeDB(m *raftpb.Message, db *backend.Snapshot) {
	md := m.GetSnapshot().GetMetadata()
	index, err := store.DecodeUint64(db.Get(store.BucketMeta, store.MetaConsistentIndex))
	if err != nil || index <= md.GetIndex() {
		return
	}
	term, err := store.DecodeUint64(db.Get(store.BucketMeta, store.MetaTerm))
	if err != nil || term == 0 {
		return
	}
	cs, ok := s.confs.At(index)
	if !ok {
		return
	}
	m.Snapshot.Metadata = &raftpb.SnapshotMetadata{
		Index:     proto.Uint64(index),
		Term:      proto.Uint64(term),
		ConfState: proto.Clone(cs).(*raftpb.ConfState),
	}
}
