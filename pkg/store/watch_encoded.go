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
// the first reader that asks, for every response that carries them. A
// stretch of a longer run (Stretch) is encoded with the whole run.
type EncodedEvents struct {
	once sync.Once
	evs  []*mvccpb.Event
	b    []byte
	err  error
	// offsets, when wanted, is where each event's record starts in b,
	// and where the last ends.
	wantOffsets bool
	offsets     []int
	// of, when not nil, is the run these events are of[from:to] of.
	of       *EncodedEvents
	from, to int
}

// Bytes returns the encoded events. The bytes are shared: do not modify them.
func (e *EncodedEvents) Bytes() ([]byte, error) {
	if e.of != nil {
		b, err := e.of.Bytes()
		if err != nil {
			return nil, err
		}
		return b[e.of.offsets[e.from]:e.of.offsets[e.to]], nil
	}
	e.once.Do(func() {
		// The whole size first: MarshalAppend grows a buffer that is
		// too small to just what it appends, so appending event after
		// event would copy the buffer at each one.
		n := 0
		for _, ev := range e.evs {
			size := proto.Size(ev)
			n += protowire.SizeTag(watchResponseEventsField) + protowire.SizeVarint(uint64(size)) + size
		}
		e.b = make([]byte, 0, n)
		for _, ev := range e.evs {
			if e.wantOffsets {
				e.offsets = append(e.offsets, len(e.b))
			}
			e.b = protowire.AppendTag(e.b, watchResponseEventsField, protowire.BytesType)
			e.b = protowire.AppendVarint(e.b, uint64(proto.Size(ev)))
			if e.b, e.err = (proto.MarshalOptions{UseCachedSize: true}).MarshalAppend(e.b, ev); e.err != nil {
				return
			}
		}
		e.offsets = append(e.offsets, len(e.b))
	})
	return e.b, e.err
}

// NewEncodedEvents is evs to be encoded once, when first asked.
func NewEncodedEvents(evs []*mvccpb.Event) *EncodedEvents { return &EncodedEvents{evs: evs} }

// newEncodedRun is evs to be encoded once, when first asked, as a whole
// of which stretches are sent.
func newEncodedRun(evs []*mvccpb.Event) *EncodedEvents {
	return &EncodedEvents{evs: evs, wantOffsets: true}
}

// stretch is the events [i, j) of a run, encoded with the run.
func (e *EncodedEvents) stretch(i, j int) *EncodedEvents {
	return &EncodedEvents{evs: e.evs[i:j], of: e, from: i, to: j}
}
