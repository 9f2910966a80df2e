package server

import (
	"sync"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/store"
)

// confHistory is raft's configuration (ConfState) as of each conf change
// applied since the member's last snapshot, so that a snapshot sent to a
// peer can say which members the db sent with it knows of.
type confHistory struct {
	// applying is held from the db write of a conf change to its record
	// here, and by whoever opens a db to describe it: a db that has the
	// change has it recorded too.
	applying sync.Mutex

	mu      sync.Mutex
	changes []confAt // by index, ascending
	seen    uint64   // every conf change at or below it is recorded
}

type confAt struct {
	index uint64
	cs    *raftpb.ConfState
}

// reset starts the history again at index (a snapshot loaded or installed).
func (h *confHistory) reset(index uint64, cs *raftpb.ConfState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changes = append(h.changes[:0], confAt{index, cs})
	h.seen = index
}

// see notes that the entry at index is being applied: a conf change there
// is recorded before a db that has it can be opened (applying).
func (h *confHistory) see(index uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = max(h.seen, index)
}

// record notes the configuration after the conf change at index. A change
// replayed at or below the last one known (a restart replays the log from
// the snapshot) replaces nothing.
func (h *confHistory) record(index uint64, cs *raftpb.ConfState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.changes); n > 0 && h.changes[n-1].index >= index {
		return
	}
	h.changes = append(h.changes, confAt{index, cs})
}

// forget drops what no snapshot from index on needs: every change but the
// last one at or below index.
func (h *confHistory) forget(index uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := 0
	for i+1 < len(h.changes) && h.changes[i+1].index <= index {
		i++
	}
	h.changes = h.changes[i:]
}

// at returns the configuration as of index, false if the history does not
// reach back that far or not yet up to it (a restart replaying its log to a
// db that is ahead of it).
func (h *confHistory) at(index uint64) (*raftpb.ConfState, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if index > h.seen {
		return nil, false
	}
	for i := len(h.changes) - 1; i >= 0; i-- {
		if h.changes[i].index <= index {
			return h.changes[i].cs, true
		}
	}
	return nil, false
}

// describeDB makes an outgoing snapshot message describe the db that goes
// with it. raft hands the transport the last snapshot the member stored,
// while the db is the current one, newer: a peer added since that snapshot
// is not in its ConfState, and the peer's raft refuses it ("attempted to
// restore snapshot but it is not in the ConfState"); the leader sent the
// same snapshot again and again until it stored a newer one, so a member
// added under light load did not join for seconds, and with no writes not
// at all. The message gets the db's own index and term (its consistent
// index) and the ConfState as of that index. The leader's raft, which
// thinks it sent the older snapshot, takes the peer's answer at the newer
// index as progress past it.
func (s *Server) describeDB(m *raftpb.Message, db *backend.Snapshot) {
	md := m.GetSnapshot().GetMetadata()
	index, err := store.DecodeUint64(db.Get(store.BucketMeta, store.MetaConsistentIndex))
	if err != nil || index <= md.GetIndex() {
		return
	}
	term, err := store.DecodeUint64(db.Get(store.BucketMeta, store.MetaTerm))
	if err != nil || term == 0 {
		return
	}
	cs, ok := s.confs.at(index)
	if !ok {
		return
	}
	m.Snapshot.Metadata = &raftpb.SnapshotMetadata{
		Index:     proto.Uint64(index),
		Term:      proto.Uint64(term),
		ConfState: proto.Clone(cs).(*raftpb.ConfState),
	}
}
