package api

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
)

// TestRangeOverGRPCAnswersAsTheStore: ranges answered in their wire form
// (and the sorted one, which takes the decoding path) reach a gRPC client
// as the store's answer with the member's full header, as before.
func TestRangeOverGRPCAnswersAsTheStore(t *testing.T) {
	m := startInProcess(t, 1, nil)[0]
	kv := pb.NewKVClient(m.dial(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, k := range []string{"a", "b", "c", "b"} {
		if _, err := kv.Put(ctx, &pb.PutRequest{Key: []byte(k), Value: []byte("v-" + k)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, req := range []*pb.RangeRequest{
		{Key: []byte("a"), RangeEnd: []byte("z")},
		{Key: []byte("a"), RangeEnd: []byte("z"), Limit: 2},
		{Key: []byte("a"), RangeEnd: []byte("z"), KeysOnly: true, Serializable: true},
		{Key: []byte("a"), RangeEnd: []byte("z"), CountOnly: true},
		{Key: []byte("a"), RangeEnd: []byte("z"), SortOrder: pb.RangeRequest_DESCEND},
	} {
		got, err := kv.Range(ctx, req)
		if err != nil {
			t.Fatalf("%v: %v", req, err)
		}
		want, err := m.s.Store().Range(req)
		if err != nil {
			t.Fatal(err)
		}
		want.Header = m.a.header(want.Header.Revision)
		if !proto.Equal(got, want) {
			t.Errorf("%v:\n got %v\nwant %v", req, got, want)
		}
		if got.Header.ClusterId == 0 || got.Header.MemberId == 0 || got.Header.RaftTerm == 0 {
			t.Errorf("%v: header %v", req, got.Header)
		}
	}
	if _, err := kv.Range(ctx, &pb.RangeRequest{Key: []byte("a"), Revision: 1 << 40}); err == nil || !strings.Contains(err.Error(), "future revision") {
		t.Errorf("future revision: %v", err)
	}
}

// TestRangeBuffersAreReusedOnlyOnceSent: ranges answered at the same time,
// of answers from 100 bytes to over a megabyte (past the flow-control
// window, so that gRPC still holds an answer while the next ones are
// built), each arrive whole: a buffer goes back to rangeBuffers only once
// gRPC has written it.
func TestRangeBuffersAreReusedOnlyOnceSent(t *testing.T) {
	m := startInProcess(t, 1, nil)[0]
	kv := pb.NewKVClient(m.dial(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Prefix p holds 1<<p keys whose values are the prefix's letter.
	const prefixes = 11
	for p := range prefixes {
		val := strings.Repeat(string(rune('a'+p)), 1000)
		for i := range 1 << p {
			if _, err := kv.Put(ctx, &pb.PutRequest{Key: fmt.Appendf(nil, "%c/%05d", 'a'+p, i), Value: []byte(val)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 40 {
				p := (g + i) % prefixes
				prefix := fmt.Sprintf("%c/", 'a'+p)
				resp, err := kv.Range(ctx, &pb.RangeRequest{Key: []byte(prefix), RangeEnd: []byte(fmt.Sprintf("%c0", 'a'+p))})
				if err != nil {
					errs <- err
					return
				}
				if len(resp.Kvs) != 1<<p {
					errs <- fmt.Errorf("range %s: %d keys, want %d", prefix, len(resp.Kvs), 1<<p)
					return
				}
				for _, kv := range resp.Kvs {
					if !bytes.HasPrefix(kv.Key, []byte(prefix)) || strings.Trim(string(kv.Value), string(rune('a'+p))) != "" {
						errs <- fmt.Errorf("range %s: key %q, value %.20q...", prefix, kv.Key, kv.Value)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
