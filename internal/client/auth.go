package client

import (
	"context"
	"sync"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/cairnkv/cairn/internal/version"
)

const authenticateMethod = "/etcdserverpb.Auth/Authenticate"

// AuthenticationError is the error of a call that was not sent because the
// client could not log in with its username and password.
type AuthenticationError struct {
	Err error // the error of the Authenticate call
}

func (e *AuthenticationError) Error() string { return e.Err.Error() }
func (e *AuthenticationError) Unwrap() error { return e.Err }

// authenticator supplies the token sent with each request: obtained with the
// Authenticate RPC from a username and password and renewed when the server
// rejects it, or given once by the user.
type authenticator struct {
	username string
	password string
	conn     grpc.ClientConnInterface // used for Authenticate only

	mu    sync.Mutex
	token string
	// serverAuthOff is set when the server said authentication is not
	// enabled: requests then go without a token until one is rejected.
	serverAuthOff bool
}

func newAuthenticator(cfg Config, conn grpc.ClientConnInterface) *authenticator {
	a := &authenticator{username: cfg.Username, password: cfg.Password, conn: conn}
	if cfg.Username == "" {
		a.token = cfg.Token
	}
	return a
}

// current returns the token to send, authenticating first if there is none
// yet. It returns "" when the client does not authenticate.
func (a *authenticator) current(ctx context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.token != "" || a.username == "" || a.serverAuthOff {
		return a.token, nil
	}
	return a.authenticateLocked(ctx)
}

// renew replaces a token the server rejected. A token renewed meanwhile by
// another call is kept. It reports whether a new token may help, which is
// never the case for a token given by the user.
func (a *authenticator) renew(ctx context.Context, rejected string) (bool, error) {
	if a.username == "" {
		return false, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.token != rejected {
		return true, nil
	}
	a.serverAuthOff = false
	_, err := a.authenticateLocked(ctx)
	return err == nil, err
}

func (a *authenticator) authenticateLocked(ctx context.Context) (string, error) {
	resp, err := pb.NewAuthClient(a.conn).Authenticate(ctx,
		&pb.AuthenticateRequest{Name: a.username, Password: a.password})
	if err != nil {
		if errorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCAuthNotEnabled) {
			a.serverAuthOff = true
			return "", nil
		}
		return "", &AuthenticationError{Err: err}
	}
	a.token = resp.GetToken()
	return a.token, nil
}

// outgoingContext adds the token and the client's API version to the
// metadata of a call to method, and etcd's require-leader flag when
// requireLeader is set. It returns the token it added.
func (a *authenticator) outgoingContext(ctx context.Context, method string, requireLeader bool) (context.Context, string, error) {
	kv := make([]string, 0, 6)
	kv = append(kv, rpctypes.MetadataClientAPIVersionKey, version.APIVersion)
	if requireLeader {
		kv = append(kv, rpctypes.MetadataRequireLeaderKey, rpctypes.MetadataHasLeader)
	}
	var token string
	if method != authenticateMethod {
		var err error
		if token, err = a.current(ctx); err != nil {
			return ctx, "", err
		}
		if token != "" {
			kv = append(kv, rpctypes.TokenFieldNameGRPC, token)
		}
	}
	return metadata.AppendToOutgoingContext(ctx, kv...), token, nil
}

// isRejectedToken says whether err means the token must be renewed: it is
// no longer valid, or there was none because authentication was off when
// the client last asked and has been turned on since.
func isRejectedToken(err error) bool {
	if err == nil {
		return false
	}
	desc := errorDesc(err)
	return desc == rpctypes.ErrorDesc(rpctypes.ErrGRPCInvalidAuthToken) ||
		desc == rpctypes.ErrorDesc(rpctypes.ErrGRPCAuthOldRevision) ||
		desc == rpctypes.ErrorDesc(rpctypes.ErrGRPCUserEmpty)
}
