package server

import "github.com/cairnkv/cairn/pkg/snapfmt"

// snapshotData is the data of a raft snapshot: the v2 store etcd 3.7 writes
// from its membership, which etcd 3.6 needs to start on the data dir.
func (s *Server) snapshotData() ([]byte, error) {
	m := snapfmt.V2Membership{ClusterVersion: s.ClusterVersion()}
	for _, mem := range s.members.list() {
		m.Members = append(m.Members, snapfmt.V2Member{ID: mem.ID, PeerURLs: mem.PeerURLs, IsLearner: mem.IsLearner,
			Name: mem.Name, ClientURLs: mem.ClientURLs})
	}
	m.Removed = s.members.removedIDs()
	return snapfmt.MarshalV2Store(m)
}
