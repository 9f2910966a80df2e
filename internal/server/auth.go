package server

import (
	"context"
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/auth"
	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/store"
)

// This file is the member's side of authentication: the auth store's
// lifecycle, the apply of Auth* requests, the permission check of writes at
// apply time, and the calls internal/api makes (Authenticate, the Auth
// requests, token lookup).

// openAuth builds the auth store of st, with the token provider of
// --auth-token: a new db gets etcd's initial auth revision, then the store
// loads the auth buckets.
func (s *Server) openAuth(st *store.Store, tokens auth.TokenProvider) error {
	s.auth = auth.New(auth.Config{Tokens: tokens, Hasher: auth.HasherForCost(s.cfg.BcryptCost, s.log), Logger: s.log})
	w := st.Write()
	err := auth.Init(writeTxReader{w.Backend()}, w.Backend())
	if endErr := w.End(); err == nil {
		err = endErr
	}
	if err != nil {
		return fmt.Errorf("initialise the auth buckets: %w", err)
	}
	return s.loadAuth(st)
}

// writeTxReader reads through a write transaction, seeing its own writes.
type writeTxReader struct{ *backend.WriteTx }

func (r writeTxReader) Get(bucket, key []byte) ([]byte, bool) {
	v := r.WriteTx.Get(bucket, key)
	return v, v != nil
}

// loadAuth (re)loads the auth store from st's buckets.
func (s *Server) loadAuth(st *store.Store) error {
	rt := st.Backend().Read()
	defer rt.Close()
	if err := s.auth.Load(rt); err != nil {
		return fmt.Errorf("load auth state: %w", err)
	}
	return nil
}

// checkApplyPermission checks a write at apply time (auth.IsRequestPermitted).
func (s *Server) checkApplyPermission(req *pb.InternalRaftRequest) error {
	return s.auth.IsRequestPermitted(req, s.st().LeaseKeys)
}

// CheckLeaseKeysReadable checks read on every key attached to a lease, for
// LeaseTimeToLive, whose answer may name them.
func (s *Server) CheckLeaseKeysReadable(info auth.Info, id int64) error {
	return s.auth.AreLeaseKeysReadable(info, s.st().LeaseKeys(id))
}

// AuthStore returns the member's auth store, for permission checks.
func (s *Server) AuthStore() *auth.Store { return s.auth }

// applyAuth applies an Auth* request at raft index index.
func (s *Server) applyAuth(w *store.WriteTxn, req *pb.InternalRaftRequest, index uint64) applyResult {
	resp, err := s.auth.Apply(w.Backend(), req, index, auth.HeaderInfo(req))
	return applyResult{resp: resp, err: err}
}

// AuthInfoFromToken returns who a token stands for. A simple token names
// the raft index it was assigned at; a member that has not applied it yet
// first catches up with the leader. A JWT stands on its own.
func (s *Server) AuthInfoFromToken(ctx context.Context, token string) (auth.Info, error) {
	if index, ok := auth.TokenIndex(token); ok && index > s.AppliedIndex() {
		if err := s.LinearizableReadNotify(ctx); err != nil {
			return auth.Info{}, err
		}
	}
	info, ok := s.auth.TokenInfo(token)
	if !ok {
		return auth.Info{}, auth.ErrInvalidAuthToken
	}
	return info, nil
}

// Authenticate checks a user's password on this member, once it has
// caught up with the leader, and issues a token (auth.Authenticate): a
// simple token is proposed, so that every member assigns it when it
// applies the proposal.
func (s *Server) Authenticate(ctx context.Context, name, password string) (*pb.AuthenticateResponse, error) {
	if err := s.LinearizableReadNotify(ctx); err != nil {
		return nil, err
	}
	return s.auth.Authenticate(name, password, func(r *pb.InternalAuthenticateRequest) (*pb.AuthenticateResponse, error) {
		resp, err := s.Propose(ctx, &pb.InternalRaftRequest{Authenticate: r})
		if err != nil {
			return nil, err
		}
		r2, _ := resp.(*pb.AuthenticateResponse)
		return r2, nil
	})
}

// AuthRequest proposes an Auth* request (other than Authenticate) and
// returns its response. Passwords are hashed here, on the member that
// receives them, so that the log holds only the hash.
func (s *Server) AuthRequest(ctx context.Context, req *pb.InternalRaftRequest) (proto.Message, error) {
	if err := s.auth.HashPassword(req); err != nil {
		return nil, err
	}
	return s.Propose(ctx, req)
}
