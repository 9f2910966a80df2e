// Package reqid generates the IDs of a member's requests as etcd does: the
// member ID's low 16 bits, then a millisecond timestamp, then a counter, so
// that the IDs of two members, or of one member before and after a
// restart, do not meet.
package reqid

import (
	"sync/atomic"
	"time"
)

// Generator hands out the IDs of one member; it is safe for concurrent use.
type Generator struct {
	next atomic.Uint64
}

// New returns the generator of the member memberID, starting from now.
func New(memberID uint64) *Generator {
	g := &Generator{}
	prefix := (memberID & 0xffff) << 48
	ts := uint64(time.Now().UnixMilli()&0xffffffffff) << 8
	g.next.Store(prefix | ts)
	return g
}

// Next returns a new ID.
func (g *Generator) Next() uint64 { return g.next.Add(1) }
