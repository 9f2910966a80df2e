package auth

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// authMaxRetries bounds how often Authenticate checks a password again
// because the auth revision moved while its token was being proposed.
const authMaxRetries = 5

// Authenticate checks a user's password and, if it matches, issues a
// token: a JWT this store signs, with the auth revision the password was
// checked at, as etcd does without a log entry; or a simple token, which
// propose replicates (the request names the token's prefix) so that every
// member assigns it when it applies the request. The password never enters
// the log. The caller has caught up with the leader first.
func (s *Store) Authenticate(name, password string, propose func(*pb.InternalAuthenticateRequest) (*pb.AuthenticateResponse, error)) (*pb.AuthenticateResponse, error) {
	if s.SignsTokens() {
		rev, err := s.CheckPassword(name, password)
		if err != nil {
			return nil, err
		}
		token, err := s.SignToken(name, rev)
		if err != nil {
			return nil, err
		}
		return &pb.AuthenticateResponse{Token: token}, nil
	}
	for attempt := 0; ; attempt++ {
		rev, err := s.CheckPassword(name, password)
		if err != nil {
			return nil, err
		}
		prefix, err := NewTokenPrefix()
		if err != nil {
			return nil, err
		}
		resp, err := propose(&pb.InternalAuthenticateRequest{Name: name, SimpleToken: prefix})
		if err != nil {
			return nil, err
		}
		// The password was checked at rev; a change since (a new password,
		// a deleted user) means it must be checked again.
		if rev == s.Revision() {
			return resp, nil
		}
		if attempt == authMaxRetries {
			return nil, ErrAuthOldRevision
		}
		s.log.Info("the auth revision moved while authenticating; checking the password again", "user", name)
	}
}
