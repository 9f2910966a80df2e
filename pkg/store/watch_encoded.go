package store

import (
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// watchResponseEventsField is the field number of events in an
// etcdserverpb.WatchResponse.
const watchResponseEventsField = 11

// EncodedEvents is the events of watch responses in their wire form: the
// repeated events field of an etcdserverpb.WatchResponse, encoded once, by
// the first reader that asks, for every response that carries them.
type EncodedEvents struct {
	once sync.Once
	evs  []*mvccpb.Event
	b    []byte
	err  error
}

// Bytes returns the encoded events. The bytes are shared: do not modify them.
func (e *EncodedEvents) Bytes() ([]byte, error) {
	e.once.Do(func() {
		var b []byte
		for _, ev := range e.evs {
			b = protowire.AppendTag(b, watchResponseEventsField, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(proto.Size(ev)))
			if b, e.err = (proto.MarshalOptions{UseCachedSize: true}).MarshalAppend(b, ev); e.err != nil {
				return
			}
		}
		e.b = b
	})
	return e.b, e.err
}

// NewEncodedEvents is evs to be encoded once, when first asked.
func NewEncodedEvents(evs []*mvccpb.Event) *EncodedEvents { return &EncodedEvents{evs: evs} }
