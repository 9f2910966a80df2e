package store

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/cairnkv/cairn/pkg/backend"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

var modelSeed = flag.Int64("store.seed", 0, "seed of TestModel (0: time-based)")

// modelKV is a key's state in the reference model.
type modelKV struct {
	value                   string
	create, mod, ver, lease int64
}

// model is a plain in-memory statement of the data model: the full state
// at every revision, and the events of every revision.
type model struct {
	rev        int64
	compactRev int64
	states     map[int64]map[string]modelKV
	events     map[int64][]*mvccpb.Event
}

func newModel() *model {
	return &model{rev: 1, states: map[int64]map[string]modelKV{1: {}}, events: map[int64][]*mvccpb.Event{}}
}

func (m *model) current() map[string]modelKV { return m.states[m.rev] }

// begin returns a copy of the current state to change as revision rev+1.
func (m *model) begin() map[string]modelKV {
	next := make(map[string]modelKV, len(m.current()))
	for k, v := range m.current() {
		next[k] = v
	}
	return next
}

func (m *model) commit(next map[string]modelKV, evs []*mvccpb.Event) {
	if len(evs) == 0 {
		return
	}
	m.rev++
	m.states[m.rev] = next
	m.events[m.rev] = evs
}

func (m *model) put(next map[string]modelKV, evs []*mvccpb.Event, key, value string, lease int64) []*mvccpb.Event {
	rev := m.rev + 1
	kv := modelKV{value: value, create: rev, mod: rev, ver: 1, lease: lease}
	if old, ok := next[key]; ok {
		kv.create, kv.ver = old.create, old.ver+1
	}
	next[key] = kv
	return append(evs, &mvccpb.Event{Type: mvccpb.PUT, Kv: kv.proto(key)})
}

func (m *model) del(next map[string]modelKV, evs []*mvccpb.Event, key, end string) []*mvccpb.Event {
	for _, k := range sortedKeys(next) {
		if inModelRange(k, key, end) {
			delete(next, k)
			evs = append(evs, &mvccpb.Event{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte(k), ModRevision: m.rev + 1}})
		}
	}
	return evs
}

func (kv modelKV) proto(key string) *mvccpb.KeyValue {
	return &mvccpb.KeyValue{Key: []byte(key), Value: []byte(kv.value), CreateRevision: kv.create, ModRevision: kv.mod, Version: kv.ver, Lease: kv.lease}
}

func inModelRange(k, key, end string) bool {
	if end == "" {
		return k == key
	}
	return k >= key && k < end
}

