package store

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cairnkv/cairn/pkg/keyindex"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

// TestRangeEncodedAnswersAsRange: for every shape of request it takes,
// RangeEncoded's bytes decode to Range's answer (the header apart, which
// the caller appends), errors included; sorted and filtered requests are
// not for it.
func TestRangeEncodedAnswersAsRange(t *testing.T) {
	s := openTestStore(t)
	for i := 0; i < 30; i++ {
		k := fmt.Sprintf("k%02d", i%12)
		if _, err := s.Put(&pb.PutRequest{Key: []byte(k), Value: fmt.Appendf(nil, "v%d", i), Lease: int64(i % 3)}); err != nil {
			t.Fatal(err)
		}
	}
	mustPut(t, s, "empty", "")
	if _, err := s.DeleteRange(&pb.DeleteRangeRequest{Key: []byte("k03"), RangeEnd: []byte("k05")}); err != nil {
		t.Fatal(err)
	}
	mid := s.Rev()
	mustPut(t, s, "k04", "back")
	done, _ := s.Compact(5)
	<-done
	reqs := []*pb.RangeRequest{
		{Key: []byte("k01")},
		{Key: []byte("nothing")},
		{Key: []byte("empty")},
		{Key: []byte("k"), RangeEnd: []byte("l")},
		{Key: []byte("\x00"), RangeEnd: []byte("\x00")},
		{Key: []byte("k"), RangeEnd: []byte("l"), Limit: 3},
		{Key: []byte("k"), RangeEnd: []byte("l"), Limit: 100},
		{Key: []byte("k"), RangeEnd: []byte("l"), KeysOnly: true},
		{Key: []byte("k"), RangeEnd: []byte("l"), KeysOnly: true, Limit: 2},
		{Key: []byte("k"), RangeEnd: []byte("l"), CountOnly: true},
		{Key: []byte("x"), RangeEnd: []byte("y"), CountOnly: true},
		{Key: []byte("k"), RangeEnd: []byte("l"), Revision: mid},
		{Key: []byte("k"), RangeEnd: []byte("l"), Revision: 6, KeysOnly: true},
		{Key: []byte("k"), RangeEnd: []byte("l"), Revision: 2},       // compacted
		{Key: []byte("k"), RangeEnd: []byte("l"), Revision: 1 << 40}, // future
		{Key: []byte("k"), RangeEnd: []byte("l"), SortOrder: pb.RangeRequest_ASCEND},
		{Key: nil}, // empty key
	}
	for _, req := range reqs {
		if !EncodedRangeOK(req) {
			t.Fatalf("%v: not taken", req)
		}
		want, wantErr := s.Range(req)
		enc, rev, err := s.RangeEncoded(req, nil)
		if !errors.Is(err, wantErr) {
			t.Errorf("%v: error %v, want %v", req, err, wantErr)
			continue
		}
		if err != nil {
			continue
		}
		var got pb.RangeResponse
		if err := proto.Unmarshal(enc, &got); err != nil {
			t.Fatalf("%v: %v", req, err)
		}
		got.Header = header(rev)
		if !proto.Equal(&got, want) {
			t.Errorf("%v:\n got %v\nwant %v", req, &got, want)
		}
	}
	for _, req := range []*pb.RangeRequest{
		{Key: []byte("k"), SortOrder: pb.RangeRequest_DESCEND},
		{Key: []byte("k"), SortTarget: pb.RangeRequest_VALUE},
		{Key: []byte("k"), SortTarget: pb.RangeRequest_MOD, SortOrder: pb.RangeRequest_ASCEND},
		{Key: []byte("k"), MinModRevision: 3},
		{Key: []byte("k"), MaxCreateRevision: 3},
	} {
		if EncodedRangeOK(req) {
			t.Errorf("%v: taken, but it needs the key-values decoded", req)
		}
	}
}

