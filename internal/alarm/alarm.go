// Package alarm is the table of a cluster's raised alarms (NOSPACE,
// CORRUPT), mirrored in the alarm bucket of the store: loaded at start,
// changed by the alarm requests of the log as they are applied. It holds
// no goroutine and may import pkg/store, never internal/.
package alarm

import (
	"fmt"
	"sort"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/store"
)

// Alarms are the raised alarms of the cluster, mirrored in the alarm bucket
// (key: the marshalled AlarmMember, value: empty). They are safe for
// concurrent use.
type Alarms struct {
	mu     sync.RWMutex
	active map[alarmKey]bool
}

type alarmKey struct {
	member uint64
	alarm  pb.AlarmType
}

// New returns an empty table.
func New() *Alarms { return &Alarms{active: map[alarmKey]bool{}} }

// Load reads the alarm bucket of s, in place of what the table held.
func (a *Alarms) Load(s *store.Store) error {
	rt := s.Backend().Read()
	defer rt.Close()
	active := map[alarmKey]bool{}
	var decodeErr error
	err := rt.Range(store.BucketAlarm, nil, nil, func(k, _ []byte) bool {
		m := new(pb.AlarmMember)
		if err := proto.Unmarshal(k, m); err != nil {
			decodeErr = fmt.Errorf("alarm %x: %w", k, err)
			return false
		}
		active[alarmKey{m.MemberID, m.Alarm}] = true
		return true
	})
	if err == nil {
		err = decodeErr
	}
	a.mu.Lock()
	a.active = active
	a.mu.Unlock()
	return err
}

// NoSpace reports whether a NOSPACE alarm is raised, for any member.
func (a *Alarms) NoSpace() bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	for k := range a.active {
		if k.alarm == pb.AlarmType_NOSPACE {
			return true
		}
	}
	return false
}

// Corrupt reports whether a CORRUPT alarm is raised, for any member.
func (a *Alarms) Corrupt() bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	for k := range a.active {
		if k.alarm == pb.AlarmType_CORRUPT {
			return true
		}
	}
	return false
}

// List returns the raised alarms, filtered by member and type (0/NONE:
// all), ordered by member then type.
func (a *Alarms) List(member uint64, t pb.AlarmType) []*pb.AlarmMember {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var out []*pb.AlarmMember
	for k := range a.active {
		if (member == 0 || k.member == member) && (t == pb.AlarmType_NONE || k.alarm == t) {
			out = append(out, &pb.AlarmMember{MemberID: k.member, Alarm: k.alarm})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].MemberID != out[j].MemberID {
			return out[i].MemberID < out[j].MemberID
		}
		return out[i].Alarm < out[j].Alarm
	})
	return out
}

// Apply raises, clears or lists alarms as an alarm request of the log
// says, in the apply transaction w.
func (a *Alarms) Apply(w *store.WriteTxn, req *pb.AlarmRequest) (*pb.AlarmResponse, error) {
	resp := &pb.AlarmResponse{Header: &pb.ResponseHeader{Revision: w.Rev()}}
	key := alarmKey{req.MemberID, req.Alarm}
	switch req.Action {
	case pb.AlarmRequest_GET:
		resp.Alarms = a.List(req.MemberID, req.Alarm)
		return resp, nil
	case pb.AlarmRequest_ACTIVATE:
		if req.Alarm == pb.AlarmType_NONE {
			return resp, nil
		}
		if err := w.Backend().Put(store.BucketAlarm, alarmBytes(key), nil); err != nil {
			return nil, err
		}
		a.mu.Lock()
		a.active[key] = true
		a.mu.Unlock()
		resp.Alarms = []*pb.AlarmMember{{MemberID: key.member, Alarm: key.alarm}}
	case pb.AlarmRequest_DEACTIVATE:
		a.mu.Lock()
		was := a.active[key]
		delete(a.active, key)
		a.mu.Unlock()
		if !was {
			return resp, nil
		}
		if err := w.Backend().Delete(store.BucketAlarm, alarmBytes(key)); err != nil {
			return nil, err
		}
		resp.Alarms = []*pb.AlarmMember{{MemberID: key.member, Alarm: key.alarm}}
	}
	return resp, nil
}

func alarmBytes(k alarmKey) []byte {
	b, _ := proto.Marshal(&pb.AlarmMember{MemberID: k.member, Alarm: k.alarm})
	return b
}

// RefusedWhenCorrupt reports whether a request fails while the CORRUPT
// alarm is raised: as in etcd, everything that writes or compacts the
// keyspace, and leases being granted or revoked. Reads (read-only txns
// included) are still served.
func RefusedWhenCorrupt(req *pb.InternalRaftRequest) bool {
	switch {
	case req.Put != nil, req.DeleteRange != nil, req.Compaction != nil, req.LeaseGrant != nil, req.LeaseRevoke != nil:
		return true
	case req.Txn != nil:
		return txnWrites(req.Txn)
	}
	return false
}

func txnWrites(t *pb.TxnRequest) bool {
	for _, ops := range [][]*pb.RequestOp{t.Success, t.Failure} {
		for _, op := range ops {
			if op.GetRequestPut() != nil || op.GetRequestDeleteRange() != nil || (op.GetRequestTxn() != nil && txnWrites(op.GetRequestTxn())) {
				return true
			}
		}
	}
	return false
}
