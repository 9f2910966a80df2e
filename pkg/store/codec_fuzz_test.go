package store

import (
	"bytes"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

func FuzzParseRevisionKey(f *testing.F) {
	f.Add(RevisionKey(Revision{Main: 5, Sub: 1}, false))
	f.Add(RevisionKey(Revision{Main: 1 << 40}, true))
	f.Add([]byte("short"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rev, tomb, err := ParseRevisionKey(b)
		if err != nil {
			return
		}
		if again := RevisionKey(rev, tomb); !bytes.Equal(again, b) {
			t.Fatalf("%x decodes to %v/%v, which encodes to %x", b, rev, tomb, again)
		}
	})
}

// FuzzKeyValueCodec checks the hand-written codec against the protobuf
// library: same decoding of any input it accepts, same bytes on encoding.
func FuzzKeyValueCodec(f *testing.F) {
	f.Add(MarshalKeyValue(&mvccpb.KeyValue{Key: []byte("k"), Value: []byte("v"), CreateRevision: 2, ModRevision: 3, Version: 2, Lease: 7}))
	f.Add(MarshalKeyValue(&mvccpb.KeyValue{Key: []byte("tomb")}))
	f.Add([]byte{0xff, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		var ours, theirs mvccpb.KeyValue
		ourErr := UnmarshalKeyValue(data, &ours)
		theirErr := proto.Unmarshal(data, &theirs)
		if ourErr != nil {
			return // proto may accept what we refuse (e.g. packed encodings), never the reverse
		}
		if theirErr != nil {
			t.Fatalf("we accept %x, protobuf refuses it: %v", data, theirErr)
		}
		if !kvEqual(&ours, &theirs) {
			t.Fatalf("%x: ours %v, protobuf %v", data, &ours, &theirs)
		}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(&mvccpb.KeyValue{Key: ours.Key, Value: ours.Value,
			CreateRevision: ours.CreateRevision, ModRevision: ours.ModRevision, Version: ours.Version, Lease: ours.Lease})
		if err != nil {
			t.Fatal(err)
		}
		if got := MarshalKeyValue(&ours); !bytes.Equal(got, want) {
			t.Fatalf("encoding of %v: ours %x, protobuf %x", &ours, got, want)
		}
	})
}
