package auth

import (
	"bytes"
	"slices"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/pkg/store"
)

func (s *Store) roleAdd(w Writer, r *pb.AuthRoleAddRequest) (*pb.AuthRoleAddResponse, error) {
	if r.Name == "" {
		return nil, ErrRoleEmpty
	}
	if s.st.roles[r.Name] != nil {
		return nil, ErrRoleAlreadyExist
	}
	if err := s.saveRole(w, &authpb.Role{Name: []byte(r.Name)}); err != nil {
		return nil, err
	}
	return &pb.AuthRoleAddResponse{}, nil
}

// saveRole writes a new or changed role and commits a revision.
func (s *Store) saveRole(w Writer, role *authpb.Role) error {
	if err := putRole(w, role); err != nil {
		return err
	}
	s.st.roles[string(role.Name)] = role
	return s.commitRevision(w)
}

// roleDelete deletes a role and takes it from every user that has it.
func (s *Store) roleDelete(w Writer, r *pb.AuthRoleDeleteRequest) (*pb.AuthRoleDeleteResponse, error) {
	if s.st.enabled && r.Role == RootRole {
		return nil, ErrInvalidAuthMgmt
	}
	if s.st.roles[r.Role] == nil {
		return nil, ErrRoleNotFound
	}
	if err := w.Delete(store.BucketAuthRoles, []byte(r.Role)); err != nil {
		return nil, err
	}
	delete(s.st.roles, r.Role)
	for name, old := range s.st.users {
		roles := slices.DeleteFunc(slices.Clone(old.Roles), func(role string) bool { return role == r.Role })
		if len(roles) == len(old.Roles) {
			continue
		}
		u := &authpb.User{Name: old.Name, Password: old.Password, Roles: roles, Options: old.Options}
		if err := putUser(w, u); err != nil {
			return nil, err
		}
		s.st.users[name] = u
	}
	if err := s.commitRevision(w); err != nil {
		return nil, err
	}
	return &pb.AuthRoleDeleteResponse{}, nil
}

// roleGet is open to root and to the users of the role. The root role
// shows as read-write on every key.
func (s *Store) roleGet(r *pb.AuthRoleGetRequest, info Info) (*pb.AuthRoleGetResponse, error) {
	if err := s.adminPermittedLocked(info); err != nil {
		u := s.st.users[info.Username]
		if _, has := slices.BinarySearch(u.GetRoles(), r.Role); !has {
			return nil, err
		}
	}
	role := s.st.roles[r.Role]
	if role == nil {
		return nil, ErrRoleNotFound
	}
	if r.Role == RootRole {
		return &pb.AuthRoleGetResponse{Perm: []*authpb.Permission{{PermType: authpb.READWRITE, Key: []byte{}, RangeEnd: []byte{0}}}}, nil
	}
	perms := make([]*authpb.Permission, len(role.KeyPermission))
	for i, p := range role.KeyPermission {
		perms[i] = &authpb.Permission{PermType: p.PermType, Key: p.Key, RangeEnd: p.RangeEnd}
	}
	return &pb.AuthRoleGetResponse{Perm: perms}, nil
}

// roleGrantPermission adds a permission to a role, or changes the type of
// the permission on the same range; permissions stay sorted by key.
func (s *Store) roleGrantPermission(w Writer, r *pb.AuthRoleGrantPermissionRequest) (*pb.AuthRoleGrantPermissionResponse, error) {
	if r.Perm == nil {
		return nil, ErrPermissionNotGiven
	}
	if !validPermRange(r.Perm.Key, r.Perm.RangeEnd) {
		return nil, ErrInvalidAuthMgmt
	}
	old := s.st.roles[r.Name]
	if old == nil {
		return nil, ErrRoleNotFound
	}
	perms := make([]*authpb.Permission, 0, len(old.KeyPermission)+1)
	updated := false
	for _, p := range old.KeyPermission {
		if bytes.Equal(p.Key, r.Perm.Key) && bytes.Equal(p.RangeEnd, r.Perm.RangeEnd) {
			p = &authpb.Permission{PermType: r.Perm.PermType, Key: p.Key, RangeEnd: p.RangeEnd}
			updated = true
		}
		perms = append(perms, p)
	}
	if !updated {
		perms = append(perms, &authpb.Permission{PermType: r.Perm.PermType, Key: r.Perm.Key, RangeEnd: r.Perm.RangeEnd})
		slices.SortStableFunc(perms, func(a, b *authpb.Permission) int { return bytes.Compare(a.Key, b.Key) })
	}
	if err := s.saveRole(w, &authpb.Role{Name: old.Name, KeyPermission: perms}); err != nil {
		return nil, err
	}
	return &pb.AuthRoleGrantPermissionResponse{}, nil
}

// roleRevokePermission removes the permission on exactly [Key, RangeEnd).
func (s *Store) roleRevokePermission(w Writer, r *pb.AuthRoleRevokePermissionRequest) (*pb.AuthRoleRevokePermissionResponse, error) {
	old := s.st.roles[r.Role]
	if old == nil {
		return nil, ErrRoleNotFound
	}
	perms := slices.DeleteFunc(slices.Clone(old.KeyPermission), func(p *authpb.Permission) bool {
		return bytes.Equal(p.Key, r.Key) && bytes.Equal(p.RangeEnd, r.RangeEnd)
	})
	if len(perms) == len(old.KeyPermission) {
		return nil, ErrPermissionNotGranted
	}
	if err := s.saveRole(w, &authpb.Role{Name: old.Name, KeyPermission: perms}); err != nil {
		return nil, err
	}
	return &pb.AuthRoleRevokePermissionResponse{}, nil
}
