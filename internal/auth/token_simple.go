package auth

import (
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultTokenTTL is how long a simple token lives without use, as etcd's
// --auth-token-ttl default.
const DefaultTokenTTL = 300 * time.Second

// tokenPrefixLen is the number of random letters of a simple token.
const tokenPrefixLen = 16

const tokenLetters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// NewTokenPrefix returns the random part of a simple token: 16 letters. The
// member that receives an Authenticate request draws it and proposes it;
// every member then assigns "<prefix>.<raft index>" to the user when it
// applies the request, so that the token is valid on all of them.
func NewTokenPrefix() (string, error) {
	out := make([]byte, 0, tokenPrefixLen)
	buf := make([]byte, tokenPrefixLen)
	// Bytes past the last whole multiple of 52 are dropped, so that every
	// letter is as likely.
	limit := byte(256 / len(tokenLetters) * len(tokenLetters))
	for len(out) < tokenPrefixLen {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("draw a token: %w", err)
		}
		for _, c := range buf {
			if c < limit && len(out) < tokenPrefixLen {
				out = append(out, tokenLetters[int(c)%len(tokenLetters)])
			}
		}
	}
	return string(out), nil
}

// TokenIndex returns the raft index a simple token was assigned at; a
// member must have applied that index before it can know the token.
func TokenIndex(token string) (uint64, bool) {
	prefix, index, ok := strings.Cut(token, ".")
	if !ok || len(prefix) != tokenPrefixLen {
		return 0, false
	}
	n, err := strconv.ParseUint(index, 10, 64)
	return n, err == nil
}

// simpleTokens is etcd's "simple" token provider: opaque tokens kept in
// memory, each expiring after ttl without use.
type simpleTokens struct {
	ttl time.Duration
	now func() time.Time

	mu        sync.Mutex
	tokens    map[string]*simpleToken
	lastSweep time.Time
}

type simpleToken struct {
	user     string
	deadline time.Time
}

func newSimpleTokens(ttl time.Duration, now func() time.Time) *simpleTokens {
	return &simpleTokens{ttl: ttl, now: now, tokens: map[string]*simpleToken{}, lastSweep: now()}
}

// assign makes "<prefix>.<index>" a token of user and returns it; the
// token stands for the auth revision current when it is used.
func (t *simpleTokens) assign(prefix string, index uint64, user string, _ uint64) (string, error) {
	token := prefix + "." + strconv.FormatUint(index, 10)
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.sweepLocked(now)
	t.tokens[token] = &simpleToken{user: user, deadline: now.Add(t.ttl)}
	return token, nil
}

// info returns the user of a live token, if the user still exists, at the
// current auth revision, and extends the token's life.
func (t *simpleTokens) info(token string, st *state) (Info, bool) {
	user, ok := t.user(token)
	if !ok || st.users[user] == nil {
		return Info{}, false
	}
	return Info{Username: user, Revision: st.revision}, true
}

// signed is false: simple tokens are assigned through the log.
func (t *simpleTokens) signed() bool { return false }

// user returns the user of a live token and extends its life.
func (t *simpleTokens) user(token string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st, ok := t.tokens[token]
	if !ok {
		return "", false
	}
	now := t.now()
	if !now.Before(st.deadline) {
		delete(t.tokens, token)
		return "", false
	}
	st.deadline = now.Add(t.ttl)
	return st.user, true
}

// sweepLocked drops expired tokens, at most once per ttl.
func (t *simpleTokens) sweepLocked(now time.Time) {
	if now.Sub(t.lastSweep) < t.ttl {
		return
	}
	t.lastSweep = now
	for tok, st := range t.tokens {
		if !now.Before(st.deadline) {
			delete(t.tokens, tok)
		}
	}
}

// invalidateUser drops every token of user.
func (t *simpleTokens) invalidateUser(user string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for tok, st := range t.tokens {
		if st.user == user {
			delete(t.tokens, tok)
		}
	}
}

// clear drops every token.
func (t *simpleTokens) clear() {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.tokens)
}
