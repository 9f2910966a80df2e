package auth

import (
	"fmt"
	"maps"
	"slices"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
)

// IsAuthRequest reports whether req is one of the requests Apply handles.
func IsAuthRequest(req *pb.InternalRaftRequest) bool {
	return req.Authenticate != nil || req.AuthEnable != nil || req.AuthDisable != nil || req.AuthStatus != nil ||
		req.AuthUserAdd != nil || req.AuthUserDelete != nil || req.AuthUserChangePassword != nil ||
		req.AuthUserGrantRole != nil || req.AuthUserRevokeRole != nil || req.AuthUserGet != nil || req.AuthUserList != nil ||
		req.AuthRoleAdd != nil || req.AuthRoleDelete != nil || req.AuthRoleGet != nil || req.AuthRoleList != nil ||
		req.AuthRoleGrantPermission != nil || req.AuthRoleRevokePermission != nil
}

// needsAdmin reports whether only root may make req once authentication is
// enabled. UserGet and RoleGet are also open to the user itself and to the
// users of the role.
func needsAdmin(req *pb.InternalRaftRequest) bool {
	return req.AuthEnable != nil || req.AuthDisable != nil ||
		req.AuthUserAdd != nil || req.AuthUserDelete != nil || req.AuthUserChangePassword != nil ||
		req.AuthUserGrantRole != nil || req.AuthUserRevokeRole != nil || req.AuthUserList != nil ||
		req.AuthRoleAdd != nil || req.AuthRoleDelete != nil || req.AuthRoleList != nil ||
		req.AuthRoleGrantPermission != nil || req.AuthRoleRevokePermission != nil
}

// Apply applies one committed auth request, made by info, writing its
// changes with w. index is the raft index of the entry, which becomes part
// of the tokens Authenticate assigns. Only the apply loop calls it.
func (s *Store) Apply(w Writer, req *pb.InternalRaftRequest, index uint64, info Info) (proto.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if needsAdmin(req) {
		if err := s.adminPermittedLocked(info); err != nil {
			return nil, err
		}
	}
	switch {
	case req.Authenticate != nil:
		return s.authenticate(req.Authenticate, index)
	case req.AuthEnable != nil:
		return s.enable(w)
	case req.AuthDisable != nil:
		return s.disable(w)
	case req.AuthStatus != nil:
		return &pb.AuthStatusResponse{Enabled: s.st.enabled, AuthRevision: s.st.revision}, nil
	case req.AuthUserAdd != nil:
		return s.userAdd(w, req.AuthUserAdd)
	case req.AuthUserDelete != nil:
		return s.userDelete(w, req.AuthUserDelete)
	case req.AuthUserChangePassword != nil:
		return s.userChangePassword(w, req.AuthUserChangePassword)
	case req.AuthUserGrantRole != nil:
		return s.userGrantRole(w, req.AuthUserGrantRole)
	case req.AuthUserRevokeRole != nil:
		return s.userRevokeRole(w, req.AuthUserRevokeRole)
	case req.AuthUserGet != nil:
		return s.userGet(req.AuthUserGet, info)
	case req.AuthUserList != nil:
		return &pb.AuthUserListResponse{Users: slices.Sorted(maps.Keys(s.st.users))}, nil
	case req.AuthRoleAdd != nil:
		return s.roleAdd(w, req.AuthRoleAdd)
	case req.AuthRoleDelete != nil:
		return s.roleDelete(w, req.AuthRoleDelete)
	case req.AuthRoleGet != nil:
		return s.roleGet(req.AuthRoleGet, info)
	case req.AuthRoleList != nil:
		return &pb.AuthRoleListResponse{Roles: slices.Sorted(maps.Keys(s.st.roles))}, nil
	case req.AuthRoleGrantPermission != nil:
		return s.roleGrantPermission(w, req.AuthRoleGrantPermission)
	case req.AuthRoleRevokePermission != nil:
		return s.roleRevokePermission(w, req.AuthRoleRevokePermission)
	}
	return nil, fmt.Errorf("auth: not an auth request")
}

// commitRevision increments the auth revision after a change, and drops
// the permission cache, which the change may have made stale.
func (s *Store) commitRevision(w Writer) error {
	clear(s.perms)
	s.st.revision++
	return putRevision(w, s.st.revision)
}

// authenticate assigns a token to a user whose password the proposing
// member has checked.
func (s *Store) authenticate(r *pb.InternalAuthenticateRequest, index uint64) (*pb.AuthenticateResponse, error) {
	if !s.st.enabled {
		return nil, ErrAuthNotEnabled
	}
	if s.st.users[r.Name] == nil {
		return nil, ErrAuthFailed
	}
	token, err := s.tokens.assign(r.SimpleToken, index, r.Name, s.st.revision)
	if err != nil {
		return nil, err
	}
	return &pb.AuthenticateResponse{Token: token}, nil
}

// enable turns authentication on; the root user must exist with the root
// role. It leaves the revision as it is, as etcd does.
func (s *Store) enable(w Writer) (*pb.AuthEnableResponse, error) {
	if s.st.enabled {
		return &pb.AuthEnableResponse{}, nil
	}
	root := s.st.users[RootUser]
	if root == nil {
		return nil, ErrRootUserNotExist
	}
	if !hasRootRole(root) {
		return nil, ErrRootRoleNotExist
	}
	if err := putEnabled(w, true); err != nil {
		return nil, err
	}
	s.st.enabled = true
	clear(s.perms)
	s.log.Info("authentication enabled")
	return &pb.AuthEnableResponse{}, nil
}

// disable turns authentication off, ending every token.
func (s *Store) disable(w Writer) (*pb.AuthDisableResponse, error) {
	if !s.st.enabled {
		return &pb.AuthDisableResponse{}, nil
	}
	if err := putEnabled(w, false); err != nil {
		return nil, err
	}
	if err := s.commitRevision(w); err != nil {
		return nil, err
	}
	s.st.enabled = false
	s.tokens.clear()
	s.log.Info("authentication disabled")
	return &pb.AuthDisableResponse{}, nil
}
