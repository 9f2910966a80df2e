package server

import (
	"bytes"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/wait"
)

// requestIDs generates the unique IDs of proposals: the member's low 16
// bits, then a millisecond timestamp, then a counter.
type requestIDs struct {
	next atomic.Uint64
}

func newRequestIDs(memberID uint64) *requestIDs {
	g := &requestIDs{}
	prefix := (memberID & 0xffff) << 48
	ts := uint64(time.Now().UnixMilli()&0xffffffffff) << 8
	g.next.Store(prefix | ts)
	return g
}

func (g *requestIDs) get() uint64 { return g.next.Add(1) }

// waiters hand each proposal's result to the goroutine that proposed it
// (internal/wait); appliedWaiters wake goroutines once the applied index
// reaches a value.
type (
	waiters        = wait.List[proposal, applyResult]
	appliedWaiters = wait.Index
)

func newWaiters() *waiters               { return wait.NewList[proposal, applyResult]() }
func newAppliedWaiters() *appliedWaiters { return wait.NewIndex() }

// proposal is a request proposed here and its encoding, which the apply
// loop uses rather than decode the entry again (zero for a conf change).
type proposal struct {
	req  *pb.InternalRaftRequest
	data []byte
}

// proposal returns the request proposed here under id whose encoding is
// data, if its proposer still waits.
func (s *Server) proposal(id uint64, data []byte) *pb.InternalRaftRequest {
	p, _ := s.waiters.Value(id)
	if p.req == nil || !bytes.Equal(p.data, data) {
		return nil
	}
	return p.req
}
