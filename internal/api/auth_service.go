package api

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
)

// authServer is the Auth service. Every request but Authenticate's
// password check goes through raft, as etcd's do.
type authServer struct {
	pb.UnimplementedAuthServer
	a *API
}

// authRequest proposes an Auth* request and fills the header of its
// response.
func authRequest[T proto.Message](ctx context.Context, a *API, req *pb.InternalRaftRequest, header func(T) **pb.ResponseHeader) (T, error) {
	var zero T
	resp, err := a.s.AuthRequest(ctx, req)
	if err != nil {
		return zero, toGRPC(err)
	}
	r := resp.(T)
	a.fillHeader(header(r))
	return r, nil
}

func (s *authServer) Authenticate(ctx context.Context, req *pb.AuthenticateRequest) (*pb.AuthenticateResponse, error) {
	resp, err := s.a.s.Authenticate(ctx, req.Name, req.Password)
	if err != nil {
		return nil, toGRPC(err)
	}
	s.a.fillHeader(&resp.Header)
	return resp, nil
}

func (s *authServer) AuthEnable(ctx context.Context, req *pb.AuthEnableRequest) (*pb.AuthEnableResponse, error) {
	return authRequest(ctx, s.a, &pb.InternalRaftRequest{AuthEnable: req}, func(r *pb.AuthEnableResponse) **pb.ResponseHeader { return &r.Header })
}

func (s *authServer) AuthDisable(ctx context.Context, req *pb.AuthDisableRequest) (*pb.AuthDisableResponse, error) {
	return authRequest(ctx, s.a, &pb.InternalRaftRequest{AuthDisable: req}, func(r *pb.AuthDisableResponse) **pb.ResponseHeader { return &r.Header })
}

func (s *authServer) AuthStatus(ctx context.Context, req *pb.AuthStatusRequest) (*pb.AuthStatusResponse, error) {
	return authRequest(ctx, s.a, &pb.InternalRaftRequest{AuthStatus: req}, func(r *pb.AuthStatusResponse) **pb.ResponseHeader { return &r.Header })
}

func (s *authServer) UserAdd(ctx context.Context, req *pb.AuthUserAddRequest) (*pb.AuthUserAddResponse, error) {
	return authRequest(ctx, s.a, &pb.InternalRaftRequest{AuthUserAdd: req}, func(r *pb.AuthUserAddResponse) **pb.ResponseHeader { return &r.Header })
}

func (s *authServer) UserGet(ctx context.Context, req *pb.AuthUserGetRequest) (*pb.AuthUserGetResponse, error) {
	return authRequest(ctx, s.a, &pb.InternalRaftRequest{AuthUserGet: req}, func(r *pb.AuthUserGetResponse) **pb.ResponseHeader { return &r.Header })
}

func (s *authServer) UserList(ctx context.Context, req *pb.AuthUserListRequest) (*pb.AuthUserListResponse, error) {
	return authRequest(ctx, s.a, &pb.InternalRaftRequest{AuthUserList: req}, func(r *pb.AuthUserListResponse) **pb.ResponseHeader { return &r.Header })
}

func (s *authServer) UserDelete(ctx context.Context, req *pb.AuthUserDeleteRequest) (*pb.AuthUserDeleteResponse, error) {
	return authRequest(ctx, s.a, &pb.InternalRaftRequest{AuthUserDelete: req}, func(r *pb.AuthUserDeleteResponse) **pb.ResponseHeader { return &r.Header })
}

func (s *authServer) UserChangePassword(ctx context.Context, req *pb.AuthUserChangePasswordRequest) (*pb.AuthUserChangePasswordResponse, error) {
	return authRequest(ctx, s.a, &pb.InternalRaftRequest{AuthUserChangePassword: req}, func(r *pb.AuthUserChangePasswordResponse) **pb.ResponseHeader { return &r.Header })
}

func (s *authServer) UserGrantRole(ctx context.Context, req *pb.AuthUserGrantRoleRequest) (*pb.AuthUserGrantRoleResponse, error) {
	return authRequest(ctx, s.a, &pb.InternalRaftRequest{AuthUserGrantRole: req}, func(r *pb.AuthUserGrantRoleResponse) **pb.ResponseHeader { return &r.Header })
}

func (s *authServer) UserRevokeRole(ctx context.Context, req *pb.AuthUserRevokeRoleRequest) (*pb.AuthUserRevokeRoleResponse, error) {
	return authRequest(ctx, s.a, &pb.InternalRaftRequest{AuthUserRevokeRole: req}, func(r *pb.AuthUserRevokeRoleResponse) **pb.ResponseHeader { return &r.Header })
}

func (s *authServer) RoleAdd(ctx context.Context, req *pb.AuthRoleAddRequest) (*pb.AuthRoleAddResponse, error) {
	return authRequest(ctx, s.a, &pb.InternalRaftRequest{AuthRoleAdd: req}, func(r *pb.AuthRoleAddResponse) **pb.ResponseHeader { return &r.Header })
}

func (s *authServer) RoleGet(ctx context.Context, req *pb.AuthRoleGetRequest) (*pb.AuthRoleGetResponse, error) {
	return authRequest(ctx, s.a, &pb.InternalRaftRequest{AuthRoleGet: req}, func(r *pb.AuthRoleGetResponse) **pb.ResponseHeader { return &r.Header })
}

func (s *authServer) RoleList(ctx context.Context, req *pb.AuthRoleListRequest) (*pb.AuthRoleListResponse, error) {
	return authRequest(ctx, s.a, &pb.InternalRaftRequest{AuthRoleList: req}, func(r *pb.AuthRoleListResponse) **pb.ResponseHeader { return &r.Header })
}

func (s *authServer) RoleDelete(ctx context.Context, req *pb.AuthRoleDeleteRequest) (*pb.AuthRoleDeleteResponse, error) {
	return authRequest(ctx, s.a, &pb.InternalRaftRequest{AuthRoleDelete: req}, func(r *pb.AuthRoleDeleteResponse) **pb.ResponseHeader { return &r.Header })
}

func (s *authServer) RoleGrantPermission(ctx context.Context, req *pb.AuthRoleGrantPermissionRequest) (*pb.AuthRoleGrantPermissionResponse, error) {
	return authRequest(ctx, s.a, &pb.InternalRaftRequest{AuthRoleGrantPermission: req}, func(r *pb.AuthRoleGrantPermissionResponse) **pb.ResponseHeader { return &r.Header })
}

func (s *authServer) RoleRevokePermission(ctx context.Context, req *pb.AuthRoleRevokePermissionRequest) (*pb.AuthRoleRevokePermissionResponse, error) {
	return authRequest(ctx, s.a, &pb.InternalRaftRequest{AuthRoleRevokePermission: req}, func(r *pb.AuthRoleRevokePermissionResponse) **pb.ResponseHeader { return &r.Header })
}
