package cli

import (
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"time"

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

// The JSON layout of etcd's v2 store, as a restored member's .snap holds
// it: a tree of nodes under "/0" (cluster) and "/1" (keys), the event
// history of the watcher hub, and counters.
type (
	v2Store struct {
		Root           *v2Node
		WatcherHub     v2WatcherHub
		CurrentIndex   uint64
		Stats          v2Stats
		CurrentVersion int
	}
	v2Node struct {
		Path          string
		CreatedIndex  uint64
		ModifiedIndex uint64
		ExpireTime    time.Time
		Value         string
		Children      map[string]*v2Node
	}
	v2WatcherHub struct {
		EventHistory v2EventHistory
	}
	v2EventHistory struct {
		Queue      v2EventQueue
		StartIndex uint64
		LastIndex  uint64
	}
	v2EventQueue struct {
		Events   []*v2Event
		Size     int
		Front    int
		Back     int
		Capacity int
	}
	v2Event struct {
		Action string         `json:"action"`
		Node   *v2EventedNode `json:"node,omitempty"`
	}
	v2EventedNode struct {
		Key           string `json:"key,omitempty"`
		Value         string `json:"value,omitempty"`
		ModifiedIndex uint64 `json:"modifiedIndex,omitempty"`
		CreatedIndex  uint64 `json:"createdIndex,omitempty"`
	}
	v2Stats struct {
		GetSuccess              uint64 `json:"getsSuccess"`
		GetFail                 uint64 `json:"getsFail"`
		SetSuccess              uint64 `json:"setsSuccess"`
		SetFail                 uint64 `json:"setsFail"`
		DeleteSuccess           uint64 `json:"deleteSuccess"`
		DeleteFail              uint64 `json:"deleteFail"`
		UpdateSuccess           uint64 `json:"updateSuccess"`
		UpdateFail              uint64 `json:"updateFail"`
		CreateSuccess           uint64 `json:"createSuccess"`
		CreateFail              uint64 `json:"createFail"`
		CompareAndSwapSuccess   uint64 `json:"compareAndSwapSuccess"`
		CompareAndSwapFail      uint64 `json:"compareAndSwapFail"`
		CompareAndDeleteSuccess uint64 `json:"compareAndDeleteSuccess"`
		CompareAndDeleteFail    uint64 `json:"compareAndDeleteFail"`
		ExpireCount             uint64 `json:"expireCount"`
		Watchers                uint64 `json:"watchers"`
	}
)

// v2EventHistoryCapacity is the size of the v2 store's event ring.
const v2EventHistoryCapacity = 1000

// v2StoreJSON returns the v2 store etcdutl writes for a new cluster: one
// raftAttributes node per member (created in ID order, indexes 1..N) and
// the matching create events.
func v2StoreJSON(c *restoreCluster) ([]byte, error) {
	membersDir := &v2Node{Path: "/0/members", Children: map[string]*v2Node{}}
	events := make([]*v2Event, v2EventHistoryCapacity)
	for i, m := range c.members {
		idx := uint64(i + 1)
		id := strconv.FormatUint(m.ID, 16)
		attrs, err := json.Marshal(struct {
			PeerURLs []string `json:"peerURLs"`
		}{m.PeerURLs})
		if err != nil {
			return nil, err
		}
		key := path.Join(membersDir.Path, id, "raftAttributes")
		membersDir.Children[id] = &v2Node{
			Path: path.Join(membersDir.Path, id), CreatedIndex: idx, ModifiedIndex: idx,
			Children: map[string]*v2Node{"raftAttributes": {Path: key, CreatedIndex: idx, ModifiedIndex: idx, Value: string(attrs)}},
		}
		events[i] = &v2Event{Action: "create", Node: &v2EventedNode{Key: key, Value: string(attrs), ModifiedIndex: idx, CreatedIndex: idx}}
	}
	n := uint64(len(c.members))
	membersDir.CreatedIndex, membersDir.ModifiedIndex = 1, 1
	st := v2Store{
		Root: &v2Node{Path: "/", Children: map[string]*v2Node{
			"0": {Path: "/0", Children: map[string]*v2Node{"members": membersDir}},
			"1": {Path: "/1", Children: map[string]*v2Node{}},
		}},
		WatcherHub: v2WatcherHub{EventHistory: v2EventHistory{
			Queue:      v2EventQueue{Events: events, Size: len(c.members), Back: len(c.members), Capacity: v2EventHistoryCapacity},
			StartIndex: 1, LastIndex: n,
		}},
		CurrentIndex:   n,
		Stats:          v2Stats{GetFail: 1, CreateSuccess: n},
		CurrentVersion: 2,
	}
	b, err := json.Marshal(&st)
	if err != nil {
		return nil, fmt.Errorf("encode v2 store: %w", err)
	}
	return b, nil
}