func sortedKeys(state map[string]modelKV) []string {
	keys := make([]string, 0, len(state))
	for k := range state {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// modelWatch collects the responses of one watcher.
type modelWatch struct {
	stream   *modelStream
	id       WatchID
	key, end string
	start    int64
	mu       sync.Mutex
	events   []*mvccpb.Event
	progress int64
	compact  int64
}

// TestModel runs random puts, deletes, txns, compactions, historical ranges,
// restarts and watches against the store and checks each result against the
// model. Replay a failure with -store.seed=N.
func TestModel(t *testing.T) {
	seed := *modelSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -store.seed=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	const ops = 10000
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(Config{Backend: backend.Config{Path: path, BatchLimit: 97}, CompactionBatchLimit: 7, CompactionPause: time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	m := newModel()
	key := func() string { return fmt.Sprintf("k%02d", rng.Intn(24)) }
	keyRange := func() (string, string) {
		a, b := key(), key()
		if a > b {
			a, b = b, a
		}
		return a, b + "\x00"
	}

	var watches []*modelWatch
	var streams []*modelStream
	defer func() {
		for _, ms := range streams {
			ms.close()
		}
	}()
	for i := 0; i < ops; i++ {
		switch p := rng.Intn(100); {
		case p < 35: // put
			k, v := key(), fmt.Sprintf("v%d", i)
			resp, err := s.Put(&pb.PutRequest{Key: []byte(k), Value: []byte(v), PrevKv: true})
			if err != nil {
				t.Fatalf("op %d put: %v", i, err)
			}
			prev, had := m.current()[k]
			next := m.begin()
			m.commit(next, m.put(next, nil, k, v, 0))
			if resp.Header.Revision != m.rev {
				t.Fatalf("op %d put: revision %d, model %d", i, resp.Header.Revision, m.rev)
			}
			if had != (resp.PrevKv != nil) || (had && !kvEqual(resp.PrevKv, prev.proto(k))) {
				t.Fatalf("op %d put %s: prev %v, model %v (%v)", i, k, resp.PrevKv, prev, had)
			}
		case p < 45: // delete a key or a range
			k, end := key(), ""
			if rng.Intn(2) == 0 {
				k, end = keyRange()
			}
			resp, err := s.DeleteRange(&pb.DeleteRangeRequest{Key: []byte(k), RangeEnd: []byte(end)})
			if err != nil {
				t.Fatalf("op %d delete: %v", i, err)
			}
			next := m.begin()
			evs := m.del(next, nil, k, end)
			m.commit(next, evs)
			if resp.Deleted != int64(len(evs)) || resp.Header.Revision != m.rev {
				t.Fatalf("op %d delete [%s,%s): deleted %d at %d, model %d at %d", i, k, end, resp.Deleted, resp.Header.Revision, len(evs), m.rev)
			}
		case p < 60: // txn: if <compare> then put a; delete b else put c
			runModelTxn(t, i, rng, s, m, key)
		case p < 62: // compact
			if m.rev > m.compactRev {
				rev := m.compactRev + 1 + rng.Int63n(m.rev-m.compactRev)
				if _, err := s.Compact(rev); err != nil {
					t.Fatalf("op %d compact %d: %v", i, rev, err)
				}
				m.compactRev = rev
			}
		case p < 63 && i < ops/2: // restart: the index is rebuilt from the file
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(Config{Backend: backend.Config{Path: path, BatchLimit: 97}, CompactionBatchLimit: 7}); err != nil {
				t.Fatalf("op %d reopen: %v", i, err)
			}
			if s.Rev() != m.rev || s.CompactRev() != m.compactRev {
				t.Fatalf("op %d reopen: rev %d compact %d, model %d %d", i, s.Rev(), s.CompactRev(), m.rev, m.compactRev)
			}
		case p < 66 && i >= ops/2: // watch from a random revision
			if len(streams) == 0 || rng.Intn(4) == 0 {
				streams = append(streams, startModelStream(s))
			}
			w := &modelWatch{stream: streams[len(streams)-1], start: m.compactRev + rng.Int63n(m.rev-m.compactRev+2)}
			if rng.Intn(2) == 0 {
				w.key = key()
			} else {
				w.key, w.end = keyRange()
			}
			if err := w.stream.watch(w); err != nil {
				t.Fatalf("op %d watch: %v", i, err)
			}
			if w.start == 0 {
				w.start = m.rev + 1
			}
			watches = append(watches, w)
		default: // range at a random revision, maybe with a limit
			checkModelRange(t, i, rng, s, m, keyRange)
		}
	}

	// Every watcher ends with all events of its range from its start, in
	// order and once each, or was told its start was compacted.
	deadline := time.Now().Add(30 * time.Second)
	for wi, w := range watches {
		for !w.caughtUp(m.rev) {
			if time.Now().After(deadline) {
				t.Fatalf("watch %d [%q,%q) from %d: no progress to %d", wi, w.key, w.end, w.start, m.rev)
			}
			w.stream.ws.RequestProgress(w.id)
			time.Sleep(time.Millisecond) // let the consumer take the response
		}
		checkModelWatch(t, wi, w, m)
	}
	compacted, events := 0, 0
	for _, w := range watches {
		events += len(w.events)
		if w.compact != 0 {
			compacted++
		}
	}
	t.Logf("%d ops: revision %d, compacted at %d, %d watchers (%d ended by compaction) received %d events",
		ops, m.rev, m.compactRev, len(watches), compacted, events)
	if len(watches) == 0 || events == 0 {
		t.Fatal("the run exercised no watch")
	}
}

// modelStream consumes a watch stream and files each response under its watcher.
type modelStream struct {
	ws   *WatchStream
	mu   sync.Mutex
	byID map[WatchID]*modelWatch
	done chan struct{}
}

func startModelStream(s *Store) *modelStream {
	ms := &modelStream{ws: s.NewWatchStream(), byID: map[WatchID]*modelWatch{}, done: make(chan struct{})}
	go func() {
		defer close(ms.done)
		for resp := range ms.ws.Chan() {
			if resp.Revision%7 == 0 {
				time.Sleep(time.Millisecond) // a slow consumer now and then, so watchers fall behind
			}
			ms.mu.Lock()
			w := ms.byID[resp.WatchID]
			ms.mu.Unlock()
			w.record(resp)
		}
	}()
	return ms
}

// watch starts w; the consumer cannot look w up before it is registered.
func (ms *modelStream) watch(w *modelWatch) error {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	id, err := ms.ws.Watch(AutoWatchID, []byte(w.key), []byte(w.end), w.start, WatchOptions{})
	w.id = id
	ms.byID[id] = w
	return err
}

func (ms *modelStream) close() {
	ms.ws.Close()
	<-ms.done
}

func (w *modelWatch) record(resp WatchResponse) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case resp.CompactRevision != 0:
		w.compact = resp.CompactRevision
	case len(resp.Events) == 0:
		w.progress = max(w.progress, resp.Revision)
	default:
		w.events = append(w.events, resp.Events...)
	}
}

func (w *modelWatch) caughtUp(rev int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.compact != 0 || w.progress >= rev
}

func checkModelWatch(t *testing.T, wi int, w *modelWatch, m *model) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	var want []*mvccpb.Event
	for rev := max(w.start, 1); rev <= m.rev; rev++ {
		for _, ev := range m.events[rev] {
			if inModelRange(string(ev.Kv.Key), w.key, w.end) {
				want = append(want, ev)
			}
		}
	}
	got := w.events
	if w.compact != 0 {
		if w.start >= w.compact {
			t.Fatalf("watch %d from %d: compacted at %d, but its start was not", wi, w.start, w.compact)
		}
		if len(got) > len(want) {
			t.Fatalf("watch %d: %d events before compaction, model has %d", wi, len(got), len(want))
		}
		want = want[:len(got)]
	}
	if len(got) != len(want) {
		t.Fatalf("watch %d [%q,%q) from %d: %d events, model %d", wi, w.key, w.end, w.start, len(got), len(want))
	}
	for i := range got {
		if got[i].Type != want[i].Type || !kvEqual(got[i].Kv, want[i].Kv) {
			t.Fatalf("watch %d event %d: %v, model %v", wi, i, got[i], want[i])
		}
	}
}

func runModelTxn(t *testing.T, i int, rng *rand.Rand, s *Store, m *model, key func() string) {
	t.Helper()
	ck, a, b, c := key(), key(), key(), key()
	for b == a {
		b = key()
	}
	target := pb.Compare_CompareTarget(rng.Intn(4))
	result := pb.Compare_CompareResult(rng.Intn(4))
	cmp := &pb.Compare{Key: []byte(ck), Target: target, Result: result}
	n := rng.Int63n(m.rev + 1)
	switch target {
	case pb.Compare_VERSION:
		n = rng.Int63n(4)
		cmp.TargetUnion = &pb.Compare_Version{Version: n}
	case pb.Compare_CREATE:
		cmp.TargetUnion = &pb.Compare_CreateRevision{CreateRevision: n}
	case pb.Compare_MOD:
		cmp.TargetUnion = &pb.Compare_ModRevision{ModRevision: n}
	case pb.Compare_VALUE:
		n = int64(i - rng.Intn(50))
		cmp.TargetUnion = &pb.Compare_Value{Value: []byte(fmt.Sprintf("v%d", n))}
	}
	va, vc := fmt.Sprintf("v%d", i), fmt.Sprintf("v%d", i)
	req := &pb.TxnRequest{
		Compare: []*pb.Compare{cmp},
		Success: []*pb.RequestOp{
			{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(a), Value: []byte(va)}}},
			{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte(b)}}},
			{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte(a)}}},
		},
		Failure: []*pb.RequestOp{
			{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(c), Value: []byte(vc)}}},
		},
	}
	resp, err := s.Txn(req)
	if err != nil {
		t.Fatalf("op %d txn: %v", i, err)
	}
	// The model's compare.
	kv, exists := m.current()[ck]
	var ok bool
	if target == pb.Compare_VALUE && !exists {
		ok = false
	} else {
		var order int
		switch target {
		case pb.Compare_VERSION:
			order = compareInt(kv.ver, n)
		case pb.Compare_CREATE:
			order = compareInt(kv.create, n)
		case pb.Compare_MOD:
			order = compareInt(kv.mod, n)
		case pb.Compare_VALUE:
			order = bytes.Compare([]byte(kv.value), cmp.GetValue())
		}
		ok = map[pb.Compare_CompareResult]bool{pb.Compare_EQUAL: order == 0, pb.Compare_NOT_EQUAL: order != 0,
			pb.Compare_GREATER: order > 0, pb.Compare_LESS: order < 0}[result]
	}
	next := m.begin()
	var evs []*mvccpb.Event
	if ok {
		evs = m.put(next, evs, a, va, 0)
		evs = m.del(next, evs, b, "")
	} else {
		evs = m.put(next, evs, c, vc, 0)
	}
	m.commit(next, evs)
	if resp.Succeeded != ok || resp.Header.Revision != m.rev {
		t.Fatalf("op %d txn: succeeded %v at %d, model %v at %d", i, resp.Succeeded, resp.Header.Revision, ok, m.rev)
	}
	if ok {
		rr := resp.Responses[2].GetResponseRange()
		if len(rr.Kvs) != 1 || !kvEqual(rr.Kvs[0], next[a].proto(a)) {
			t.Fatalf("op %d txn: range inside the txn saw %v, model %v", i, rr.Kvs, next[a])
		}
	}
}