// TestLargeRangeFindsEveryValue: a range of more values than
// parallelLookups, whose keys were written in a scattered order and
// partly overwritten, some in the file and some still in the write
// buffer, answers every key with its newest value, in key order, both
// decoded and in its wire form.
func TestLargeRangeFindsEveryValue(t *testing.T) {
	s := openTestStore(t)
	const n = 3 * parallelLookups
	want := make([]string, n)
	put := func(i int, v string) {
		mustPut(t, s, fmt.Sprintf("key-%05d", i), v)
		want[i] = v
	}
	for i := range n {
		j := i * 7919 % n // every key once, neighbours far apart in revisions
		put(j, fmt.Sprintf("first %d", j))
	}
	if err := s.Backend().ForceCommit(); err != nil {
		t.Fatal(err)
	}
	for j := 0; j < n; j += 3 { // in the buffer, not yet in the file
		put(j, fmt.Sprintf("second %d", j))
	}
	req := &pb.RangeRequest{Key: []byte("key-"), RangeEnd: []byte("key.")}
	check := func(how string, kvs []*mvccpb.KeyValue) {
		t.Helper()
		if len(kvs) != n {
			t.Fatalf("%s: %d key-values, want %d", how, len(kvs), n)
		}
		for i, kv := range kvs {
			if k := fmt.Sprintf("key-%05d", i); string(kv.Key) != k || string(kv.Value) != want[i] {
				t.Fatalf("%s: key-value %d is %q = %q, want %q = %q", how, i, kv.Key, kv.Value, k, want[i])
			}
		}
	}
	resp, encoded := rangeBothWays(t, s, req)
	check("Range", resp.Kvs)
	check("RangeEncoded", encoded.Kvs)
}

// TestRangeLimitsAcrossWarmBatches: the index hands out keys a batch of
// keyindex.WarmBatch at a time; ranges whose limits fall before, on and after the
// edges of those batches, over keys of which some do not exist at the
// revision read, answer the keys a plain list of what was written gives,
// with their count and whether there are more, decoded and encoded,
// keys-only and with values.
func TestRangeLimitsAcrossWarmBatches(t *testing.T) {
	s := openTestStore(t)
	const n = 3*keyindex.WarmBatch + 7
	key := func(i int) string { return fmt.Sprintf("key-%03d", i) }
	for i := range n {
		mustPut(t, s, key(i), fmt.Sprintf("v%d", i))
	}
	deleted := func(i int) bool { return i%5 == 2 || (i > keyindex.WarmBatch && i < keyindex.WarmBatch+4) }
	for i := range n {
		if deleted(i) {
			if _, err := s.DeleteRange(&pb.DeleteRangeRequest{Key: []byte(key(i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := s.Rev()
	mustPut(t, s, key(2), "back") // exists now, not at before
	for _, rev := range []int64{0, before} {
		var want []string
		for i := range n {
			if !deleted(i) || (rev == 0 && i == 2) {
				want = append(want, key(i))
			}
		}
		for _, limit := range []int{0, 1, keyindex.WarmBatch - 1, keyindex.WarmBatch, keyindex.WarmBatch + 1, 2 * keyindex.WarmBatch, len(want) - 1, len(want), len(want) + 1} {
			for _, keysOnly := range []bool{false, true} {
				req := &pb.RangeRequest{Key: []byte("key-"), RangeEnd: []byte("key."), Revision: rev, Limit: int64(limit), KeysOnly: keysOnly}
				wantKeys, wantMore := want, false
				if limit > 0 && limit < len(want) {
					wantKeys, wantMore = want[:limit], true
				}
				resp, encoded := rangeBothWays(t, s, req)
				for how, got := range map[string]*pb.RangeResponse{"Range": resp, "RangeEncoded": encoded} {
					var keys []string
					for _, kv := range got.Kvs {
						keys = append(keys, string(kv.Key))
					}
					if fmt.Sprint(keys) != fmt.Sprint(wantKeys) || got.More != wantMore || got.Count != int64(len(want)) {
						t.Errorf("%s rev %d limit %d keys-only %v: keys %v more %v count %d, want %v more %v count %d",
							how, rev, limit, keysOnly, keys, got.More, got.Count, wantKeys, wantMore, len(want))
					}
				}
			}
		}
	}
}

// rangeBothWays answers req with Range and with RangeEncoded, decoded.
func rangeBothWays(t *testing.T, s *Store, req *pb.RangeRequest) (decoded, encoded *pb.RangeResponse) {
	t.Helper()
	decoded, err := s.Range(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := s.RangeEncoded(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	encoded = new(pb.RangeResponse)
	if err := proto.Unmarshal(b, encoded); err != nil {
		t.Fatal(err)
	}
	return decoded, encoded
}
