package server

import "github.com/cairnkv/cairn/internal/idlememory"

// idleMemoryLoop gives the heap a burst of requests left behind back to the
// operating system once the member is idle (idlememory.Run), until
// it stops.
func (s *Server) idleMemoryLoop() {
	defer s.wg.Done()
	idlememory.Run(s.stopc, s.requestsSeen, s.log)
}

// requestsSeen counts the store's operations and watch events so far.
func (s *Server) requestsSeen() int64 {
	st := s.storeStats
	return st.Puts.Load() + st.Deletes.Load() + st.Ranges.Load() + st.Txns.Load() + st.EventsSent.Load()
}
