package store

import (
	"errors"
	"fmt"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
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
