package auth

import "context"

// Info is who makes a request: the user a token stands for, and the auth
// revision the request was checked against. The zero Info is anonymous.
type Info struct {
	Username string
	Revision uint64
}

type infoKey struct{}

// WithInfo returns a context that carries info; a proposal made with it
// records the user and revision in its raft request header, where the apply
// loop checks them.
func WithInfo(ctx context.Context, info Info) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// InfoFrom returns the Info a context carries, if any.
func InfoFrom(ctx context.Context) (Info, bool) {
	info, ok := ctx.Value(infoKey{}).(Info)
	return info, ok
}
