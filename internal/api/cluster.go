package api

import (
	"context"
	"net"
	"net/url"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/cairnkv/cairn/internal/server"
	"github.com/cairnkv/cairn/pkg/cluster"
)

type clusterServer struct {
	pb.UnimplementedClusterServer
	a *API
}

// clusterHeader is the header of Cluster responses: etcd leaves the
// revision out of them.
func (a *API) clusterHeader() *pb.ResponseHeader {
	h := a.header(0)
	h.Revision = 0
	return h
}

func toPBMember(m server.Member) *pb.Member {
	return &pb.Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner}
}

func toPBMembers(ms []server.Member) []*pb.Member {
	out := make([]*pb.Member, len(ms))
	for i, m := range ms {
		out[i] = toPBMember(m)
	}
	return out
}

// validPeerURLs reports whether urls are peer URLs as etcd takes them in
// MemberAdd (not in MemberUpdate, which takes any): at least one, each an
// http, https, unix or unixs URL of a host and port, without a path.
func validPeerURLs(urls []string) bool {
	for _, s := range urls {
		if cluster.CheckURL(s) != nil {
			return false
		}
		u, _ := url.Parse(s)
		if _, _, err := net.SplitHostPort(u.Host); err != nil || u.Path != "" {
			return false
		}
	}
	return len(urls) > 0
}

func (c *clusterServer) MemberAdd(ctx context.Context, req *pb.MemberAddRequest) (*pb.MemberAddResponse, error) {
	if !validPeerURLs(req.PeerURLs) {
		return nil, rpctypes.ErrGRPCMemberBadURLs
	}
	m, all, err := c.a.s.MemberAdd(ctx, req.PeerURLs, req.IsLearner)
	if err != nil {
		return nil, toGRPC(err)
	}
	return &pb.MemberAddResponse{Header: c.a.clusterHeader(), Member: toPBMember(m), Members: toPBMembers(all)}, nil
}

func (c *clusterServer) MemberRemove(ctx context.Context, req *pb.MemberRemoveRequest) (*pb.MemberRemoveResponse, error) {
	all, err := c.a.s.MemberRemove(ctx, req.ID)
	if err != nil {
		return nil, toGRPC(err)
	}
	return &pb.MemberRemoveResponse{Header: c.a.clusterHeader(), Members: toPBMembers(all)}, nil
}

func (c *clusterServer) MemberUpdate(ctx context.Context, req *pb.MemberUpdateRequest) (*pb.MemberUpdateResponse, error) {
	all, err := c.a.s.MemberUpdate(ctx, req.ID, req.PeerURLs)
	if err != nil {
		return nil, toGRPC(err)
	}
	return &pb.MemberUpdateResponse{Header: c.a.clusterHeader(), Members: toPBMembers(all)}, nil
}

func (c *clusterServer) MemberList(ctx context.Context, req *pb.MemberListRequest) (*pb.MemberListResponse, error) {
	if req.Linearizable {
		if err := c.a.s.LinearizableReadNotify(ctx); err != nil {
			return nil, toGRPC(err)
		}
	}
	return &pb.MemberListResponse{Header: c.a.clusterHeader(), Members: toPBMembers(c.a.s.Members())}, nil
}

func (c *clusterServer) MemberPromote(ctx context.Context, req *pb.MemberPromoteRequest) (*pb.MemberPromoteResponse, error) {
	all, err := c.a.s.MemberPromote(ctx, req.ID)
	if err != nil {
		return nil, toGRPC(err)
	}
	return &pb.MemberPromoteResponse{Header: c.a.clusterHeader(), Members: toPBMembers(all)}, nil
}
