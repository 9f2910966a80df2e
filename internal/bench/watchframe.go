package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// At 200 puts a second to 10,000 watchers the load generator receives two
// million events a second, on the same cores as the member it measures.
// Decoded into etcdserverpb types, each event costs several allocations and
// the generator took more CPU than the member, so that what was measured
// was the generator. The watch streams of the benchmark therefore read each
// WatchResponse in place, keeping only what the benchmark uses.

// watchFrame is what the benchmark reads of one WatchResponse.
type watchFrame struct {
	created      bool
	canceled     bool
	cancelReason string
	// sent holds the sending time (Unix nanoseconds) each event's value
	// starts with, in the order of the events; events whose value is
	// shorter than 8 bytes are left out. Reused by the next response.
	sent []int64
}

// Field numbers of the messages a watchFrame is read from (rpc.proto, kv.proto).
const (
	watchResponseCreated      protowire.Number = 3
	watchResponseCanceled     protowire.Number = 4
	watchResponseCancelReason protowire.Number = 6
	watchResponseEvents       protowire.Number = 11
	eventKV                   protowire.Number = 2
	keyValueValue             protowire.Number = 5
)

var errBadWatchResponse = errors.New("malformed WatchResponse")

// unmarshal reads a WatchResponse from b into f, which it resets first.
// It keeps nothing of b.
func (f *watchFrame) unmarshal(b []byte) error {
	*f = watchFrame{sent: f.sent[:0]}
	return eachField(b, func(num protowire.Number, varint uint64, field []byte) error {
		switch num {
		case watchResponseCreated:
			f.created = varint != 0
		case watchResponseCanceled:
			f.canceled = varint != 0
		case watchResponseCancelReason:
			f.cancelReason = string(field)
		case watchResponseEvents:
			return f.readEvent(field)
		}
		return nil
	})
}

// readEvent appends the sending time in the value of the Event in b, if any.
func (f *watchFrame) readEvent(b []byte) error {
	return eachField(b, func(num protowire.Number, _ uint64, kv []byte) error {
		if num != eventKV {
			return nil
		}
		return eachField(kv, func(num protowire.Number, _ uint64, value []byte) error {
			if num == keyValueValue && len(value) >= 8 {
				f.sent = append(f.sent, int64(binary.BigEndian.Uint64(value)))
			}
			return nil
		})
	})
}

// eachField calls fn with each varint and length-delimited field of the
// message in b: its number and its value (the varint, or the bytes; the
// other is zero). Fields of other wire types are skipped.
func eachField(b []byte, fn func(num protowire.Number, varint uint64, bytes []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errBadWatchResponse
		}
		b = b[n:]
		var varint uint64
		var bytes []byte
		switch typ {
		case protowire.VarintType:
			varint, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			bytes, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return errBadWatchResponse
		}
		b = b[n:]
		if typ != protowire.VarintType && typ != protowire.BytesType {
			continue
		}
		if err := fn(num, varint, bytes); err != nil {
			return err
		}
	}
	return nil
}

// watchFrameCodec sends etcdserverpb messages as they are and receives
// into a *watchFrame.
type watchFrameCodec struct{}

func (watchFrameCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("watch frame codec: cannot send %T", v)
	}
	return proto.Marshal(m)
}

func (watchFrameCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*watchFrame)
	if !ok {
		return fmt.Errorf("watch frame codec: cannot receive into %T", v)
	}
	return f.unmarshal(data)
}

func (watchFrameCodec) Name() string { return "proto" }

// watchFrameStream is a Watch stream whose responses are read as watchFrames.
type watchFrameStream struct {
	stream grpc.ClientStream
	frame  watchFrame
	// created is the answer to the stream's pending watch creation: nil,
	// or why the watch was refused. Its receiver sends it.
	created chan error
}

func openWatchFrameStream(ctx context.Context, conn grpc.ClientConnInterface) (*watchFrameStream, error) {
	desc := &pb.Watch_ServiceDesc.Streams[0]
	st, err := conn.NewStream(ctx, desc, "/etcdserverpb.Watch/Watch", grpc.ForceCodec(watchFrameCodec{}))
	if err != nil {
		return nil, err
	}
	return &watchFrameStream{stream: st, created: make(chan error, 1)}, nil
}

func (s *watchFrameStream) send(req *pb.WatchRequest) error { return s.stream.SendMsg(req) }

// answerCreation hands the creation waiting on created the answer of f, a
// created or canceled response. A cancellation nobody waits for (a watch
// canceled once created) is dropped.
func (s *watchFrameStream) answerCreation(f *watchFrame) {
	var answer error
	if f.canceled {
		answer = fmt.Errorf("watch refused: %s", f.cancelReason)
	}
	select {
	case s.created <- answer:
	default:
	}
}

// recv reads the next response; what it returns is valid until the next recv.
func (s *watchFrameStream) recv() (*watchFrame, error) {
	if err := s.stream.RecvMsg(&s.frame); err != nil {
		return nil, err
	}
	return &s.frame, nil
}
