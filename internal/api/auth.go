package api

import (
	"context"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/cairnkv/cairn/internal/auth"
)

// This file serves the Auth service and guards every other one: the
// interceptors resolve the request's token to a user and apply the
// method's rule (below); key permissions are checked where the keys are
// known (Range, Watch, LeaseTimeToLive here; writes at apply time).

func init() {
	for err, g := range map[error]error{
		auth.ErrRootUserNotExist:     rpctypes.ErrGRPCRootUserNotExist,
		auth.ErrRootRoleNotExist:     rpctypes.ErrGRPCRootRoleNotExist,
		auth.ErrUserAlreadyExist:     rpctypes.ErrGRPCUserAlreadyExist,
		auth.ErrUserEmpty:            rpctypes.ErrGRPCUserEmpty,
		auth.ErrUserNotFound:         rpctypes.ErrGRPCUserNotFound,
		auth.ErrRoleAlreadyExist:     rpctypes.ErrGRPCRoleAlreadyExist,
		auth.ErrRoleNotFound:         rpctypes.ErrGRPCRoleNotFound,
		auth.ErrRoleEmpty:            rpctypes.ErrGRPCRoleEmpty,
		auth.ErrAuthFailed:           rpctypes.ErrGRPCAuthFailed,
		auth.ErrPermissionNotGiven:   rpctypes.ErrGRPCPermissionNotGiven,
		auth.ErrPermissionDenied:     rpctypes.ErrGRPCPermissionDenied,
		auth.ErrRoleNotGranted:       rpctypes.ErrGRPCRoleNotGranted,
		auth.ErrPermissionNotGranted: rpctypes.ErrGRPCPermissionNotGranted,
		auth.ErrAuthNotEnabled:       rpctypes.ErrGRPCAuthNotEnabled,
		auth.ErrInvalidAuthToken:     rpctypes.ErrGRPCInvalidAuthToken,
		auth.ErrInvalidAuthMgmt:      rpctypes.ErrGRPCInvalidAuthMgmt,
		auth.ErrAuthOldRevision:      rpctypes.ErrGRPCAuthOldRevision,
		// auth.ErrNoPasswordUser has no gRPC error of its own: etcd sends
		// it as Unknown with its text, as toGRPC does by default.
	} {
		grpcErrors[err] = g
	}
}

// rule is what a method asks of its caller while authentication is on.
type rule int

const (
	ruleUser  rule = iota // any user (the default)
	ruleOpen              // no user needed; a token given must still be valid
	ruleAdmin             // the root role
	ruleSkip              // no check here: Authenticate ignores tokens, Watch checks each watcher, RangeStream its request
)

// methodRules are the methods whose rule is not ruleUser, as etcd 3.7 has
// them (observed with its clients; auth_transcript_test.go pins them).
// Alarm is ruleAdmin but for GET (see ruleOf). Auth management requests
// are checked at apply time, where etcd checks them: root, or the user
// itself for UserGet, or a user of the role for RoleGet.
var methodRules = map[string]rule{
	"/etcdserverpb.Auth/Authenticate":      ruleSkip,
	"/etcdserverpb.Auth/AuthStatus":        ruleOpen,
	"/etcdserverpb.Watch/Watch":            ruleSkip,
	"/etcdserverpb.KV/RangeStream":         ruleSkip,
	"/etcdserverpb.KV/Compact":             ruleAdmin,
	"/etcdserverpb.Cluster/MemberAdd":      ruleAdmin,
	"/etcdserverpb.Cluster/MemberRemove":   ruleAdmin,
	"/etcdserverpb.Cluster/MemberUpdate":   ruleAdmin,
	"/etcdserverpb.Cluster/MemberPromote":  ruleAdmin,
	"/etcdserverpb.Maintenance/Hash":       ruleAdmin,
	"/etcdserverpb.Maintenance/HashKV":     ruleAdmin,
	"/etcdserverpb.Maintenance/Defragment": ruleAdmin,
	"/etcdserverpb.Maintenance/Snapshot":   ruleAdmin,
	"/etcdserverpb.Maintenance/MoveLeader": ruleAdmin,
	"/etcdserverpb.Maintenance/Downgrade":  ruleAdmin,
}

