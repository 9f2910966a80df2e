package auth

import (
	"log/slog"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/authpb"

	"github.com/cairnkv/cairn/pkg/store"
)

// The root user and role, which have every permission and which etcd will
// not let go while authentication is enabled.
const (
	RootUser = "root"
	RootRole = "root"
)

// Config configures a Store.
type Config struct {
	// Hasher hashes and checks passwords; nil means DefaultHasher.
	Hasher Hasher
	// Tokens issues and resolves tokens; nil means simple tokens that live
	// DefaultTokenTTL without use.
	Tokens TokenProvider
	Logger *slog.Logger
}

// Store is the auth state of a member. Apply changes it, from the apply
// loop only; every other method may be called concurrently.
type Store struct {
	hasher Hasher
	tokens TokenProvider
	log    *slog.Logger

	// noUserHash is a hash at the hasher's cost, which the password of a
	// user that does not exist is checked against.
	noUserHash     []byte
	noUserHashOnce sync.Once

	mu    sync.RWMutex
	st    *state
	perms map[string]*userPerms // by user, built on first use
}

// New returns an empty store (authentication disabled, revision 0); Load
// fills it from a db.
func New(cfg Config) *Store {
	if cfg.Hasher == nil {
		cfg.Hasher = DefaultHasher
	}
	if cfg.Tokens == nil {
		cfg.Tokens = newSimpleTokens(DefaultTokenTTL, time.Now)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Store{
		hasher: cfg.Hasher, tokens: cfg.Tokens, log: cfg.Logger,
		st: &state{users: map[string]*authpb.User{}, roles: map[string]*authpb.Role{}}, perms: map[string]*userPerms{},
	}
}

// Init writes the auth revision of a new db, 1, as etcd does when it first
// opens one; it leaves a db that has one alone.
func Init(r Reader, w Writer) error {
	if _, ok := r.Get(store.BucketAuth, store.AuthRevisionKey); ok {
		return nil
	}
	return putRevision(w, 1)
}

// Load replaces the store's state with the db's: at start, and when a
// snapshot from the leader replaces the db. Tokens of users that no longer
// exist stop working; disabled authentication drops every token.
func (s *Store) Load(r Reader) error {
	st, err := readState(r)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st = st
	clear(s.perms)
	if !st.enabled {
		s.tokens.clear()
	}
	return nil
}

// Enabled reports whether authentication is enabled.
func (s *Store) Enabled() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.enabled
}

// Revision returns the auth revision, which every change of users, roles,
// permissions or passwords, and disabling authentication, increments.
func (s *Store) Revision() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.revision
}

// unknownUserHash returns noUserHash, made on first use.
func (s *Store) unknownUserHash() []byte {
	s.noUserHashOnce.Do(func() {
		hash, err := s.hasher.Hash("no such user")
		if err != nil {
			s.log.Warn("hashing the password of unknown users failed", "err", err)
		}
		s.noUserHash = hash
	})
	return s.noUserHash
}

// Hasher returns the store's password hasher.
func (s *Store) Hasher() Hasher { return s.hasher }

// TokenInfo returns who a token stands for and the auth revision to check
// the request against: the current one for a simple token, the one a JWT
// was issued at. With authentication disabled it returns false: tokens
// mean nothing then.
func (s *Store) TokenInfo(token string) (Info, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.st.enabled {
		return Info{}, false
	}
	return s.tokens.info(token, s.st)
}

// SignsTokens reports whether this member issues tokens by itself (JWTs):
// Authenticate then signs one with SignToken instead of proposing it.
func (s *Store) SignsTokens() bool { return s.tokens.signed() }

// SignToken issues a JWT of user, whose password was checked at auth
// revision rev.
func (s *Store) SignToken(user string, rev uint64) (string, error) {
	return s.tokens.assign("", 0, user, rev)
}

// CheckSameRevision refuses, with ErrAuthOldRevision, a read made as info
// once the auth state has changed from the revision info was checked at,
// as etcd refuses a serialized read whose auth state moved under it.
func (s *Store) CheckSameRevision(info Info) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.st.enabled || info.Revision == 0 || info.Revision == s.st.revision {
		return nil
	}
	return ErrAuthOldRevision
}

// RootInfo is the identity the member itself uses for its own requests
// that need permissions, such as revoking expired leases.
func (s *Store) RootInfo() Info {
	return Info{Username: RootUser, Revision: s.Revision()}
}

// CheckPassword checks a user's password and returns the auth revision it
// was checked at. It fails with ErrAuthNotEnabled when authentication is
// disabled.
func (s *Store) CheckPassword(name, password string) (uint64, error) {
	s.mu.RLock()
	enabled, rev := s.st.enabled, s.st.revision
	u := s.st.users[name]
	s.mu.RUnlock()
	switch {
	case !enabled:
		return 0, ErrAuthNotEnabled
	case u == nil:
		// As long as a wrong password takes, so that the time of the
		// answer does not tell which users exist.
		s.hasher.Compare(s.unknownUserHash(), password)
		return 0, ErrAuthFailed
	case u.GetOptions().GetNoPassword():
		return 0, ErrNoPasswordUser
	}
	if err := s.hasher.Compare(u.Password, password); err != nil {
		if err != ErrAuthFailed {
			s.log.Warn("checking a password failed", "user", name, "err", err)
		}
		return 0, ErrAuthFailed
	}
	return rev, nil
}
