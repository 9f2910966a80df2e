package grpcproxy

import (
	"context"
	"errors"
	"io"
	"slices"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

const memberListMethod = "/etcdserverpb.Cluster/MemberList"

// method is one RPC the proxy forwards.
type method struct {
	clientStream, serverStream bool
	// request and response make empty messages of the method's types;
	// nil for the Election and Lock methods, forwarded as encoded frames
	// (the proxy does not link their generated types).
	request, response func() any
}

// methods are the RPCs of etcd's services, by full name: those of
// etcdserverpb from its registered descriptors, Election and Lock from
// etcd's v3election.proto and v3lock.proto.
var methods = func() map[string]method {
	m := map[string]method{}
	services := pb.File_rpc_proto.Services()
	for i := range services.Len() {
		s := services.Get(i)
		for j := range s.Methods().Len() {
			md := s.Methods().Get(j)
			m["/"+string(s.FullName())+"/"+string(md.Name())] = method{
				clientStream: md.IsStreamingClient(), serverStream: md.IsStreamingServer(),
				request: newMessage(md.Input()), response: newMessage(md.Output()),
			}
		}
	}
	for _, name := range []string{"Campaign", "Proclaim", "Leader", "Resign"} {
		m["/v3electionpb.Election/"+name] = method{}
	}
	m["/v3electionpb.Election/Observe"] = method{serverStream: true}
	m["/v3lockpb.Lock/Lock"] = method{}
	m["/v3lockpb.Lock/Unlock"] = method{}
	return m
}()

func newMessage(d protoreflect.MessageDescriptor) func() any {
	t, err := protoregistry.GlobalTypes.FindMessageByName(d.FullName())
	if err != nil {
		panic(err) // the descriptor and its types come from the same generated package
	}
	return func() any { return t.New().Interface() }
}

func (m method) newRequest() any {
	if m.request == nil {
		return new(frame)
	}
	return m.request()
}

func (m method) newResponse() any {
	if m.response == nil {
		return new(frame)
	}
	return m.response()
}

// frame is a message passed on as it was encoded.
type frame []byte

// codec encodes messages with protobuf, and frames as they are.
type codec struct{}

func (codec) Marshal(v any) ([]byte, error) {
	if f, ok := v.(*frame); ok {
		return *f, nil
	}
	return proto.Marshal(v.(proto.Message))
}

func (codec) Unmarshal(data []byte, v any) error {
	if f, ok := v.(*frame); ok {
		*f = slices.Clone(data)
		return nil
	}
	return proto.Unmarshal(data, v.(proto.Message))
}

func (codec) Name() string { return "proto" }

// passedMetadata are the keys of a client's metadata the proxy passes to
// the cluster: the auth token (permissions stay the cluster's) and etcd's
// require-leader flag.
var passedMetadata = []string{rpctypes.TokenFieldNameGRPC, rpctypes.MetadataRequireLeaderKey}

// outgoing is the context of the cluster's side of a call that came in
// with ctx.
func outgoing(ctx context.Context) context.Context {
	in, _ := metadata.FromIncomingContext(ctx)
	out := metadata.MD{}
	for _, k := range passedMetadata {
		if v := in.Get(k); len(v) > 0 {
			out.Set(k, v...)
		}
	}
	return metadata.NewOutgoingContext(ctx, out)
}

// statusError is err as the proxy returns it to its client: the cluster's
// code and message unchanged.
func statusError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var etcdErr rpctypes.EtcdError
	if errors.As(err, &etcdErr) {
		return status.Error(etcdErr.Code(), etcdErr.Error())
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	return status.Error(codes.Unavailable, err.Error())
}

// handle is the gRPC server's handler of every method: it forwards the
// call to the cluster.
func (p *Proxy) handle(_ any, stream grpc.ServerStream) error {
	name, _ := grpc.MethodFromServerStream(stream)
	m, ok := methods[name]
	if !ok {
		return status.Errorf(codes.Unimplemented, "unknown method %s", name)
	}
	switch name {
	case watchMethod:
		return p.watch(stream)
	case keepAliveMethod:
		return p.keepAlives.serve(stream)
	}
	if !m.clientStream && !m.serverStream {
		return p.unary(stream, name, m)
	}
	return p.pipe(stream, name, m)
}

// unary forwards a call of one request and one response.
func (p *Proxy) unary(stream grpc.ServerStream, name string, m method) error {
	ctx := stream.Context()
	req := m.newRequest()
	if err := stream.RecvMsg(req); err != nil {
		return err
	}
	if err := p.ns.request(name, req); err != nil {
		return err
	}
	if name == memberListMethod && p.cfg.Register != nil {
		resp, err := p.registeredProxies(ctx, p.cfg.Register.Prefix)
		if err != nil {
			return statusError(ctx, err)
		}
		return stream.SendMsg(resp)
	}
	out := outgoing(ctx)
	cacheKey, cached := "", false
	if r, ok := req.(*pb.RangeRequest); ok {
		if cacheKey, cached = cacheable(out, r); cached {
			if resp, hit := p.cache.get(cacheKey); hit {
				return stream.SendMsg(resp)
			}
			if p.cache.startWatch() {
				go p.cacheWatch(p.ctx)
			}
		}
	}
	resp := m.newResponse()
	if err := p.conn.Invoke(out, name, req, resp, grpc.ForceCodec(codec{})); err != nil {
		return statusError(ctx, err)
	}
	if err := p.ns.response(name, resp); err != nil {
		return err
	}
	if cached {
		// The answer as the client sees it; the range as the cluster does.
		p.cache.put(cacheKey, req.(*pb.RangeRequest), resp.(*pb.RangeResponse))
	}
	p.cache.wrote(req, resp)
	return stream.SendMsg(resp)
}

// pipe forwards a streaming call: the client's messages to one stream of
// the cluster, and that stream's messages back, until either side ends.
func (p *Proxy) pipe(stream grpc.ServerStream, name string, m method) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	desc := &grpc.StreamDesc{StreamName: name, ClientStreams: m.clientStream, ServerStreams: m.serverStream}
	up, err := p.conn.NewStream(outgoing(ctx), desc, name, grpc.ForceCodec(codec{}))
	if err != nil {
		return statusError(ctx, err)
	}
	// The client's messages go up from another goroutine; one that cannot
	// be sent ends the call, with why.
	sendErr := make(chan error, 1)
	go func() {
		for {
			req := m.newRequest()
			err := stream.RecvMsg(req)
			if err == io.EOF {
				up.CloseSend()
				return
			}
			if err == nil {
				err = p.ns.request(name, req)
			}
			if err != nil {
				sendErr <- err
				cancel()
				return
			}
			if up.SendMsg(req) != nil {
				return // the cluster's side ended: RecvMsg below says why
			}
		}
	}()
	for {
		resp := m.newResponse()
		if err := up.RecvMsg(resp); err == io.EOF {
			return nil
		} else if err != nil {
			select {
			case err := <-sendErr:
				return err
			default:
				return statusError(ctx, err)
			}
		}
		if err := p.ns.response(name, resp); err != nil {
			return err
		}
		if err := stream.SendMsg(resp); err != nil {
			return err
		}
	}
}
