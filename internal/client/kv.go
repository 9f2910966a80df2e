package client

import (
	"context"
	"errors"
	"io"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// RangeStream reads a range with the RangeStream RPC, which sends a large
// result in chunks, and merges the chunks into the response Range would
// give. A read interrupted midway is read again, on another member if need
// be. The signature matches KV.Range.
func (c *Client) RangeStream(ctx context.Context, req *pb.RangeRequest, opts ...grpc.CallOption) (*pb.RangeResponse, error) {
	for attempt := 0; ; attempt++ {
		resp, err := c.rangeStreamOnce(ctx, req, opts...)
		if err == nil || ctx.Err() != nil || !isResumable(err) {
			return resp, toError(ctx, err)
		}
		if err := sleep(ctx, retryDelay(attempt)); err != nil {
			return nil, err
		}
	}
}

func (c *Client) rangeStreamOnce(ctx context.Context, req *pb.RangeRequest, opts ...grpc.CallOption) (*pb.RangeResponse, error) {
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := c.KV.RangeStream(streamCtx, req, opts...)
	if err != nil {
		return nil, err
	}
	merged := &pb.RangeResponse{}
	for {
		chunk, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return merged, nil
		}
		if err != nil {
			return nil, err
		}
		proto.Merge(merged, chunk.GetRangeResponse())
	}
}
