package api

import (
	"context"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/store"
)

// A range over gRPC is answered with the bytes of its RangeResponse, built
// by the store from the key-values as they are stored (store.RangeEncoded):
// the answer is held once, in its final form, where decoding the stored
// key-values and encoding them again held it twice or more (and took the
// time of both). The gRPC server's codec sends such bytes as they are; the
// KV service's Range handler is the generated one's but for its answer.
// The JSON gateway, a gRPC client of the same server, receives the same
// bytes. Requests the store cannot answer so (sorted, filtered) take the
// decoding path of kvServer.Range.

// encodedMessage is a message already in its wire form: b, then tail (a
// part that may be shared with other messages, as the events of a watch
// response; it is never modified).
type encodedMessage struct {
	b, tail []byte
	tails   [][]byte // if set, the parts that follow b, in place of tail
	// If set, b is *pooled, a buffer of rangeBuffers, to which gRPC gives
	// it back once it has written the message.
	pooled *[]byte
	// What the codec hands to gRPC, held here so that a message is one
	// allocation (*SliceBuffer is a Buffer that points into the message).
	parts [2]mem.SliceBuffer
	bufs  [2]mem.Buffer
	// Room for a small b (a watch response's header and ID).
	prefix [64]byte
}

// EncodedSize is the size of the message, for the gRPC metrics.
func (m *encodedMessage) EncodedSize() int {
	if m.tails != nil {
		n := len(m.b)
		for _, t := range m.tails {
			n += len(t)
		}
		return n
	}
	return len(m.b) + len(m.tail)
}

// codec is gRPC's proto codec, but for an encodedMessage, sent as it is.
type codec struct{ proto encoding.CodecV2 }

func newCodec() codec { return codec{proto: encoding.GetCodecV2("proto")} }

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	if m, ok := v.(*encodedMessage); ok {
		if m.pooled != nil {
			m.bufs[0] = mem.NewBuffer(m.pooled, rangeBuffers)
		} else {
			m.parts[0], m.bufs[0] = m.b, &m.parts[0]
		}
		if m.tails != nil {
			bufs := make(mem.BufferSlice, 1, 1+len(m.tails))
			bufs[0] = m.bufs[0]
			for _, t := range m.tails {
				bufs = append(bufs, mem.SliceBuffer(t))
			}
			return bufs, nil
		}
		if len(m.tail) == 0 {
			return m.bufs[:1], nil
		}
		m.parts[1], m.bufs[1] = m.tail, &m.parts[1]
		return m.bufs[:2], nil
	}
	return c.proto.Marshal(v)
}

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	if u, ok := v.(*unaryRequest); ok { // decode.go
		u.err = c.proto.Unmarshal(data, u.msg)
		return nil
	}
	return c.proto.Unmarshal(data, v)
}

func (c codec) Name() string { return c.proto.Name() }

// kvServiceDesc is etcd's KV service with the Range handler that answers
// with encoded bytes.
func kvServiceDesc(k *kvServer) *grpc.ServiceDesc {
	desc := pb.KV_ServiceDesc
	desc.Methods = append([]grpc.MethodDesc(nil), desc.Methods...)
	for i := range desc.Methods {
		if desc.Methods[i].MethodName == "Range" {
			desc.Methods[i].Handler = k.rangeHandler
		}
	}
	return &desc
}

// rangeHandler is a grpc.MethodDesc handler for KV.Range.
func (k *kvServer) rangeHandler(_ any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	req := new(pb.RangeRequest)
	if err := dec(req); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return k.rangeEncoded(ctx, req)
	}
	info := &grpc.UnaryServerInfo{Server: k, FullMethod: pb.KV_Range_FullMethodName}
	return interceptor(ctx, req, info, func(ctx context.Context, req any) (any, error) {
		return k.rangeEncoded(ctx, req.(*pb.RangeRequest))
	})
}

// rangeEncoded answers a range with its encoded RangeResponse when the
// store can build it, as kvServer.Range otherwise.
func (k *kvServer) rangeEncoded(ctx context.Context, req *pb.RangeRequest) (any, error) {
	if !store.EncodedRangeOK(req) {
		return k.Range(ctx, req)
	}
	buf := rangeBuffers.Get(0)
	var b []byte
	var rev int64
	err := k.serveRange(ctx, req, func() (err error) {
		b, rev, err = k.a.s.Store().RangeEncoded(req, (*buf)[:0])
		return err
	})
	var hdr []byte
	if err == nil {
		hdr, err = proto.Marshal(k.a.header(rev))
	}
	if err != nil {
		rangeBuffers.Put(buf)
		return nil, err
	}
	*buf = protowire.AppendBytes(protowire.AppendTag(b, 1, protowire.BytesType), hdr) // RangeResponse.header
	return &encodedMessage{b: *buf, pooled: buf}, nil
}

// rangeBuffers recycles the buffers of encoded range answers: the next
// answer is built in the buffer of one gRPC has written. Without it, a
// range gave the collector its answer's size in garbage: 3 MB for 10,000
// key-values of 256 bytes, and a fifth of the member's CPU went to
// collections under a load of such ranges.
var rangeBuffers = &bufferPool{max: 16 << 20}

// bufferPool is a mem.BufferPool of buffers of any capacity up to max;
// larger ones (a range of a whole large keyspace) are left to the
// collector rather than held.
type bufferPool struct {
	pool sync.Pool
	max  int
}

// Get returns a buffer of length n, of whatever capacity it had.
func (p *bufferPool) Get(n int) *[]byte {
	if b, ok := p.pool.Get().(*[]byte); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n)
	return &b
}

// Put gives b back for a later Get.
func (p *bufferPool) Put(b *[]byte) {
	if cap(*b) <= p.max {
		p.pool.Put(b)
	}
}
