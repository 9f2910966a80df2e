package server

import (
	"fmt"
	"sort"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/store"
)

// alarms are the raised alarms of the cluster, mirrored in the alarm bucket
// (key: the marshalled AlarmMember, value: empty).
type alarms struct {
	mu     sync.RWMutex
	active map[alarmKey]bool
}

type alarmKey struct {
	member uint64
	alarm  pb.AlarmType
}

func newAlarms() *alarms { return &alarms{active: map[alarmKey]bool{}} }

func (a *alarms) load(s *store.Store) error {
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

func (a *alarms) noSpace() bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	for k := range a.active {
		if k.alarm == pb.AlarmType_NOSPACE {
			return true
		}
	}
	return false
}

// corrupt reports whether a CORRUPT alarm is raised, for any member.
func (a *alarms) corrupt() bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	for k := range a.active {
		if k.alarm == pb.AlarmType_CORRUPT {
			return true
		}
	}
	return false
}

// list returns the raised alarms, filtered by member and type (0/NONE: all).
func (a *alarms) list(member uint64, t pb.AlarmType) []*pb.AlarmMember {
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

// apply raises, clears or lists alarms as the log says.
func (a *alarms) apply(w *store.WriteTxn, req *pb.AlarmRequest, self uint64) (*pb.AlarmResponse, error) {
	resp := &pb.AlarmResponse{Header: &pb.ResponseHeader{Revision: w.Rev()}}
	key := alarmKey{req.MemberID, req.Alarm}
	switch req.Action {
	case pb.AlarmRequest_GET:
		resp.Alarms = a.list(req.MemberID, req.Alarm)
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

// Alarms returns the raised alarms.
func (s *Server) Alarms() []*pb.AlarmMember { return s.alarms.list(0, pb.AlarmType_NONE) }