// ruleOf is the rule of one call; req is nil for streams.
func ruleOf(method string, req any) rule {
	if !strings.HasPrefix(method, "/etcdserverpb.") {
		return ruleOpen // health and reflection services
	}
	if ar, ok := req.(*pb.AlarmRequest); ok && ar.Action != pb.AlarmRequest_GET {
		return ruleAdmin
	}
	return methodRules[method]
}

// tokenOf returns the token a call carries, and whether it carries one: the
// first "token" metadata, else the first "authorization" (the JSON
// gateway's Authorization header); etcd drops a leading "Bearer " from
// either. An empty one is given all the same, and is invalid, as in etcd.
func tokenOf(ctx context.Context) (string, bool) {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return "", false
	}
	for _, k := range []string{rpctypes.TokenFieldNameGRPC, rpctypes.TokenFieldNameSwagger} {
		if v := md.Get(k); len(v) > 0 {
			return strings.TrimPrefix(v[0], "Bearer "), true
		}
	}
	return "", false
}

// authInfo resolves the call's token, if any, to the user it stands for;
// without a token, the user is that of the client certificate (certUser),
// if any. With authentication disabled every call is anonymous.
func (a *API) authInfo(ctx context.Context) (auth.Info, error) {
	as := a.s.AuthStore()
	if !as.Enabled() {
		return auth.Info{}, nil
	}
	token, given := tokenOf(ctx)
	switch {
	case !given:
		if user := a.certUser(ctx); user != "" {
			return auth.Info{Username: user, Revision: as.Revision()}, nil
		}
		return auth.Info{}, nil
	case token == "":
		return auth.Info{}, auth.ErrInvalidAuthToken
	}
	return a.s.AuthInfoFromToken(ctx, token)
}

// guard applies the rule of a call and returns the context that carries
// its user, which proposals record in their header.
func (a *API) guard(ctx context.Context, method string, req any) (context.Context, error) {
	as := a.s.AuthStore()
	r := ruleOf(method, req)
	if r == ruleSkip || !as.Enabled() {
		return ctx, nil
	}
	info, err := a.authInfo(ctx)
	if err != nil {
		return nil, err
	}
	ctx = auth.WithInfo(ctx, info)
	switch r {
	case ruleAdmin:
		err = as.IsAdminPermitted(info)
	case ruleUser:
		err = as.IsAuthenticated(info)
	}
	return ctx, err
}

// streamAuth is the stream interceptor of every service.
func (a *API) streamAuth(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, err := a.guard(ss.Context(), info.FullMethod, nil)
	if err != nil {
		// Refuse on the first request, as etcd does: ending the stream
		// before the client has sent it would turn the refusal into an EOF
		// on the client's send.
		ss.RecvMsg(new(emptypb.Empty))
		return toGRPC(err)
	}
	return handler(srv, &ctxStream{ServerStream: ss, ctx: ctx})
}

// ctxStream is a stream with a context of the interceptor's: its caller, a cancellation.
type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *ctxStream) Context() context.Context { return s.ctx }

// checkWatch checks that the caller of a watch stream may read the range a
// watcher asks for.
func (a *API) checkWatch(ctx context.Context, cr *pb.WatchCreateRequest) error {
	info, err := a.authInfo(ctx)
	if err != nil {
		return err
	}
	return a.s.AuthStore().IsRangePermitted(info, cr.Key, cr.RangeEnd)
}

// callerInfo is the user the interceptor found for a call.
func callerInfo(ctx context.Context) auth.Info {
	info, _ := auth.InfoFrom(ctx)
	return info
}
