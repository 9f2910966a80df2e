package forensics

import (
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/snapfmt"
	"github.com/cairnkv/cairn/pkg/walfmt"
)

// restoreTerm is the raft term of everything a restore writes.
const restoreTerm = 1

// writeRestoredWAL creates the WAL of a restored member as etcdutl does:
// one conf change entry adding each member (by ID, indexes 1..N, term 1),
// a hard state committing them, and a snapshot record at the last one.
func writeRestoredWAL(dir string, c *restoreCluster) error {
	w, err := walfmt.Create(dir, &pb.Metadata{NodeID: proto.Uint64(c.self.ID), ClusterID: proto.Uint64(c.id)}, walfmt.Options{})
	if err != nil {
		return fmt.Errorf("create wal %s: %w", dir, err)
	}
	ents := make([]*raftpb.Entry, len(c.members))
	for i, m := range c.members {
		data, err := proto.Marshal(&raftpb.ConfChange{
			Type:    raftpb.ConfChangeType_ConfChangeAddNode.Enum(),
			NodeId:  proto.Uint64(m.ID),
			Context: m.Marshal(),
		})
		if err != nil {
			w.Close()
			return fmt.Errorf("encode conf change of member %x: %w", m.ID, err)
		}
		ents[i] = &raftpb.Entry{
			Term:  proto.Uint64(restoreTerm),
			Index: proto.Uint64(uint64(i + 1)),
			Type:  raftpb.EntryType_EntryConfChange.Enum(),
			Data:  data,
		}
	}
	last := uint64(len(ents))
	hs := &raftpb.HardState{Term: proto.Uint64(restoreTerm), Vote: proto.Uint64(c.members[0].ID), Commit: proto.Uint64(last)}
	if err := w.Save(hs, ents); err != nil {
		w.Close()
		return fmt.Errorf("write wal %s: %w", dir, err)
	}
	if err := w.SaveSnapshot(walfmt.Snapshot{Index: last, Term: restoreTerm, ConfState: c.confState()}); err != nil {
		w.Close()
		return fmt.Errorf("write wal %s: %w", dir, err)
	}
	return w.Close()
}

// confState is the membership of the new cluster: every member a voter.
func (c *restoreCluster) confState() *raftpb.ConfState {
	cs := &raftpb.ConfState{}
	for _, m := range c.members {
		cs.Voters = append(cs.Voters, m.ID)
	}
	return cs
}

// writeRestoredSnap writes the raft snapshot at the last conf change entry.
// Its data is the old v2 store holding the members, which etcd 3.7 still
// reads at start.
func writeRestoredSnap(dir string, c *restoreCluster) error {
	data, err := v2StoreJSON(c)
	if err != nil {
		return err
	}
	snap := &raftpb.Snapshot{
		Data: data,
		Metadata: &raftpb.SnapshotMetadata{
			ConfState: c.confState(),
			Index:     proto.Uint64(uint64(len(c.members))),
			Term:      proto.Uint64(restoreTerm),
		},
	}
	if _, err := snapfmt.Write(dir, snap); err != nil {
		return fmt.Errorf("write snapshot file in %s: %w", dir, err)
	}
	return nil
}

// v2StoreJSON returns the v2 store etcdutl writes for a new cluster: the
// raftAttributes of each member, created in ID order at indexes 1..N.
func v2StoreJSON(c *restoreCluster) ([]byte, error) {
	var m snapfmt.V2Membership
	for _, mem := range c.members {
		m.Members = append(m.Members, snapfmt.V2Member{ID: mem.ID, PeerURLs: mem.PeerURLs})
	}
	return snapfmt.MarshalV2Store(m)
}
