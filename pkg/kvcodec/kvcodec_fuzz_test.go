package kvcodec

import (
	"bytes"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

// FuzzKeyValueCodec checks the hand-written codec against the protobuf
// library: same decoding of any input it accepts, same bytes on encoding.
func FuzzKeyValueCodec(f *testing.F) {
	f.Add(Marshal(&mvccpb.KeyValue{Key: []byte("k"), Value: []byte("v"), CreateRevision: 2, ModRevision: 3, Version: 2, Lease: 7}))
	f.Add(Marshal(&mvccpb.KeyValue{Key: []byte("tomb")}))
	f.Add([]byte{0xff, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		var ours, theirs mvccpb.KeyValue
		ourErr := Unmarshal(data, &ours)
		theirErr := proto.Unmarshal(data, &theirs)
		if ourErr != nil {
			return // proto may accept what we refuse (e.g. packed encodings), never the reverse
		}
		if theirErr != nil {
			t.Fatalf("we accept %x, protobuf refuses it: %v", data, theirErr)
		}
		if !proto.Equal(&ours, known(&theirs)) {
			t.Fatalf("%x: ours %v, protobuf %v", data, &ours, &theirs)
		}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(known(&ours))
		if err != nil {
			t.Fatal(err)
		}
		if got := Marshal(&ours); !bytes.Equal(got, want) {
			t.Fatalf("encoding of %v: ours %x, protobuf %x", &ours, got, want)
		}
	})
}

// known is kv without the fields mvccpb.KeyValue does not define.
func known(kv *mvccpb.KeyValue) *mvccpb.KeyValue {
	return &mvccpb.KeyValue{Key: kv.Key, Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision, Version: kv.Version, Lease: kv.Lease}
}