func checkModelRange(t *testing.T, i int, rng *rand.Rand, s *Store, m *model, keyRange func() (string, string)) {
	t.Helper()
	k, end := keyRange()
	rev := rng.Int63n(m.rev + 3)
	limit := int64(0)
	if rng.Intn(3) == 0 {
		limit = 1 + rng.Int63n(5)
	}
	resp, err := s.Range(&pb.RangeRequest{Key: []byte(k), RangeEnd: []byte(end), Revision: rev, Limit: limit})
	switch {
	case rev > m.rev:
		if !errors.Is(err, ErrFutureRev) {
			t.Fatalf("op %d range at %d (current %d): %v, want ErrFutureRev", i, rev, m.rev, err)
		}
		return
	case rev != 0 && rev < m.compactRev:
		if !errors.Is(err, ErrCompacted) {
			t.Fatalf("op %d range at %d (compacted %d): %v, want ErrCompacted", i, rev, m.compactRev, err)
		}
		return
	case err != nil:
		t.Fatalf("op %d range [%s,%s) at %d: %v", i, k, end, rev, err)
	}
	if rev == 0 {
		rev = m.rev
	}
	state := m.states[rev]
	var want []*mvccpb.KeyValue
	for _, key := range sortedKeys(state) {
		if inModelRange(key, k, end) {
			want = append(want, state[key].proto(key))
		}
	}
	if resp.Count != int64(len(want)) || resp.Header.Revision != m.rev {
		t.Fatalf("op %d range [%s,%s) at %d: count %d header %d, model %d at %d", i, k, end, rev, resp.Count, resp.Header.Revision, len(want), m.rev)
	}
	more := false
	if limit > 0 && int64(len(want)) > limit {
		want, more = want[:limit], true
	}
	if len(resp.Kvs) != len(want) || resp.More != more {
		t.Fatalf("op %d range [%s,%s) at %d limit %d: %d kvs more=%v, model %d more=%v", i, k, end, rev, limit, len(resp.Kvs), resp.More, len(want), more)
	}
	for j := range want {
		if !kvEqual(resp.Kvs[j], want[j]) {
			t.Fatalf("op %d range at %d: kv %d = %v, model %v", i, rev, j, resp.Kvs[j], want[j])
		}
	}
}

func kvEqual(a, b *mvccpb.KeyValue) bool {
	return bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Value, b.Value) && a.CreateRevision == b.CreateRevision &&
		a.ModRevision == b.ModRevision && a.Version == b.Version && a.Lease == b.Lease
}
