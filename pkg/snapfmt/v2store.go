package snapfmt

import (
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
)

// The data of a .snap file is the JSON of etcd's old v2 store. etcd 3.7
// writes it from its membership when it takes a snapshot and no longer
// reads it; etcd 3.6 loads it at start and refuses to start on anything
// else. It holds a tree of nodes under "/0" (the cluster: members, removed
// members, cluster version) and "/1" (v2 keys, none), the event history of
// the writes that built the tree, and counters.

// V2Member is a member as the v2 store holds it. A member that has not
// published its name and client URLs has no attributes node.
type V2Member struct {
	ID         uint64
	PeerURLs   []string
	IsLearner  bool
	Name       string
	ClientURLs []string
}

// V2Membership is what a .snap file's v2 store records.
type V2Membership struct {
	Members []V2Member // in the order the nodes are created
	Removed []uint64
	// ClusterVersion ("3.7.0") is left out when empty.
	ClusterVersion string
}

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
		Children      map[string]*v2Node // nil for a leaf
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
		Action string        `json:"action"`
		Node   v2EventedNode `json:"node"`
	}
	v2EventedNode struct {
		Key           string `json:"key"`
		Value         string `json:"value"`
		ModifiedIndex uint64 `json:"modifiedIndex"`
		CreatedIndex  uint64 `json:"createdIndex"`
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

// v2Builder replays the writes that build a v2 store: each write takes the
// next index, creates its node and the directories above it, and is
// recorded in the event ring.
type v2Builder struct {
	root   *v2Node
	index  uint64
	events []*v2Event
	stats  v2Stats
}

// write stores value at key ("create" or "set").
func (b *v2Builder) write(action, key, value string) {
	b.index++
	dir := b.root
	parts := strings.Split(strings.TrimPrefix(key, "/"), "/")
	for i, name := range parts[:len(parts)-1] {
		child, ok := dir.Children[name]
		if !ok {
			child = &v2Node{Path: "/" + path.Join(parts[:i+1]...), CreatedIndex: b.index, ModifiedIndex: b.index, Children: map[string]*v2Node{}}
			dir.Children[name] = child
		}
		dir = child
	}
	dir.Children[parts[len(parts)-1]] = &v2Node{Path: key, CreatedIndex: b.index, ModifiedIndex: b.index, Value: value}
	b.events = append(b.events, &v2Event{Action: action, Node: v2EventedNode{Key: key, Value: value, ModifiedIndex: b.index, CreatedIndex: b.index}})
	if action == "create" {
		b.stats.CreateSuccess++
	} else {
		b.stats.SetSuccess++
	}
}

// MarshalV2Store returns the v2 store JSON for m, as etcd 3.7 writes it in
// a snapshot: for each member its raftAttributes then its attributes, then
// the removed members, then the cluster version, at indexes 1, 2, 3...
func MarshalV2Store(m V2Membership) ([]byte, error) {
	b := &v2Builder{root: &v2Node{Path: "/", Children: map[string]*v2Node{
		"0": {Path: "/0", Children: map[string]*v2Node{}},
		"1": {Path: "/1", Children: map[string]*v2Node{}},
	}}}
	b.stats.GetFail = 1 // etcd looks the cluster version up before setting it
	for _, mem := range m.Members {
		dir := "/0/members/" + strconv.FormatUint(mem.ID, 16)
		raft, err := json.Marshal(struct {
			PeerURLs  []string `json:"peerURLs"`
			IsLearner bool     `json:"isLearner,omitempty"`
		}{mem.PeerURLs, mem.IsLearner})
		if err != nil {
			return nil, fmt.Errorf("encode v2 store: %w", err)
		}
		b.write("create", dir+"/raftAttributes", string(raft))
		if mem.Name == "" && len(mem.ClientURLs) == 0 {
			continue
		}
		attrs, err := json.Marshal(struct {
			Name       string   `json:"name,omitempty"`
			ClientURLs []string `json:"clientURLs,omitempty"`
		}{mem.Name, mem.ClientURLs})
		if err != nil {
			return nil, fmt.Errorf("encode v2 store: %w", err)
		}
		b.write("set", dir+"/attributes", string(attrs))
	}
	for _, id := range m.Removed {
		b.write("create", "/0/removed_members/"+strconv.FormatUint(id, 16), "")
	}
	if m.ClusterVersion != "" {
		b.write("set", "/0/version", m.ClusterVersion)
	}
	out, err := json.Marshal(&v2Store{
		Root:           b.root,
		WatcherHub:     v2WatcherHub{EventHistory: b.history()},
		CurrentIndex:   b.index,
		Stats:          b.stats,
		CurrentVersion: 2,
	})
	if err != nil {
		return nil, fmt.Errorf("encode v2 store: %w", err)
	}
	return out, nil
}

// history is the ring of the last v2EventHistoryCapacity events.
func (b *v2Builder) history() v2EventHistory {
	ring := make([]*v2Event, v2EventHistoryCapacity)
	for i, e := range b.events {
		ring[i%v2EventHistoryCapacity] = e
	}
	n := len(b.events)
	size := min(n, v2EventHistoryCapacity)
	q := v2EventQueue{Events: ring, Size: size, Back: n % v2EventHistoryCapacity, Capacity: v2EventHistoryCapacity}
	if n >= v2EventHistoryCapacity {
		q.Front = q.Back
	}
	h := v2EventHistory{Queue: q, LastIndex: b.index}
	if n > 0 {
		h.StartIndex = b.index - uint64(size) + 1
	}
	return h
}
