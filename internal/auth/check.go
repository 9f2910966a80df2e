package auth

import (
	"slices"

	"go.etcd.io/etcd/api/v3/authpb"
)

// Permission checks: who may do what, as of the store's current state.

// hasRootRole reports whether u has the root role.
func hasRootRole(u *authpb.User) bool {
	_, found := slices.BinarySearch(u.GetRoles(), RootRole)
	return found
}

// IsAdminPermitted checks that info is the root role's.
func (s *Store) IsAdminPermitted(info Info) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.adminPermittedLocked(info)
}

func (s *Store) adminPermittedLocked(info Info) error {
	if !s.st.enabled {
		return nil
	}
	if info.Username == "" {
		return ErrUserEmpty
	}
	u := s.st.users[info.Username]
	if u == nil {
		return ErrUserNotFound
	}
	if !hasRootRole(u) {
		return ErrPermissionDenied
	}
	return nil
}

// IsAuthenticated checks that info is a user's, when authentication is on.
func (s *Store) IsAuthenticated(info Info) error {
	if s.Enabled() && info.Username == "" {
		return ErrUserEmpty
	}
	return nil
}

// IsRangePermitted checks that info may read key, or the range [key,
// rangeEnd) when rangeEnd is given ("\x00": every key from key on).
func (s *Store) IsRangePermitted(info Info, key, rangeEnd []byte) error {
	return s.isOpPermitted(info, authpb.READ, key, rangeEnd)
}

// IsPutPermitted checks that info may write key.
func (s *Store) IsPutPermitted(info Info, key []byte) error {
	return s.isOpPermitted(info, authpb.WRITE, key, nil)
}

// IsDeleteRangePermitted checks that info may write key or [key, rangeEnd).
func (s *Store) IsDeleteRangePermitted(info Info, key, rangeEnd []byte) error {
	return s.isOpPermitted(info, authpb.WRITE, key, rangeEnd)
}

func (s *Store) isOpPermitted(info Info, typ authpb.Permission_Type, key, rangeEnd []byte) error {
	s.mu.RLock()
	if !s.st.enabled {
		s.mu.RUnlock()
		return nil
	}
	if info.Revision == 0 {
		s.mu.RUnlock()
		return ErrUserEmpty
	}
	if info.Revision < s.st.revision {
		s.mu.RUnlock()
		return ErrAuthOldRevision
	}
	u := s.st.users[info.Username]
	if u == nil {
		s.mu.RUnlock()
		return ErrPermissionDenied
	}
	if hasRootRole(u) {
		s.mu.RUnlock()
		return nil
	}
	p := s.perms[info.Username]
	s.mu.RUnlock()
	if p == nil {
		p = s.buildPerms(info.Username)
	}
	if p == nil || !p.allows(typ, key, rangeEnd) {
		return ErrPermissionDenied
	}
	return nil
}

// buildPerms merges a user's roles into its permission cache entry.
func (s *Store) buildPerms(name string) *userPerms {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.perms[name]; p != nil {
		return p
	}
	u := s.st.users[name]
	if u == nil {
		return nil
	}
	var roles []*authpb.Role
	for _, r := range u.Roles {
		if role := s.st.roles[r]; role != nil {
			roles = append(roles, role)
		}
	}
	p := newUserPerms(roles)
	s.perms[name] = p
	return p
}
