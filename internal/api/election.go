package api

import (
	"bytes"
	"context"
	"errors"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/internal/api/electionpb"
)

// etcd's answers, in its words.
var (
	errMissingLeaderKey = errors.New(`"leader" field must be provided`)
	errNoLeader         = errors.New("election: no leader")
	errNotLeader        = errors.New("election: not leader")
)

// electionServer is etcd's Election service (recipes.go).
type electionServer struct {
	electionpb.UnimplementedElectionServer
	r recipes
}

// Campaign waits until the caller leads, or ctx ends (the candidacy is then
// withdrawn). A lease that already campaigns keeps its place and sets the
// new value.
func (e *electionServer) Campaign(ctx context.Context, req *electionpb.CampaignRequest) (*electionpb.CampaignResponse, error) {
	lease, err := e.r.leaseOf(ctx, req.Lease)
	if err != nil {
		return nil, asEtcds(err)
	}
	c := contendersOf(req.Name)
	key := c.key(lease)
	rev, existing, header, err := e.r.claim(ctx, key, req.Value, lease)
	if err != nil {
		return nil, asEtcds(err)
	}
	if existing != nil && !bytes.Equal(existing.Value, req.Value) {
		put := &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: key, Value: req.Value, Lease: lease}}}
		resp, err := e.r.ifCreatedAt(ctx, key, rev, put)
		if err == nil && !resp.Succeeded {
			err = errNotLeader
		}
		if err != nil {
			e.r.release(ctx, key)
			return nil, asEtcds(err)
		}
	}
	if err := e.r.waitEarlier(ctx, c, rev-1); err != nil {
		if ctx.Err() != nil {
			e.r.release(ctx, key)
		}
		return nil, asEtcds(err)
	}
	return &electionpb.CampaignResponse{Header: header, Leader: &electionpb.LeaderKey{Name: req.Name, Key: key, Rev: rev, Lease: lease}}, nil
}

// Proclaim sets the value of the leader's key while it is the same key.
func (e *electionServer) Proclaim(ctx context.Context, req *electionpb.ProclaimRequest) (*electionpb.ProclaimResponse, error) {
	l := req.Leader
	if l == nil {
		return nil, errMissingLeaderKey
	}
	put := &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: l.Key, Value: req.Value, Lease: l.Lease}}}
	resp, err := e.r.ifCreatedAt(ctx, l.Key, l.Rev, put)
	if err != nil {
		return nil, asEtcds(err)
	}
	if !resp.Succeeded {
		return nil, errNotLeader
	}
	return &electionpb.ProclaimResponse{Header: resp.Header}, nil
}

// Resign deletes the leader's key if it is still the same key; a leader
// key that is no longer there answers as a resignation too, as etcd's.
func (e *electionServer) Resign(ctx context.Context, req *electionpb.ResignRequest) (*electionpb.ResignResponse, error) {
	l := req.Leader
	if l == nil {
		return nil, errMissingLeaderKey
	}
	del := &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: l.Key}}}
	resp, err := e.r.ifCreatedAt(ctx, l.Key, l.Rev, del)
	if err != nil {
		return nil, asEtcds(err)
	}
	return &electionpb.ResignResponse{Header: resp.Header}, nil
}

// Leader answers the leader's key-value.
func (e *electionServer) Leader(ctx context.Context, req *electionpb.LeaderRequest) (*electionpb.LeaderResponse, error) {
	resp, err := e.r.firstCreated(ctx, contendersOf(req.Name))
	if err != nil {
		return nil, asEtcds(err)
	}
	if len(resp.Kvs) == 0 {
		return nil, errNoLeader
	}
	return &electionpb.LeaderResponse{Header: resp.Header, Kv: resp.Kvs[0]}, nil
}

// Observe sends the leader's key-value, then each new value and each new
// leader, until the caller goes away; while nobody campaigns it waits.
func (e *electionServer) Observe(req *electionpb.LeaderRequest, stream grpc.ServerStreamingServer[electionpb.LeaderResponse]) error {
	ctx := stream.Context()
	c := contendersOf(req.Name)
	var last *mvccpb.KeyValue // the last sent, not sent again after a watch is cut short
	send := func(h *pb.ResponseHeader, kv *mvccpb.KeyValue) error {
		if last != nil && bytes.Equal(last.Key, kv.Key) && last.ModRevision == kv.ModRevision {
			return nil
		}
		last = kv
		return stream.Send(&electionpb.LeaderResponse{Header: h, Kv: kv})
	}
	for {
		resp, err := e.r.firstCreated(ctx, c)
		if err != nil {
			return asEtcds(err)
		}
		from := resp.Header.Revision + 1
		if len(resp.Kvs) == 0 {
			// Wait for a first candidate, then read again: the first to
			// appear is not necessarily the first created.
			_, err := e.r.watch(ctx, c.prefix, c.end, from, func(ev *mvccpb.Event) (bool, error) {
				return ev.Type == mvccpb.PUT, nil
			})
			if err != nil {
				return asEtcds(err)
			}
			continue
		}
		leader := resp.Kvs[0]
		if err := send(resp.Header, leader); err != nil {
			return err
		}
		// Follow the leader's key until it goes (or is created again).
		_, err = e.r.watch(ctx, leader.Key, nil, from, func(ev *mvccpb.Event) (bool, error) {
			if ev.Type == mvccpb.DELETE || ev.Kv.CreateRevision != leader.CreateRevision {
				return true, nil
			}
			return false, send(e.r.a.header(ev.Kv.ModRevision), ev.Kv)
		})
		if err != nil {
			return asEtcds(err)
		}
	}
}
