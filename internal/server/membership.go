package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/cluster"
	"github.com/cairnkv/cairn/pkg/store"
)

// Member is a member of the cluster, as the members bucket stores it.
type Member = cluster.Member

// membership is the cluster's member list, mirrored in the members bucket.
type membership struct {
	mu      sync.RWMutex
	members map[uint64]*Member
	removed map[uint64]bool
}

func newMembership() *membership {
	return &membership{members: map[uint64]*Member{}, removed: map[uint64]bool{}}
}

// load reads the members buckets.
func (ms *membership) load(s *store.Store) error {
	rt := s.Backend().Read()
	defer rt.Close()
	members := map[uint64]*Member{}
	var decodeErr error
	err := rt.Range(store.BucketMembers, nil, nil, func(k, v []byte) bool {
		m, err := cluster.UnmarshalMember(v)
		if err != nil {
			decodeErr = fmt.Errorf("member %s: %w", k, err)
			return false
		}
		members[m.ID] = &m
		return true
	})
	if err == nil {
		err = decodeErr
	}
	if err != nil {
		return err
	}
	removed := map[uint64]bool{}
	rt.Range(store.BucketMembersRemoved, nil, nil, func(k, _ []byte) bool {
		if id, err := cluster.ParseMemberKey(k); err == nil {
			removed[id] = true
		}
		return true
	})
	ms.mu.Lock()
	ms.members, ms.removed = members, removed
	ms.mu.Unlock()
	return nil
}

// save writes one member in the apply transaction.
func (ms *membership) save(wt *backend.WriteTx, m *Member) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	ms.mu.Lock()
	cp := *m
	ms.members[m.ID] = &cp
	ms.mu.Unlock()
	return wt.Put(store.BucketMembers, cluster.MemberKey(m.ID), data)
}

func (ms *membership) remove(wt *backend.WriteTx, id uint64) error {
	ms.mu.Lock()
	delete(ms.members, id)
	ms.removed[id] = true
	ms.mu.Unlock()
	if err := wt.Delete(store.BucketMembers, cluster.MemberKey(id)); err != nil {
		return err
	}
	return wt.Put(store.BucketMembersRemoved, cluster.MemberKey(id), cluster.MemberRemovedValue)
}

// get returns a copy of a member.
func (ms *membership) get(id uint64) (Member, bool) {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	m, ok := ms.members[id]
	if !ok {
		return Member{}, false
	}
	return *m, true
}

func (ms *membership) isRemoved(id uint64) bool {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	return ms.removed[id]
}

// list returns copies of all members ordered by ID.
func (ms *membership) list() []Member {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	out := make([]Member, 0, len(ms.members))
	for _, m := range ms.members {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// removedIDs returns the IDs of the removed members in order.
func (ms *membership) removedIDs() []uint64 {
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	ids := make([]uint64, 0, len(ms.removed))
	for id := range ms.removed {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
