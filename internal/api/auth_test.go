package api

import (
	"context"
	"crypto/tls"
	"errors"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/cairnkv/cairn/internal/auth"
	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/internal/server"
	"github.com/cairnkv/cairn/internal/testnet"
	"github.com/cairnkv/cairn/pkg/store"
)

// member is a cairn member in process whose data dir outlives it, so that
// a test can restart it.
type member struct {
	t    *testing.T
	cfg  memberconfig.Config
	curl string
	s    *server.Server
	a    *API
}

// newMember starts a member; it serves clients over https when cfg has a
// client certificate.
func newMember(t *testing.T, cfg memberconfig.Config) *member {
	t.Helper()
	scheme := "http://"
	if cfg.ClientTLS.HasCert() {
		scheme = "https://"
	}
	m := &member{t: t, cfg: cfg, curl: scheme + testnet.FreeAddr(t)}
	if m.cfg.BcryptCost == 0 {
		m.cfg.BcryptCost = testBcryptCost
	}
	m.cfg.Name, m.cfg.DataDir = "m1", t.TempDir()
	m.cfg.ListenClientURLs = []string{m.curl}
	m.cfg.ListenPeerURLs = []string{testnet.FreeURL(t)}
	m.start()
	t.Cleanup(m.stop)
	return m
}

func (m *member) start() {
	m.t.Helper()
	s, err := server.Start(m.cfg)
	if err != nil {
		m.t.Fatal(err)
	}
	a := New(s, testLog(m.t))
	if err := a.Serve([]string{m.curl}); err != nil {
		s.Stop()
		m.t.Fatal(err)
	}
	m.s, m.a = s, a
}

func (m *member) stop() {
	if m.s != nil {
		m.a.Stop()
		m.s.Stop()
		m.s, m.a = nil, nil
	}
}

// client returns a clientv3 client, as user:password when user is given.
func (m *member) client(user, password string) *clientv3.Client {
	m.t.Helper()
	return m.tlsClient(nil, user, password)
}

// tlsClient returns a clientv3 client that connects with tlsConfig.
func (m *member) tlsClient(tlsConfig *tls.Config, user, password string) *clientv3.Client {
	m.t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.curl}, DialTimeout: 5 * time.Second, TLS: tlsConfig, Username: user, Password: password})
	if err != nil {
		m.t.Fatalf("client as %q: %v", user, err)
	}
	m.t.Cleanup(func() { cli.Close() })
	return cli
}

// conn returns a plain gRPC connection to the member, closed with the
// test, for calls with no client to log in behind the test's back.
func (m *member) conn() *grpc.ClientConn {
	m.t.Helper()
	conn, err := grpc.NewClient(m.curl[len("http://"):], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() { conn.Close() })
	return conn
}

// setUpAuth creates root and alice (role reader: read /app/ prefix, write
// /app/rw) and enables authentication, as a client with no user.
func setUpAuth(t *testing.T, ctx context.Context, cli *clientv3.Client) {
	t.Helper()
	steps := []func() error{
		func() error { _, err := cli.UserAdd(ctx, "root", "rootpw"); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.RoleAdd(ctx, "reader"); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctx, "reader", "/app/", clientv3.GetPrefixRangeEnd("/app/"), clientv3.PermissionType(clientv3.PermRead))
			return err
		},
		func() error {
			_, err := cli.RoleGrantPermission(ctx, "reader", "/app/rw", "", clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserAdd(ctx, "alice", "alicepw"); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "alice", "reader"); return err },
		func() error { _, err := cli.Put(ctx, "/app/x", "1"); return err },
		func() error { _, err := cli.Put(ctx, "secret", "s"); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("set-up step %d: %v", i, err)
		}
	}
}

