package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/cairnkv/cairn/internal/auth"
	"github.com/cairnkv/cairn/internal/auth/jwtkeytest"
	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/internal/testnet"
)

// jwtParts decodes a token's header and claims.
func jwtParts(t *testing.T, token string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not three parts", token)
	}
	for i, into := range []*map[string]any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err == nil {
			err = json.Unmarshal(b, into)
		}
		if err != nil {
			t.Fatalf("part %d of %q: %v", i, token, err)
		}
	}
	return header, claims
}

// signWith signs a token for user at rev as a server with --auth-token
// option would.
func signWith(t *testing.T, option, user string, rev uint64) string {
	t.Helper()
	tokens, err := auth.NewTokenProvider(option, 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := auth.New(auth.Config{Tokens: tokens}).SignToken(user, rev)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// jwtServer is one side of the comparison: real etcd or cairn serve, set
// up by setUpJWTUsers.
type jwtServer struct {
	name string
	curl string
	conn *grpc.ClientConn
}

func newJWTServer(t *testing.T, ctx context.Context, name, curl string) *jwtServer {
	t.Helper()
	s := &jwtServer{name: name, curl: curl, conn: grpcConn(t, curl)}
	setUpJWTUsers(t, ctx, s.client(t, ""))
	return s
}

// client is a clientv3 client of the server, logged in as root with a
// user, anonymous without.
func (s *jwtServer) client(t *testing.T, user string) *clientv3.Client {
	t.Helper()
	cfg := clientv3.Config{Endpoints: []string{s.curl}, DialTimeout: 5 * time.Second}
	if user == "root" {
		cfg.Username, cfg.Password = "root", "rootpw"
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatalf("client of %s: %v", s.name, err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// startJWTPair starts real etcd and cairn serve with the same
// --auth-token, both set up by setUpJWTUsers.
func startJWTPair(t *testing.T, ctx context.Context, option string) (etcd, cairn *jwtServer) {
	t.Helper()
	etcd = newJWTServer(t, ctx, "etcd", etcdref.Start(t, testnet.FreeURL(t), testnet.FreeURL(t), "--auth-token", option))
	cairn = newJWTServer(t, ctx, "cairn", newCluster(t, 1, clusterOptions{extraArgs: func(string) []string {
		return []string{"--auth-token", option}
	}})[0].curl)
	return etcd, cairn
}

// writeAs writes /app/x with a token.
func writeAs(ctx context.Context, conn *grpc.ClientConn, token string) error {
	_, err := pb.NewKVClient(conn).Put(metadata.AppendToOutgoingContext(ctx, "token", token), &pb.PutRequest{Key: []byte("/app/x"), Value: []byte("2")})
	return err
}

// TestJWTInteropWithEtcd runs real etcd 3.7.3 and cairn serve with the
// same --auth-token jwt key pair and the same users: their tokens have the
// same header and claims (names, JSON types, values but exp's second);
// each takes the other's while the auth revisions agree and refuses it,
// as etcd does its own, once the auth state has moved on; tokens of
// another key, or from an auth revision ahead, get the same answers.
func TestJWTInteropWithEtcd(t *testing.T) {
	etcdref.Bin(t, "etcd")
	for _, method := range []string{"RS256", "PS384", "ES512", "EdDSA", "HS256"} {
		t.Run(method, func(t *testing.T) {
			option := jwtkeytest.New(t, method).Option(t, t.TempDir(), method)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			etcd, cairn := startJWTPair(t, ctx, option)
			tokens := map[string]string{}
			for _, s := range []*jwtServer{etcd, cairn} {
				tok, err := login(ctx, s.conn, "root", "rootpw")
				if err != nil {
					t.Fatalf("login on %s: %v", s.name, err)
				}
				tokens[s.name] = tok
			}
			compareJWTs(t, tokens["etcd"], tokens["cairn"])
			_, claims := jwtParts(t, tokens["etcd"])
			rev := uint64(claims["revision"].(float64))
			other := jwtkeytest.New(t, method).Option(t, t.TempDir(), method)
			ahead := signWith(t, option, "root", rev+1)

			for _, s := range []*jwtServer{etcd, cairn} {
				for _, c := range []struct {
					what      string
					err, want error
				}{
					{"etcd's token", readAs(ctx, s.conn, tokens["etcd"]), nil},
					{"cairn's token", readAs(ctx, s.conn, tokens["cairn"]), nil},
					{"a token of another key", readAs(ctx, s.conn, signWith(t, other, "root", rev)), rpctypes.ErrGRPCInvalidAuthToken},
					{"a read with a token of a later revision", readAs(ctx, s.conn, ahead), rpctypes.ErrGRPCAuthOldRevision},
					{"a write with a token of a later revision", writeAs(ctx, s.conn, ahead), nil},
				} {
					if !errors.Is(c.err, c.want) {
						t.Errorf("%s, %s: %v, want %v", s.name, c.what, c.err, c.want)
					}
				}
				if _, err := s.client(t, "root").RoleAdd(ctx, "another"); err != nil {
					t.Fatal(err)
				}
				for from, tok := range tokens {
					if err := readAs(ctx, s.conn, tok); !errors.Is(err, rpctypes.ErrGRPCAuthOldRevision) {
						t.Errorf("%s and %s's token from before a change: %v", s.name, from, err)
					}
				}
			}
		})
	}
}

// compareJWTs wants etcd's and cairn's tokens alike: the same header, the
// same claims with the same JSON types, exp within a few seconds of each
// other and etcd's default 5 minutes ahead.
func compareJWTs(t *testing.T, etcdToken, cairnToken string) {
	t.Helper()
	eh, ec := jwtParts(t, etcdToken)
	ch, cc := jwtParts(t, cairnToken)
	if !reflect.DeepEqual(eh, ch) {
		t.Errorf("headers differ: etcd %v, cairn %v", eh, ch)
	}
	eExp, _ := ec["exp"].(float64)
	cExp, _ := cc["exp"].(float64)
	if math.Abs(eExp-cExp) > 5 || math.Abs(eExp-float64(time.Now().Add(auth.DefaultJWTTTL).Unix())) > 10 {
		t.Errorf("exp: etcd %v, cairn %v, want now+%v", eExp, cExp, auth.DefaultJWTTTL)
	}
	delete(ec, "exp")
	delete(cc, "exp")
	if !reflect.DeepEqual(ec, cc) || fmt.Sprint(ec["username"]) != "root" {
		t.Errorf("claims differ: etcd %v, cairn %v", ec, cc)
	}
	t.Logf("etcd's token: header %v, claims %v (exp %.0f)", eh, ec, eExp)
}

// TestJWTVerifyOnlyAsEtcd: with a public key only, etcd and cairn check
// tokens signed with its private key and refuse to issue any, alike.
func TestJWTVerifyOnlyAsEtcd(t *testing.T) {
	etcdref.Bin(t, "etcd")
	dir := t.TempDir()
	full := jwtkeytest.New(t, "RS256").Option(t, dir, "RS256")
	verifyOnly := "jwt,pub-key=" + dir + "/RS256.pub,sign-method=RS256"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	etcd, cairn := startJWTPair(t, ctx, verifyOnly)
	_, etcdErr := login(ctx, etcd.conn, "root", "rootpw")
	_, cairnErr := login(ctx, cairn.conn, "root", "rootpw")
	if etcdErr == nil || fmt.Sprint(etcdErr) != fmt.Sprint(cairnErr) {
		t.Errorf("login on a verify-only server: etcd %v, cairn %v", etcdErr, cairnErr)
	}
	st, err := etcd.client(t, "").AuthStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tok := signWith(t, full, "root", st.AuthRevision)
	for _, s := range []*jwtServer{etcd, cairn} {
		if err := readAs(ctx, s.conn, tok); err != nil {
			t.Errorf("%s refuses a token signed with the private key: %v", s.name, err)
		}
	}
}
