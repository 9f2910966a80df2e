package grpcproxy

import (
	"context"
	"fmt"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/metadata"
)

func answerAt(rev int64) *pb.RangeResponse {
	return &pb.RangeResponse{Header: &pb.ResponseHeader{Revision: rev}}
}

// An answer is kept only when the watch will show every change after it,
// and is dropped by a change in its range or by age.
func TestRangeCache(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newRangeCache(newMetrics())
	c.now = func() time.Time { return now }
	one := &pb.RangeRequest{Key: []byte("a"), Serializable: true}
	prefix := &pb.RangeRequest{Key: []byte("p/"), RangeEnd: []byte("p0"), Serializable: true}
	from := &pb.RangeRequest{Key: []byte("q"), RangeEnd: []byte{0}, Serializable: true}
	key := func(r *pb.RangeRequest) string {
		k, ok := cacheable(context.Background(), r)
		if !ok {
			t.Fatalf("%v not cacheable", r)
		}
		return k
	}
	has := func(r *pb.RangeRequest) bool {
		_, ok := c.get(key(r))
		return ok
	}

	c.put(key(one), one, answerAt(5))
	if has(one) {
		t.Fatal("kept with no watch")
	}
	if !c.startWatch() || c.startWatch() {
		t.Fatal("the watch starts once")
	}
	c.put(key(one), one, answerAt(5))
	if has(one) {
		t.Fatal("kept before the watch knows its start")
	}
	c.watchStarted(5)
	c.put(key(one), one, answerAt(4))
	if has(one) {
		t.Fatal("kept an answer older than the watch's start")
	}
	for _, r := range []*pb.RangeRequest{one, prefix, from} {
		c.put(key(r), r, answerAt(6))
		if !has(r) {
			t.Fatalf("%v not kept", r)
		}
	}
	c.changed([]byte("p/x"), 7)
	if !has(one) || has(prefix) || !has(from) {
		t.Fatal("a change under p/ drops only the prefix's answer")
	}
	c.put(key(prefix), prefix, answerAt(6))
	if has(prefix) {
		t.Fatal("kept an answer older than a change the watch has applied")
	}
	c.changed([]byte("z"), 8)
	if !has(one) || has(from) {
		t.Fatal("a change at z drops only the answer from q on")
	}
	c.changed([]byte("ab"), 9)
	if !has(one) {
		t.Fatal("a change of another key dropped a key's answer")
	}
	c.wrote(&pb.PutRequest{Key: []byte("a")}, &pb.PutResponse{Header: &pb.ResponseHeader{Revision: 10}})
	if has(one) {
		t.Fatal("a put through the proxy left its key's answer")
	}
	c.put(key(one), one, answerAt(10))
	c.put(key(prefix), prefix, answerAt(10))
	c.wrote(&pb.TxnRequest{}, &pb.TxnResponse{Header: &pb.ResponseHeader{Revision: 11}})
	if has(one) || has(prefix) {
		t.Fatal("a txn through the proxy left answers")
	}
	c.put(key(one), one, answerAt(11))
	now = now.Add(cacheMaxAge + time.Millisecond)
	if has(one) {
		t.Fatal("an answer outlived cacheMaxAge")
	}

	for i := range cacheEntries + 10 {
		r := &pb.RangeRequest{Key: fmt.Appendf(nil, "k%d", i), Serializable: true}
		c.put(key(r), r, answerAt(11))
	}
	if len(c.entries) != cacheEntries || c.lru.Len() != cacheEntries {
		t.Fatalf("%d entries, at most %d", len(c.entries), cacheEntries)
	}
	if has(&pb.RangeRequest{Key: []byte("k0"), Serializable: true}) {
		t.Fatal("the least recently used answer was kept")
	}

	c.watchEnded()
	if len(c.entries) != 0 || c.startWatch() {
		t.Fatal("a watch's end drops every answer and holds the next watch off")
	}
	now = now.Add(cacheRetry)
	if !c.startWatch() {
		t.Fatal("no watch after the retry delay")
	}
}

// Linearizable reads, reads at a revision, reads with a token or that
// require a leader are not answered from the cache.
func TestCacheable(t *testing.T) {
	md := func(k, v string) context.Context {
		return metadata.NewOutgoingContext(context.Background(), metadata.Pairs(k, v))
	}
	for _, tc := range []struct {
		ctx  context.Context
		r    *pb.RangeRequest
		want bool
	}{
		{context.Background(), &pb.RangeRequest{Key: []byte("a"), Serializable: true}, true},
		{context.Background(), &pb.RangeRequest{Key: []byte("a")}, false},
		{context.Background(), &pb.RangeRequest{Key: []byte("a"), Serializable: true, Revision: 3}, false},
		{md(rpctypes.TokenFieldNameGRPC, "tok"), &pb.RangeRequest{Key: []byte("a"), Serializable: true}, false},
		{md(rpctypes.MetadataRequireLeaderKey, rpctypes.MetadataHasLeader), &pb.RangeRequest{Key: []byte("a"), Serializable: true}, false},
	} {
		if _, got := cacheable(tc.ctx, tc.r); got != tc.want {
			t.Errorf("%v: cacheable %v, want %v", tc.r, got, tc.want)
		}
	}
}