func TestAuthWithClientv3(t *testing.T) {
	m := newMember(t, memberconfig.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	anon := m.client("", "")
	if _, err := anon.AuthEnable(ctx); !errors.Is(err, rpctypes.ErrRootUserNotExist) {
		t.Fatalf("enable without root: %v", err)
	}
	setUpAuth(t, ctx, anon)

	if _, err := anon.Get(ctx, "/app/x"); !errors.Is(err, rpctypes.ErrUserEmpty) {
		t.Errorf("anonymous get with auth on: %v", err)
	}
	if _, err := clientv3.New(clientv3.Config{Endpoints: []string{m.curl}, DialTimeout: 5 * time.Second, Username: "alice", Password: "wrong"}); !errors.Is(err, rpctypes.ErrAuthFailed) {
		t.Errorf("wrong password: %v", err)
	}
	alice := m.client("alice", "alicepw")
	if r, err := alice.Get(ctx, "/app/", clientv3.WithPrefix()); err != nil || len(r.Kvs) != 1 {
		t.Errorf("alice reads /app/: %v %v", r, err)
	}
	if _, err := alice.Get(ctx, "secret"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("alice reads secret: %v", err)
	}
	if _, err := alice.Put(ctx, "/app/x", "2"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("alice writes a read-only key: %v", err)
	}
	if _, err := alice.Put(ctx, "/app/rw", "2"); err != nil {
		t.Errorf("alice writes /app/rw: %v", err)
	}
	if _, err := alice.Txn(ctx).If(clientv3.Compare(clientv3.Value("secret"), "=", "s")).Then(clientv3.OpPut("/app/rw", "3")).Commit(); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("alice's txn comparing secret: %v", err)
	}
	if _, err := alice.UserList(ctx); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("alice lists users: %v", err)
	}
	if _, err := alice.Defragment(ctx, m.curl); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("alice defragments: %v", err)
	}
	wr := <-alice.Watch(ctx, "secret")
	if !wr.Canceled || wr.Err() == nil {
		t.Errorf("alice watches secret: %+v", wr)
	}

	root := m.client("root", "rootpw")
	if r, err := root.Get(ctx, "", clientv3.WithPrefix()); err != nil || len(r.Kvs) != 3 {
		t.Errorf("root reads everything: %v %v", r, err)
	}
	if _, err := root.Defragment(ctx, m.curl); err != nil {
		t.Errorf("root defragments: %v", err)
	}
	if st, err := root.AuthStatus(ctx); err != nil || !st.Enabled || st.AuthRevision != 8 {
		t.Errorf("auth status %v %v, want enabled at revision 8", st, err)
	}
	// Granting alice more takes effect for her next request: her client
	// sees the revision move, logs in again and retries by itself.
	if _, err := root.RoleGrantPermission(ctx, "reader", "secret", "", clientv3.PermissionType(clientv3.PermRead)); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Get(ctx, "secret"); err != nil {
		t.Errorf("alice reads secret once granted: %v", err)
	}
	if _, err := root.AuthDisable(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := anon.Get(ctx, "secret"); err != nil {
		t.Errorf("anonymous get with auth off: %v", err)
	}
}

// rawRange makes a Range with the given token over plain gRPC, so that no
// client logs in again behind the test's back.
func rawRange(ctx context.Context, conn *grpc.ClientConn, token, key string) error {
	ctx = metadata.AppendToOutgoingContext(ctx, "token", token)
	_, err := pb.NewKVClient(conn).Range(ctx, &pb.RangeRequest{Key: []byte(key)})
	return err
}

// authenticate logs in over plain gRPC and returns the token.
func authenticate(t *testing.T, ctx context.Context, conn *grpc.ClientConn, user, password string) string {
	t.Helper()
	r, err := pb.NewAuthClient(conn).Authenticate(ctx, &pb.AuthenticateRequest{Name: user, Password: password})
	if err != nil {
		t.Fatalf("login %s: %v", user, err)
	}
	return r.Token
}

