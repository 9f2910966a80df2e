package server

import "github.com/cairnkv/cairn/internal/idlememory"

// idleMemoryLoop gives the heap a burst of requests left behind back to the
// operating system once the member has served no operation for a while
// (idlememory.Run), until it stops.
func (s *Server) idleMemoryLoop() {
	defer s.wg.Done()
	idlememory.Run(s.stopc, s.storeStats.Operations, s.log)
}
