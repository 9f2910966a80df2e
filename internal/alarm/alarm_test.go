package alarm

import (
	"path/filepath"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/store"
)

// TestApplyAndLoad: alarms raised and cleared by Apply are listed in order,
// answer NoSpace and Corrupt, and come back from the bucket with Load.
func TestApplyAndLoad(t *testing.T) {
	st, err := store.Open(store.Config{Backend: backend.Config{Path: filepath.Join(t.TempDir(), "db")}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := st.Write()
	if err := w.Backend().CreateBucket(store.BucketAlarm); err != nil {
		t.Fatal(err)
	}
	a := New()
	apply := func(action pb.AlarmRequest_AlarmAction, member uint64, alarm pb.AlarmType) *pb.AlarmResponse {
		t.Helper()
		resp, err := a.Apply(w, &pb.AlarmRequest{Action: action, MemberID: member, Alarm: alarm})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	apply(pb.AlarmRequest_ACTIVATE, 2, pb.AlarmType_CORRUPT)
	apply(pb.AlarmRequest_ACTIVATE, 1, pb.AlarmType_NOSPACE)
	apply(pb.AlarmRequest_ACTIVATE, 1, pb.AlarmType_CORRUPT)
	if got := apply(pb.AlarmRequest_DEACTIVATE, 3, pb.AlarmType_NOSPACE); len(got.Alarms) != 0 {
		t.Errorf("clearing an alarm not raised answered %v", got.Alarms)
	}
	if got := apply(pb.AlarmRequest_GET, 1, pb.AlarmType_NONE); len(got.Alarms) != 2 || got.Alarms[0].Alarm != pb.AlarmType_NOSPACE {
		t.Errorf("GET for member 1: %v, want NOSPACE then CORRUPT", got.Alarms)
	}
	apply(pb.AlarmRequest_DEACTIVATE, 1, pb.AlarmType_NOSPACE)
	if err := w.End(); err != nil {
		t.Fatal(err)
	}
	if a.NoSpace() || !a.Corrupt() {
		t.Errorf("NoSpace %v, Corrupt %v after clearing NOSPACE, want false, true", a.NoSpace(), a.Corrupt())
	}
	loaded := New()
	if err := loaded.Load(st); err != nil {
		t.Fatal(err)
	}
	got := loaded.List(0, pb.AlarmType_NONE)
	if len(got) != 2 || got[0].MemberID != 1 || got[1].MemberID != 2 || got[0].Alarm != pb.AlarmType_CORRUPT {
		t.Errorf("loaded %v, want CORRUPT for members 1 and 2", got)
	}
}