func TestAuthTokensExpireAndEnd(t *testing.T) {
	// A TTL long enough that a slow machine still uses a fresh token in
	// time, short enough to wait out.
	const ttl = 3 * time.Second
	m := newMember(t, memberconfig.Config{AuthTokenTTL: ttl})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	setUpAuth(t, ctx, m.client("", ""))
	conn := m.conn()
	login := func(user, pw string) string { return authenticate(t, ctx, conn, user, pw) }
	if err := rawRange(ctx, conn, "nosuchtokenxxxxx.1", "/app/x"); !errors.Is(err, rpctypes.ErrGRPCInvalidAuthToken) {
		t.Errorf("a made-up token: %v", err)
	}
	tok := login("alice", "alicepw")
	if err := rawRange(ctx, conn, tok, "/app/x"); err != nil {
		t.Fatalf("a fresh token: %v", err)
	}
	// Unused for its TTL, the token ends. (Each use extends it, so the
	// test lets the time pass rather than polling.)
	time.Sleep(ttl + time.Second)
	if err := rawRange(ctx, conn, tok, "/app/x"); !errors.Is(err, rpctypes.ErrGRPCInvalidAuthToken) {
		t.Errorf("a token unused for longer than its TTL: %v", err)
	}
	// A clientv3 client logs in again when its token has expired.
	alice := m.client("alice", "alicepw")
	if _, err := alice.Get(ctx, "/app/x"); err != nil {
		t.Fatal(err)
	}
	root := m.client("root", "rootpw")
	// A new password or a deleted user ends the user's tokens.
	tok = login("alice", "alicepw")
	if _, err := root.UserChangePassword(ctx, "alice", "newpw"); err != nil {
		t.Fatal(err)
	}
	if err := rawRange(ctx, conn, tok, "/app/x"); !errors.Is(err, rpctypes.ErrGRPCInvalidAuthToken) {
		t.Errorf("a token from before a new password: %v", err)
	}
	tok = login("alice", "newpw")
	if _, err := root.UserDelete(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := rawRange(ctx, conn, tok, "/app/x"); !errors.Is(err, rpctypes.ErrGRPCInvalidAuthToken) {
		t.Errorf("a deleted user's token: %v", err)
	}
}

// TestAuthSurvivesRestart restarts a member: the auth state comes back
// from the db, and replaying the WAL does not apply the auth changes a
// second time (the auth revision would move).
func TestAuthSurvivesRestart(t *testing.T) {
	m := newMember(t, memberconfig.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	setUpAuth(t, ctx, m.client("", ""))
	root := m.client("root", "rootpw")
	if _, err := root.RoleGrantPermission(ctx, "reader", "/more/", "", clientv3.PermissionType(clientv3.PermRead)); err != nil {
		t.Fatal(err)
	}
	before, err := root.AuthStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	root.Close()
	m.stop()
	m.start()

	root = m.client("root", "rootpw")
	after, err := root.AuthStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !after.Enabled || after.AuthRevision != before.AuthRevision {
		t.Errorf("after restart: enabled %v revision %d, before %v %d", after.Enabled, after.AuthRevision, before.Enabled, before.AuthRevision)
	}
	role, err := root.RoleGet(ctx, "reader")
	if err != nil || len(role.Perm) != 3 {
		t.Errorf("role reader after restart: %v %v", role, err)
	}
	alice := m.client("alice", "alicepw")
	if _, err := alice.Get(ctx, "/app/x"); err != nil {
		t.Errorf("alice after restart: %v", err)
	}
	if _, err := alice.Get(ctx, "secret"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("alice reads secret after restart: %v", err)
	}
	if _, err := m.client("", "").Get(ctx, "/app/x"); !errors.Is(err, rpctypes.ErrUserEmpty) {
		t.Errorf("anonymous get after restart: %v", err)
	}
}

// TestLeaseExpiryWithAuth: the member revokes an expired lease, and
// deletes its keys, with authentication on and no client involved.
func TestLeaseExpiryWithAuth(t *testing.T) {
	m := newMember(t, memberconfig.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	setUpAuth(t, ctx, m.client("", ""))
	root := m.client("root", "rootpw")
	l, err := root.Grant(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	put, err := root.Put(ctx, "leased", "v", clientv3.WithLease(l.ID))
	if err != nil {
		t.Fatal(err)
	}
	// From the put's revision, so that an expiry before the watch is set
	// up is still seen.
	wch := root.Watch(ctx, "leased", clientv3.WithRev(put.Header.Revision))
	for wr := range wch {
		for _, ev := range wr.Events {
			if ev.Type == clientv3.EventTypeDelete {
				return
			}
		}
		if err := wr.Err(); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("the leased key was never deleted")
}

// --bcrypt-cost sets the cost of new password hashes; out of range, etcd's
// default is used, as etcd does.
func TestBcryptCost(t *testing.T) {
	for _, c := range []struct{ given, want int }{{5, 5}, {2, bcrypt.DefaultCost}} {
		_, s, cli := startMember(t, memberconfig.Config{BcryptCost: c.given})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := cli.UserAdd(ctx, "alice", "pw"); err != nil {
			t.Fatal(err)
		}
		w := s.Store().Write()
		u, err := auth.UnmarshalAuthUser(w.Backend().Get(store.BucketAuthUsers, []byte("alice")))
		w.End()
		if err != nil {
			t.Fatal(err)
		}
		if got, err := bcrypt.Cost(u.Password); err != nil || got != c.want {
			t.Errorf("--bcrypt-cost %d: hash cost %d (%v), want %d", c.given, got, err, c.want)
		}
	}
}

// LeaseLeases, as etcd 3.7 answers it: any user may list the leases if it
// may read every key attached to any of them.
func TestLeaseListNeedsReadOnTheLeasesKeys(t *testing.T) {
	m := newMember(t, memberconfig.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	setUpAuth(t, ctx, m.client("", ""))
	root := m.client("root", "rootpw")
	if _, err := root.UserAdd(ctx, "carol", "carolpw"); err != nil { // no role
		t.Fatal(err)
	}
	alice, carol := m.client("alice", "alicepw"), m.client("carol", "carolpw")
	grantWithKey := func(key string) {
		t.Helper()
		l, err := root.Grant(ctx, 100)
		if err == nil {
			_, err = root.Put(ctx, key, "v", clientv3.WithLease(l.ID))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	check := func(who string, cli *clientv3.Client, want error) {
		t.Helper()
		if _, err := cli.Leases(ctx); !errors.Is(err, want) {
			t.Errorf("%s lists the leases: %v, want %v", who, err, want)
		}
	}
	if _, err := root.Grant(ctx, 100); err != nil { // a lease without keys
		t.Fatal(err)
	}
	check("carol, no keys attached", carol, nil)
	grantWithKey("/app/leased")
	check("alice, a readable key attached", alice, nil)
	check("carol, a key she cannot read attached", carol, rpctypes.ErrPermissionDenied)
	grantWithKey("secret")
	check("alice, a key she cannot read attached", alice, rpctypes.ErrPermissionDenied)
	check("root", root, nil)
	check("nobody", m.client("", ""), rpctypes.ErrUserEmpty)
}
