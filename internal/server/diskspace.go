package server

import (
	"context"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/diskspace"
	"github.com/cairnkv/cairn/pkg/walfmt"
)

// A member keeps room free on the filesystems of its WAL and its db: one
// more WAL segment (a new one is preallocated whole) and diskMargin for the
// db to grow and a snapshot to be saved. With less, it raises the NOSPACE
// alarm, which refuses writes on every member while reads, deletes and
// compactions go on, rather than meet a full disk in the middle of a write
// (etcd 3.7.3 stops there). Once space is freed, `alarm disarm` lets
// writes in again; the alarm comes back within diskCheckInterval if the
// room is still short.
const (
	diskMargin        = 16 << 20
	diskCheckInterval = time.Second
)

// diskReserve is the room the member keeps free.
func (s *Server) diskReserve() uint64 {
	seg := s.cfg.WALOptions().SegmentSize
	if seg <= 0 {
		seg = walfmt.SegmentSizeBytes
	}
	return uint64(seg) + diskMargin
}

// diskSpaceLoop runs until the member stops.
func (s *Server) diskSpaceLoop() {
	defer s.wg.Done()
	tick := time.NewTicker(diskCheckInterval)
	defer tick.Stop()
	reserve := s.diskReserve()
	wasShort := false
	for {
		select {
		case <-s.stopc:
			return
		case <-tick.C:
		}
		short, isShort, err := diskspace.FirstShort(reserve, s.cfg.WALPath(), s.cfg.SnapDir())
		if err != nil {
			s.log.Warn("cannot tell the free disk space", "err", err)
			continue
		}
		s.diskShort.Store(isShort)
		switch {
		case isShort && !wasShort:
			s.log.Warn("disk space low; raising the NOSPACE alarm and refusing writes", "dir", short.Dir, "free-bytes", short.Free, "reserve-bytes", short.Need)
		case !isShort && wasShort:
			s.log.Info("disk space is back above the reserve; writes resume once the NOSPACE alarm is disarmed", "reserve-bytes", reserve)
		}
		wasShort = isShort
		if isShort && len(s.alarms.List(s.id, pb.AlarmType_NOSPACE)) == 0 {
			s.raiseNoSpace()
		}
	}
}

// raiseNoSpace proposes the NOSPACE alarm for this member.
func (s *Server) raiseNoSpace() {
	ctx, cancel := context.WithTimeout(context.Background(), s.RequestTimeout())
	defer cancel()
	_, err := s.Propose(ctx, &pb.InternalRaftRequest{Alarm: &pb.AlarmRequest{Action: pb.AlarmRequest_ACTIVATE, MemberID: s.id, Alarm: pb.AlarmType_NOSPACE}})
	if err != nil {
		s.log.Warn("raising the NOSPACE alarm failed", "err", err)
	}
}
