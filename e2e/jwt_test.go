package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/cairnkv/cairn/internal/auth/jwtkeytest"
)

// setUpJWTUsers creates root, writes /app/x and enables authentication;
// the same steps on etcd and on cairn leave both at the same auth
// revision.
func setUpJWTUsers(t *testing.T, ctx context.Context, cli *clientv3.Client) {
	t.Helper()
	_, err := cli.UserAdd(ctx, "root", "rootpw")
	if err == nil {
		_, err = cli.UserGrantRole(ctx, "root", "root")
	}
	if err == nil {
		_, err = cli.Put(ctx, "/app/x", "1")
	}
	if err == nil {
		_, err = cli.AuthEnable(ctx)
	}
	if err != nil {
		t.Fatalf("set up root and auth: %v", err)
	}
}

// grpcConn is a plain gRPC connection to a client URL, closed with the test.
func grpcConn(t *testing.T, curl string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(strings.TrimPrefix(curl, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// login authenticates over plain gRPC.
func login(ctx context.Context, conn *grpc.ClientConn, user, password string) (string, error) {
	r, err := pb.NewAuthClient(conn).Authenticate(ctx, &pb.AuthenticateRequest{Name: user, Password: password})
	return r.GetToken(), err
}

// readAs reads /app/x with a token, with no client to log in again.
func readAs(ctx context.Context, conn *grpc.ClientConn, token string) error {
	_, err := pb.NewKVClient(conn).Range(metadata.AppendToOutgoingContext(ctx, "token", token), &pb.RangeRequest{Key: []byte("/app/x")})
	return err
}

// TestJWTAcrossMembers: three members share a key pair, the third with the
// public key only (verify-only, as etcd allows): a token one member signs
// works on every member; the verify-only member refuses to sign.
func TestJWTAcrossMembers(t *testing.T) {
	dir := t.TempDir()
	pub, priv := jwtkeytest.New(t, "ES256").Write(t, dir, "es256")
	ms := newCluster(t, 3, clusterOptions{extraArgs: func(name string) []string {
		if name == "m3" {
			return []string{"--auth-token", "jwt,pub-key=" + pub + ",sign-method=ES256"}
		}
		return []string{"--auth-token", "jwt,pub-key=" + pub + ",priv-key=" + priv + ",sign-method=ES256"}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	setUpJWTUsers(t, ctx, client(t, ms[0]))
	tok, err := login(ctx, grpcConn(t, ms[1].curl), "root", "rootpw")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if err := readAs(ctx, grpcConn(t, m.curl), tok); err != nil {
			t.Errorf("root's token from m2 on %s: %v", m.name, err)
		}
	}
	_, err = login(ctx, grpcConn(t, ms[2].curl), "root", "rootpw")
	if err == nil || !strings.Contains(err.Error(), "auth: token signing attempted with verify-only key") {
		t.Errorf("login on the verify-only member: %v", err)
	}
	if _, err := login(ctx, grpcConn(t, ms[2].curl), "root", "wrong"); !errors.Is(err, rpctypes.ErrGRPCAuthFailed) {
		t.Errorf("a wrong password on the verify-only member: %v", err)
	}
}
