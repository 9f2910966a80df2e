package store

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cairnkv/cairn/pkg/backend"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

var benchValue = make([]byte, 256)

func BenchmarkPut(b *testing.B) {
	s := openTestStore(b)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := s.Put(&pb.PutRequest{Key: fmt.Appendf(nil, "key-%07d", i%100000), Value: benchValue}); err != nil {
			b.Fatal(err)
		}
	}
}

func benchStoreWithKeys(b *testing.B, n int) *Store {
	s := openTestStore(b)
	for i := 0; i < n; i++ {
		if _, err := s.Put(&pb.PutRequest{Key: fmt.Appendf(nil, "key-%07d", i), Value: benchValue}); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

func BenchmarkRangeSingleKey(b *testing.B) {
	s := benchStoreWithKeys(b, 10000)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		resp, err := s.Range(&pb.RangeRequest{Key: fmt.Appendf(nil, "key-%07d", i%10000)})
		if err != nil || len(resp.Kvs) != 1 {
			b.Fatal(resp, err)
		}
	}
}

func BenchmarkRange1000Keys(b *testing.B) {
	s := benchStoreWithKeys(b, 10000)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := s.Range(&pb.RangeRequest{Key: []byte("key-0001000"), RangeEnd: []byte("key-0002000")})
		if err != nil || len(resp.Kvs) != 1000 {
			b.Fatal(len(resp.Kvs), err)
		}
	}
}

func BenchmarkTxn(b *testing.B) {
	s := benchStoreWithKeys(b, 1000)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		k := fmt.Appendf(nil, "key-%07d", i%1000)
		_, err := s.Txn(&pb.TxnRequest{
			Compare: []*pb.Compare{{Key: k, Target: pb.Compare_VERSION, Result: pb.Compare_GREATER, TargetUnion: &pb.Compare_Version{Version: 0}}},
			Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: k, Value: benchValue}}}},
			Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: k}}}},
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWatchFanOut measures one put delivered to 1,000 watchers of the
// key, each on a stream of its own, read by one goroutine per stream.
func BenchmarkWatchFanOut(b *testing.B) {
	s := openTestStore(b)
	const watchers = 1000
	received := make(chan struct{}, watchers)
	for i := 0; i < watchers; i++ {
		ws := s.NewWatchStream()
		b.Cleanup(ws.Close)
		ws.Watch(AutoWatchID, []byte("hot"), nil, 0, WatchOptions{})
		go func() {
			for resp := range ws.Chan() {
				for range resp.Events {
					received <- struct{}{}
				}
			}
		}()
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Put(&pb.PutRequest{Key: []byte("hot"), Value: benchValue}); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < watchers; i++ {
			<-received
		}
	}
}

// BenchmarkWatchFanOutPrefix10k measures one put delivered to 10,000
// watchers of one prefix, 100 on each of 100 streams, read by one goroutine
// per stream: from the put until every watcher's event is off its stream's
// channel.
func BenchmarkWatchFanOutPrefix10k(b *testing.B) {
	s := openTestStore(b)
	const streams, perStream = 100, 100
	var received sync.WaitGroup
	for range streams {
		ws := s.NewWatchStream()
		b.Cleanup(ws.Close)
		for range perStream {
			if _, err := ws.Watch(AutoWatchID, []byte("p/"), []byte("p0"), 0, WatchOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		go func() {
			for resp := range ws.Chan() {
				ws.EventsReceived(len(resp.Events))
				for range resp.Events {
					received.Done()
				}
			}
		}()
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		received.Add(streams * perStream)
		if _, err := s.Put(&pb.PutRequest{Key: fmt.Appendf(nil, "p/%d", i%100), Value: benchValue}); err != nil {
			b.Fatal(err)
		}
		received.Wait()
	}
}

// BenchmarkIndexRebuild1M measures opening a file of 1,000,000 revisions
// (100,000 keys, 10 revisions each): reading the key bucket and rebuilding
// the key index.
func BenchmarkIndexRebuild1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "db")
	s, err := Open(Config{Backend: backend.Config{Path: path, BatchLimit: 100000}})
	if err != nil {
		b.Fatal(err)
	}
	const revisions = 1000000
	for i := 0; i < revisions; i++ {
		if _, err := s.Put(&pb.PutRequest{Key: fmt.Appendf(nil, "key-%07d", i%100000), Value: benchValue[:16]}); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	for b.Loop() {
		s, err := Open(Config{Backend: backend.Config{Path: path}})
		if err != nil {
			b.Fatal(err)
		}
		if s.Rev() != revisions+1 {
			b.Fatalf("rev %d", s.Rev())
		}
		s.Close()
	}
}

// BenchmarkWatchCatchUp measures 200 watchers of one prefix, 20 on each
// of 10 streams, created one after another at a revision 10,000 back (a
// reconnect storm), each stream's once the one before has had its first
// response: from the first creation until every watcher has every event,
// each response's events encoded as the API sends them. Watchers created a
// step apart catch up a step apart: the allocated bytes show whether their
// events are picked and encoded once or once per step.
func BenchmarkWatchCatchUp(b *testing.B) {
	s := openTestStore(b)
	const revs, streams, perStream = 10000, 10, 20
	for i := range revs {
		if _, err := s.Put(&pb.PutRequest{Key: fmt.Appendf(nil, "p/%04d", i%1000), Value: benchValue}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		var caughtUp sync.WaitGroup
		var all []*WatchStream
		var firsts []chan struct{}
		for range streams {
			ws := s.NewWatchStream()
			all = append(all, ws)
			got := map[WatchID]int{}
			caughtUp.Add(perStream)
			first := make(chan struct{})
			firsts = append(firsts, first)
			go func() {
				for resp := range ws.Chan() {
					if first != nil {
						close(first)
						first = nil
					}
					if resp.Encoded != nil {
						if _, err := resp.Encoded.Bytes(); err != nil {
							panic(err)
						}
					}
					ws.EventsReceived(len(resp.Events))
					if got[resp.WatchID] += len(resp.Events); got[resp.WatchID] == revs && len(resp.Events) > 0 {
						caughtUp.Done()
					}
				}
			}()
		}
		for i, ws := range all {
			for range perStream {
				if _, err := ws.Watch(AutoWatchID, []byte("p/"), []byte("p0"), 2, WatchOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			<-firsts[i] // the next stream's watchers start a step behind
		}
		caughtUp.Wait()
		for _, ws := range all {
			ws.Close()
		}
	}
}
