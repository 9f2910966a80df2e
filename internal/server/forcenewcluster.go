package server

import (
	"fmt"
	"slices"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// forceNewCluster is --force-new-cluster on a restart: the entries after
// the commit index, which the old cluster may never have agreed on, are
// dropped, and one conf change per other member (voter or learner)
// removes it, appended to the log as committed: applied as any other
// entry, they leave this member alone in the cluster with its data. The
// new entries and hard state are in the WAL before raft starts. It
// returns the entries to start raft with.
func (s *Server) forceNewCluster(snap *raftpb.Snapshot, hs *raftpb.HardState, ents []*raftpb.Entry) ([]*raftpb.Entry, error) {
	lastIndex, lastTerm := uint64(0), uint64(0)
	ids := map[uint64]bool{}
	if snap != nil {
		md := snap.GetMetadata()
		lastIndex, lastTerm = md.GetIndex(), md.GetTerm()
		for _, id := range append(md.GetConfState().GetVoters(), md.GetConfState().GetLearners()...) {
			ids[id] = true
		}
	}
	commit := hs.GetCommit()
	var kept []*raftpb.Entry
	for _, e := range ents {
		if e.GetIndex() > commit {
			break
		}
		kept = append(kept, e)
		lastIndex, lastTerm = e.GetIndex(), e.GetTerm()
		if e.GetType() != raftpb.EntryType_EntryConfChange {
			continue
		}
		cc := new(raftpb.ConfChange)
		if err := proto.Unmarshal(e.GetData(), cc); err != nil {
			return nil, fmt.Errorf("--force-new-cluster: entry %d: decode conf change: %w", e.GetIndex(), err)
		}
		switch cc.GetType() {
		case raftpb.ConfChangeType_ConfChangeAddNode, raftpb.ConfChangeType_ConfChangeAddLearnerNode:
			ids[cc.GetNodeId()] = true
		case raftpb.ConfChangeType_ConfChangeRemoveNode:
			delete(ids, cc.GetNodeId())
		}
	}
	var others []uint64
	for id := range ids {
		if id != s.id {
			others = append(others, id)
		}
	}
	if len(others) == 0 {
		return ents, nil
	}
	slices.Sort(others)
	var added []*raftpb.Entry
	for _, id := range others {
		data, err := proto.Marshal(&raftpb.ConfChange{Type: raftpb.ConfChangeType_ConfChangeRemoveNode.Enum(), NodeId: proto.Uint64(id)})
		if err != nil {
			return nil, err
		}
		lastIndex++
		added = append(added, &raftpb.Entry{Type: raftpb.EntryType_EntryConfChange.Enum(), Term: proto.Uint64(lastTerm), Index: proto.Uint64(lastIndex), Data: data})
	}
	newHS := &raftpb.HardState{Term: proto.Uint64(hs.GetTerm()), Vote: proto.Uint64(hs.GetVote()), Commit: proto.Uint64(lastIndex)}
	if err := s.wal.Save(newHS, added); err != nil {
		return nil, fmt.Errorf("--force-new-cluster: save wal: %w", err)
	}
	if err := s.storage.SetHardState(newHS); err != nil {
		return nil, err
	}
	s.log.Warn("forcing restart member as a one-member cluster", "member-id", fmt.Sprintf("%x", s.id),
		"commit-index", commit, "discarded-uncommitted-entries", len(ents)-len(kept), "removed-member-ids", memberIDs(others))
	return append(kept, added...), nil
}

func memberIDs(ids []uint64) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprintf("%x", id)
	}
	return out
}
