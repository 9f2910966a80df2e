package auth

import (
	"encoding/base64"
	"fmt"
	"slices"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/pkg/store"
)

// EncodeHashedPassword is how a proposal carries a password hash: base64,
// in the HashedPassword field, as etcd's proposals do.
func EncodeHashedPassword(hash []byte) string { return base64.StdEncoding.EncodeToString(hash) }

// passwordHash returns the hash to store for a request that carries a hash
// (from the proposing member) or, from older proposers, the password.
func (s *Store) passwordHash(hashed, password string) ([]byte, error) {
	if hashed != "" {
		b, err := base64.StdEncoding.DecodeString(hashed)
		if err != nil {
			return nil, fmt.Errorf("auth: decode the hashed password: %w", err)
		}
		return b, nil
	}
	return s.hasher.Hash(password)
}

func (s *Store) userAdd(w Writer, r *pb.AuthUserAddRequest) (*pb.AuthUserAddResponse, error) {
	if r.Name == "" {
		return nil, ErrUserEmpty
	}
	if s.st.users[r.Name] != nil {
		return nil, ErrUserAlreadyExist
	}
	opts := r.Options
	if opts == nil {
		opts = &authpb.UserAddOptions{}
	}
	u := &authpb.User{Name: []byte(r.Name), Options: proto.Clone(opts).(*authpb.UserAddOptions)}
	if !opts.NoPassword {
		hash, err := s.passwordHash(r.HashedPassword, r.Password)
		if err != nil {
			return nil, err
		}
		u.Password = hash
	}
	if err := s.saveUser(w, u); err != nil {
		return nil, err
	}
	return &pb.AuthUserAddResponse{}, nil
}

// saveUser writes a new or changed user and commits a revision.
func (s *Store) saveUser(w Writer, u *authpb.User) error {
	if err := putUser(w, u); err != nil {
		return err
	}
	s.st.users[string(u.Name)] = u
	return s.commitRevision(w)
}

func (s *Store) userDelete(w Writer, r *pb.AuthUserDeleteRequest) (*pb.AuthUserDeleteResponse, error) {
	if s.st.enabled && r.Name == RootUser {
		return nil, ErrInvalidAuthMgmt
	}
	if s.st.users[r.Name] == nil {
		return nil, ErrUserNotFound
	}
	if err := w.Delete(store.BucketAuthUsers, []byte(r.Name)); err != nil {
		return nil, err
	}
	delete(s.st.users, r.Name)
	s.tokens.invalidateUser(r.Name)
	if err := s.commitRevision(w); err != nil {
		return nil, err
	}
	return &pb.AuthUserDeleteResponse{}, nil
}

func (s *Store) userChangePassword(w Writer, r *pb.AuthUserChangePasswordRequest) (*pb.AuthUserChangePasswordResponse, error) {
	old := s.st.users[r.Name]
	if old == nil {
		return nil, ErrUserNotFound
	}
	hash, err := s.passwordHash(r.HashedPassword, r.Password)
	if err != nil {
		return nil, err
	}
	u := &authpb.User{Name: old.Name, Password: hash, Roles: old.Roles, Options: old.Options}
	if err := s.saveUser(w, u); err != nil {
		return nil, err
	}
	s.tokens.invalidateUser(r.Name)
	return &pb.AuthUserChangePasswordResponse{}, nil
}

func (s *Store) userGrantRole(w Writer, r *pb.AuthUserGrantRoleRequest) (*pb.AuthUserGrantRoleResponse, error) {
	old := s.st.users[r.User]
	if old == nil {
		return nil, ErrUserNotFound
	}
	// The root role need not exist to be granted.
	if r.Role != RootRole && s.st.roles[r.Role] == nil {
		return nil, ErrRoleNotFound
	}
	i, found := slices.BinarySearch(old.Roles, r.Role)
	if found {
		return &pb.AuthUserGrantRoleResponse{}, nil // as etcd: no change, no new revision
	}
	u := &authpb.User{Name: old.Name, Password: old.Password, Roles: slices.Insert(slices.Clone(old.Roles), i, r.Role), Options: old.Options}
	if err := s.saveUser(w, u); err != nil {
		return nil, err
	}
	return &pb.AuthUserGrantRoleResponse{}, nil
}

func (s *Store) userRevokeRole(w Writer, r *pb.AuthUserRevokeRoleRequest) (*pb.AuthUserRevokeRoleResponse, error) {
	if s.st.enabled && r.Name == RootUser && r.Role == RootRole {
		return nil, ErrInvalidAuthMgmt
	}
	old := s.st.users[r.Name]
	if old == nil {
		return nil, ErrUserNotFound
	}
	roles := slices.DeleteFunc(slices.Clone(old.Roles), func(role string) bool { return role == r.Role })
	if len(roles) == len(old.Roles) {
		return nil, ErrRoleNotGranted
	}
	u := &authpb.User{Name: old.Name, Password: old.Password, Roles: roles, Options: old.Options}
	if err := s.saveUser(w, u); err != nil {
		return nil, err
	}
	return &pb.AuthUserRevokeRoleResponse{}, nil
}

// userGet is open to root and to the user itself.
func (s *Store) userGet(r *pb.AuthUserGetRequest, info Info) (*pb.AuthUserGetResponse, error) {
	if err := s.adminPermittedLocked(info); err != nil && info.Username != r.Name {
		return nil, err
	}
	u := s.st.users[r.Name]
	if u == nil {
		return nil, ErrUserNotFound
	}
	return &pb.AuthUserGetResponse{Roles: slices.Clone(u.Roles)}, nil
}
