package api

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/internal/testnet"
)

// The auth transcript is a fixed script of raw gRPC calls, made as several
// identities (anonymous, a bogus token, a user with a role, root), whose
// outcomes are printed one line each in a form that does not depend on the
// server's IDs or timing. Run against real etcd 3.7.3 and against cairn, the
// two transcripts must be equal: that pins which calls need a user, which
// need root, which keys a role reaches, the error codes and texts, and the
// auth revision after each change.

// transcript runs the script against one server and returns its lines.
type transcript struct {
	t      *testing.T
	conn   *grpc.ClientConn
	kv     pb.KVClient
	watch  pb.WatchClient
	lease  pb.LeaseClient
	clus   pb.ClusterClient
	maint  pb.MaintenanceClient
	auth   pb.AuthClient
	tokens map[string]string // identity -> token ("" for anonymous)
	lines  []string
}

func newTranscript(t *testing.T, endpoint string) *transcript {
	t.Helper()
	conn, err := grpc.NewClient(strings.TrimPrefix(endpoint, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &transcript{t: t, conn: conn, kv: pb.NewKVClient(conn), watch: pb.NewWatchClient(conn), lease: pb.NewLeaseClient(conn),
		clus: pb.NewClusterClient(conn), maint: pb.NewMaintenanceClient(conn), auth: pb.NewAuthClient(conn),
		tokens: map[string]string{"anon": "", "bogus": "bogus.1"}}
}

// ctx returns a context that carries the identity's token.
func (tr *transcript) ctx(who string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if tok := tr.tokens[who]; tok != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "token", tok)
	}
	return ctx, cancel
}

// do runs one call as who and records its outcome.
func (tr *transcript) do(who, what string, call func(ctx context.Context) (string, error)) {
	ctx, cancel := tr.ctx(who)
	defer cancel()
	out, err := call(ctx)
	line := fmt.Sprintf("%-6s %-40s ", who, what)
	if err != nil {
		st, _ := status.FromError(err)
		line += fmt.Sprintf("ERR %s %s", st.Code(), st.Message())
	} else {
		line += "OK " + out
	}
	tr.lines = append(tr.lines, line)
}

var simpleToken = regexp.MustCompile(`^[a-zA-Z]{16}\.\d+$`)

// login authenticates and keeps the token under the user's name.
func (tr *transcript) login(name, password string) {
	tr.do("anon", "Authenticate "+name+":"+password, func(ctx context.Context) (string, error) {
		r, err := tr.auth.Authenticate(ctx, &pb.AuthenticateRequest{Name: name, Password: password})
		if err != nil {
			return "", err
		}
		tr.tokens[name] = r.Token
		return fmt.Sprintf("simple-token=%v", simpleToken.MatchString(r.Token)), nil
	})
}

func kvKeys(kvs [][]byte) string {
	var s []string
	for _, k := range kvs {
		s = append(s, string(k))
	}
	return "[" + strings.Join(s, " ") + "]"
}

func perms(ps []*authpb.Permission) string {
	var s []string
	for _, p := range ps {
		s = append(s, fmt.Sprintf("%s[%q,%q)", p.PermType, p.Key, p.RangeEnd))
	}
	return strings.Join(s, " ")
}

func (tr *transcript) authStatus(who string) {
	tr.do(who, "AuthStatus", func(ctx context.Context) (string, error) {
		r, err := tr.auth.AuthStatus(ctx, &pb.AuthStatusRequest{})
		return fmt.Sprintf("enabled=%v rev=%d", r.GetEnabled(), r.GetAuthRevision()), err
	})
}

func (tr *transcript) rng(who, key, end string, serializable bool) {
	tr.do(who, fmt.Sprintf("Range %q %q s=%v", key, end, serializable), func(ctx context.Context) (string, error) {
		r, err := tr.kv.Range(ctx, &pb.RangeRequest{Key: []byte(key), RangeEnd: []byte(end), Serializable: serializable})
		var keys [][]byte
		for _, kv := range r.GetKvs() {
			keys = append(keys, kv.Key)
		}
		return kvKeys(keys), err
	})
}

func (tr *transcript) put(who, key string, lease int64, prevKV bool) {
	tr.do(who, fmt.Sprintf("Put %q lease=%v prev=%v", key, lease != 0, prevKV), func(ctx context.Context) (string, error) {
		_, err := tr.kv.Put(ctx, &pb.PutRequest{Key: []byte(key), Value: []byte("v"), Lease: lease, PrevKv: prevKV})
		return "", err
	})
}

func (tr *transcript) watchCreate(who, key, end string) {
	tr.do(who, fmt.Sprintf("Watch %q %q", key, end), func(ctx context.Context) (string, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ws, err := tr.watch.Watch(ctx)
		if err != nil {
			return "", err
		}
		if err := ws.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: &pb.WatchCreateRequest{Key: []byte(key), RangeEnd: []byte(end)}}}); err != nil {
			return "", err
		}
		r, err := ws.Recv()
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("created=%v canceled=%v id=%d reason=%q", r.Created, r.Canceled, r.WatchId, r.CancelReason), nil
	})
}

// identityCalls are the calls made as each identity once auth is on.
func (tr *transcript) identityCalls(who string) {
	tr.authStatus(who)
	tr.rng(who, "/app/x", "", false)
	tr.rng(who, "/app/x", "", true)
	tr.rng(who, "ro", "", false)
	tr.rng(who, "other", "", false)
	tr.rng(who, "/app/", "/app0", false)
	tr.rng(who, "/app/", "/app1", false)
	tr.rng(who, "\x00", "\x00", false)
	tr.rng(who, "wf", "\x00", false)
	tr.put(who, "/app/x", 0, false)
	tr.put(who, "/app/x", 0, true)
	tr.put(who, "ro", 0, false)
	tr.put(who, "wf/1", 0, false)
	tr.put(who, "wf/1", 0, true)
	tr.put(who, "/app/leased", 7001, false)
	tr.do(who, "DeleteRange other", func(ctx context.Context) (string, error) {
		r, err := tr.kv.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte("other")})
		return fmt.Sprint(r.GetDeleted()), err
	})
	tr.do(who, "DeleteRange /app/none prev", func(ctx context.Context) (string, error) {
		r, err := tr.kv.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte("/app/none"), PrevKv: true})
		return fmt.Sprint(r.GetDeleted()), err
	})
	tr.do(who, "Txn compare other then put /app/t", func(ctx context.Context) (string, error) {
		r, err := tr.kv.Txn(ctx, &pb.TxnRequest{
			Compare: []*pb.Compare{{Key: []byte("other"), Target: pb.Compare_VERSION, Result: pb.Compare_GREATER}},
			Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("/app/t"), Value: []byte("v")}}}},
		})
		return fmt.Sprint(r.GetSucceeded()), err
	})
	tr.do(who, "Txn read-only /app/x", func(ctx context.Context) (string, error) {
		r, err := tr.kv.Txn(ctx, &pb.TxnRequest{
			Compare: []*pb.Compare{{Key: []byte("/app/x"), Target: pb.Compare_VERSION, Result: pb.Compare_GREATER}},
			Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("/app/x")}}}},
		})
		return fmt.Sprint(r.GetSucceeded()), err
	})
	tr.do(who, "Txn put /app/t else put other", func(ctx context.Context) (string, error) {
		r, err := tr.kv.Txn(ctx, &pb.TxnRequest{
			Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("/app/t"), Value: []byte("v")}}}},
			Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("other"), Value: []byte("v")}}}},
		})
		return fmt.Sprint(r.GetSucceeded()), err
	})
	tr.do(who, "Compact 1", func(ctx context.Context) (string, error) {
		_, err := tr.kv.Compact(ctx, &pb.CompactionRequest{Revision: 1})
		return "", err
	})
	tr.watchCreate(who, "/app/", "/app0")
	tr.watchCreate(who, "other", "")
	tr.do(who, "LeaseGrant", func(ctx context.Context) (string, error) {
		r, err := tr.lease.LeaseGrant(ctx, &pb.LeaseGrantRequest{TTL: 100})
		if err == nil {
			// Granted leases are revoked right away so that later steps
			// see the same leases on every server.
			tr.lease.LeaseRevoke(tr.rootCtx(), &pb.LeaseRevokeRequest{ID: r.ID})
		}
		return fmt.Sprintf("ttl=%d", r.GetTTL()), err
	})
	tr.do(who, "LeaseTimeToLive 7001 keys", func(ctx context.Context) (string, error) {
		r, err := tr.lease.LeaseTimeToLive(ctx, &pb.LeaseTimeToLiveRequest{ID: 7001, Keys: true})
		return fmt.Sprintf("granted=%d keys=%d", r.GetGrantedTTL(), len(r.GetKeys())), err
	})
	tr.do(who, "LeaseTimeToLive 7002 keys", func(ctx context.Context) (string, error) {
		r, err := tr.lease.LeaseTimeToLive(ctx, &pb.LeaseTimeToLiveRequest{ID: 7002, Keys: true})
		return fmt.Sprintf("granted=%d keys=%d", r.GetGrantedTTL(), len(r.GetKeys())), err
	})
	tr.do(who, "LeaseTimeToLive 7002", func(ctx context.Context) (string, error) {
		r, err := tr.lease.LeaseTimeToLive(ctx, &pb.LeaseTimeToLiveRequest{ID: 7002})
		return fmt.Sprintf("granted=%d", r.GetGrantedTTL()), err
	})
	tr.do(who, "LeaseLeases", func(ctx context.Context) (string, error) {
		r, err := tr.lease.LeaseLeases(ctx, &pb.LeaseLeasesRequest{})
		return fmt.Sprint(len(r.GetLeases())), err
	})
	tr.do(who, "LeaseKeepAlive 7001", func(ctx context.Context) (string, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ka, err := tr.lease.LeaseKeepAlive(ctx)
		if err != nil {
			return "", err
		}
		if err := ka.Send(&pb.LeaseKeepAliveRequest{ID: 7001}); err != nil {
			return "", err
		}
		r, err := ka.Recv()
		return fmt.Sprintf("ttl=%d", r.GetTTL()), err
	})
	tr.do(who, "LeaseRevoke 7002 (key other)", func(ctx context.Context) (string, error) {
		_, err := tr.lease.LeaseRevoke(ctx, &pb.LeaseRevokeRequest{ID: 7002})
		return "", err
	})
	tr.do(who, "MemberList", func(ctx context.Context) (string, error) {
		r, err := tr.clus.MemberList(ctx, &pb.MemberListRequest{})
		return fmt.Sprint(len(r.GetMembers())), err
	})
	tr.do(who, "MemberPromote 12345", func(ctx context.Context) (string, error) {
		_, err := tr.clus.MemberPromote(ctx, &pb.MemberPromoteRequest{ID: 12345})
		return "", err
	})
	tr.do(who, "MemberRemove 12345", func(ctx context.Context) (string, error) {
		_, err := tr.clus.MemberRemove(ctx, &pb.MemberRemoveRequest{ID: 12345})
		return "", err
	})
	tr.do(who, "Status", func(ctx context.Context) (string, error) {
		_, err := tr.maint.Status(ctx, &pb.StatusRequest{})
		return "", err
	})
	tr.do(who, "Alarm GET", func(ctx context.Context) (string, error) {
		r, err := tr.maint.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_GET})
		return fmt.Sprint(len(r.GetAlarms())), err
	})
	tr.do(who, "Alarm DEACTIVATE", func(ctx context.Context) (string, error) {
		r, err := tr.maint.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_DEACTIVATE, Alarm: pb.AlarmType_NOSPACE})
		return fmt.Sprint(len(r.GetAlarms())), err
	})
	tr.do(who, "Hash", func(ctx context.Context) (string, error) {
		_, err := tr.maint.Hash(ctx, &pb.HashRequest{})
		return "", err
	})
	tr.do(who, "HashKV", func(ctx context.Context) (string, error) {
		_, err := tr.maint.HashKV(ctx, &pb.HashKVRequest{})
		return "", err
	})
	tr.do(who, "Defragment", func(ctx context.Context) (string, error) {
		_, err := tr.maint.Defragment(ctx, &pb.DefragmentRequest{})
		return "", err
	})
	tr.do(who, "Snapshot", func(ctx context.Context) (string, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		s, err := tr.maint.Snapshot(ctx, &pb.SnapshotRequest{})
		if err != nil {
			return "", err
		}
		_, err = s.Recv()
		return "", err
	})
	tr.do(who, "UserGet alice", func(ctx context.Context) (string, error) {
		r, err := tr.auth.UserGet(ctx, &pb.AuthUserGetRequest{Name: "alice"})
		return fmt.Sprint(r.GetRoles()), err
	})
	tr.do(who, "UserGet root", func(ctx context.Context) (string, error) {
		r, err := tr.auth.UserGet(ctx, &pb.AuthUserGetRequest{Name: "root"})
		return fmt.Sprint(r.GetRoles()), err
	})
	tr.do(who, "RoleGet reader", func(ctx context.Context) (string, error) {
		r, err := tr.auth.RoleGet(ctx, &pb.AuthRoleGetRequest{Role: "reader"})
		return perms(r.GetPerm()), err
	})
	tr.do(who, "RoleGet root", func(ctx context.Context) (string, error) {
		r, err := tr.auth.RoleGet(ctx, &pb.AuthRoleGetRequest{Role: "root"})
		return perms(r.GetPerm()), err
	})
	tr.do(who, "UserList", func(ctx context.Context) (string, error) {
		r, err := tr.auth.UserList(ctx, &pb.AuthUserListRequest{})
		return fmt.Sprint(r.GetUsers()), err
	})
	tr.do(who, "RoleList", func(ctx context.Context) (string, error) {
		r, err := tr.auth.RoleList(ctx, &pb.AuthRoleListRequest{})
		return fmt.Sprint(r.GetRoles()), err
	})
	tr.do(who, "RoleAdd tmp", func(ctx context.Context) (string, error) {
		_, err := tr.auth.RoleAdd(ctx, &pb.AuthRoleAddRequest{Name: "tmp"})
		return "", err
	})
	tr.do(who, "RoleDelete tmp", func(ctx context.Context) (string, error) {
		_, err := tr.auth.RoleDelete(ctx, &pb.AuthRoleDeleteRequest{Role: "tmp"})
		return "", err
	})
	tr.authStatus(who)
}

// rootCtx is a context as root, for the clean-up calls that are not part
// of the transcript.
func (tr *transcript) rootCtx() context.Context {
	ctx := context.Background()
	if tok := tr.tokens["root"]; tok != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "token", tok)
	}
	return ctx
}

// runAuthScript runs the whole script.
func (tr *transcript) runAuthScript() []string {
	a := tr.auth
	add := func(who, name, pw string, noPassword bool) {
		tr.do(who, fmt.Sprintf("UserAdd %q nopw=%v", name, noPassword), func(ctx context.Context) (string, error) {
			_, err := a.UserAdd(ctx, &pb.AuthUserAddRequest{Name: name, Password: pw, Options: &authpb.UserAddOptions{NoPassword: noPassword}})
			return "", err
		})
	}
	grantPerm := func(who, role string, typ authpb.Permission_Type, key, end string) {
		tr.do(who, fmt.Sprintf("RoleGrantPermission %s %s %q %q", role, typ, key, end), func(ctx context.Context) (string, error) {
			_, err := a.RoleGrantPermission(ctx, &pb.AuthRoleGrantPermissionRequest{Name: role, Perm: &authpb.Permission{PermType: typ, Key: []byte(key), RangeEnd: []byte(end)}})
			return "", err
		})
	}
	grantRole := func(who, user, role string) {
		tr.do(who, fmt.Sprintf("UserGrantRole %s %s", user, role), func(ctx context.Context) (string, error) {
			_, err := a.UserGrantRole(ctx, &pb.AuthUserGrantRoleRequest{User: user, Role: role})
			return "", err
		})
	}
	revokeRole := func(who, user, role string) {
		tr.do(who, fmt.Sprintf("UserRevokeRole %s %s", user, role), func(ctx context.Context) (string, error) {
			_, err := a.UserRevokeRole(ctx, &pb.AuthUserRevokeRoleRequest{Name: user, Role: role})
			return "", err
		})
	}
	roleGet := func(who, role string) {
		tr.do(who, "RoleGet "+role, func(ctx context.Context) (string, error) {
			r, err := a.RoleGet(ctx, &pb.AuthRoleGetRequest{Role: role})
			return perms(r.GetPerm()), err
		})
	}
	userGet := func(who, user string) {
		tr.do(who, "UserGet "+user, func(ctx context.Context) (string, error) {
			r, err := a.UserGet(ctx, &pb.AuthUserGetRequest{Name: user})
			return fmt.Sprint(r.GetRoles()), err
		})
	}
	enable := func(who string) {
		tr.do(who, "AuthEnable", func(ctx context.Context) (string, error) {
			_, err := a.AuthEnable(ctx, &pb.AuthEnableRequest{})
			return "", err
		})
	}
	disable := func(who string) {
		tr.do(who, "AuthDisable", func(ctx context.Context) (string, error) {
			_, err := a.AuthDisable(ctx, &pb.AuthDisableRequest{})
			return "", err
		})
	}

	// Set up with auth off.
	tr.authStatus("anon")
	tr.login("root", "rootpw")
	enable("anon")
	add("anon", "root", "rootpw", false)
	add("anon", "root", "again", false)
	add("anon", "", "x", false)
	add("anon", "nopw", "", true)
	add("anon", "alice", "alicepw", false)
	add("anon", "emptypw", "", false)
	add("anon", "bob", "bobpw", false)
	tr.do("anon", "RoleAdd reader", func(ctx context.Context) (string, error) {
		_, err := a.RoleAdd(ctx, &pb.AuthRoleAddRequest{Name: "reader"})
		return "", err
	})
	tr.do("anon", "RoleAdd reader again", func(ctx context.Context) (string, error) {
		_, err := a.RoleAdd(ctx, &pb.AuthRoleAddRequest{Name: "reader"})
		return "", err
	})
	tr.do("anon", "RoleAdd empty", func(ctx context.Context) (string, error) {
		_, err := a.RoleAdd(ctx, &pb.AuthRoleAddRequest{})
		return "", err
	})
	grantPerm("anon", "reader", authpb.READWRITE, "/app/", "/app0")
	grantPerm("anon", "reader", authpb.READ, "ro", "")
	grantPerm("anon", "reader", authpb.WRITE, "wf", "\x00")
	grantPerm("anon", "reader", authpb.READ, "b", "a")
	grantPerm("anon", "reader", authpb.READ, "", "a")
	grantPerm("anon", "reader", authpb.READ, "a", "a")
	grantPerm("anon", "missing", authpb.READ, "a", "")
	grantPerm("anon", "reader", authpb.WRITE, "ro", "")
	grantPerm("anon", "reader", authpb.READ, "ro", "")
	grantPerm("anon", "reader", authpb.READ, "m", "n")
	grantPerm("anon", "reader", authpb.READ, "m", "")
	tr.do("anon", "RoleGrantPermission no perm", func(ctx context.Context) (string, error) {
		_, err := a.RoleGrantPermission(ctx, &pb.AuthRoleGrantPermissionRequest{Name: "reader"})
		return "", err
	})
	roleGet("anon", "reader")
	tr.do("anon", "RoleRevokePermission reader m n", func(ctx context.Context) (string, error) {
		_, err := a.RoleRevokePermission(ctx, &pb.AuthRoleRevokePermissionRequest{Role: "reader", Key: []byte("m"), RangeEnd: []byte("n")})
		return "", err
	})
	tr.do("anon", "RoleRevokePermission reader m n again", func(ctx context.Context) (string, error) {
		_, err := a.RoleRevokePermission(ctx, &pb.AuthRoleRevokePermissionRequest{Role: "reader", Key: []byte("m"), RangeEnd: []byte("n")})
		return "", err
	})
	tr.do("anon", "RoleRevokePermission missing", func(ctx context.Context) (string, error) {
		_, err := a.RoleRevokePermission(ctx, &pb.AuthRoleRevokePermissionRequest{Role: "missing", Key: []byte("m")})
		return "", err
	})
	roleGet("anon", "reader")
	roleGet("anon", "root")
	grantRole("anon", "alice", "reader")
	grantRole("anon", "alice", "reader")
	grantRole("anon", "alice", "missing")
	grantRole("anon", "missing", "reader")
	grantRole("anon", "bob", "reader")
	revokeRole("anon", "alice", "missing")
	revokeRole("anon", "missing", "reader")
	tr.authStatus("anon")
	enable("anon")
	grantRole("anon", "root", "root")
	userGet("anon", "root")
	roleGet("anon", "root")
	tr.do("anon", "UserList", func(ctx context.Context) (string, error) {
		r, err := a.UserList(ctx, &pb.AuthUserListRequest{})
		return fmt.Sprint(r.GetUsers()), err
	})
	tr.do("anon", "RoleList", func(ctx context.Context) (string, error) {
		r, err := a.RoleList(ctx, &pb.AuthRoleListRequest{})
		return fmt.Sprint(r.GetRoles()), err
	})
	tr.put("anon", "/app/x", 0, false)
	tr.put("anon", "ro", 0, false)
	tr.put("anon", "other", 0, false)
	tr.do("anon", "LeaseGrant 7001, 7002", func(ctx context.Context) (string, error) {
		for _, id := range []int64{7001, 7002} {
			if _, err := tr.lease.LeaseGrant(ctx, &pb.LeaseGrantRequest{ID: id, TTL: 1000}); err != nil {
				return "", err
			}
		}
		return "", nil
	})
	tr.put("anon", "other", 7002, false)
	tr.authStatus("anon")
	enable("anon")
	tr.authStatus("anon")
	enable("anon")

	// Logging in.
	tr.login("root", "rootpw")
	tr.login("alice", "alicepw")
	tr.login("bob", "bobpw")
	tr.login("alice", "wrong")
	tr.login("nobody", "x")
	tr.login("nopw", "")
	tr.login("nopw", "x")
	tr.login("emptypw", "")
	tr.do("bogus", "Authenticate root:rootpw", func(ctx context.Context) (string, error) {
		_, err := a.Authenticate(ctx, &pb.AuthenticateRequest{Name: "root", Password: "rootpw"})
		return "", err
	})

	for _, who := range []string{"anon", "bogus", "alice", "root"} {
		tr.identityCalls(who)
	}

	// Root's own rules while auth is on.
	tr.do("root", "UserDelete root", func(ctx context.Context) (string, error) {
		_, err := a.UserDelete(ctx, &pb.AuthUserDeleteRequest{Name: "root"})
		return "", err
	})
	revokeRole("root", "root", "root")
	tr.do("root", "RoleDelete root", func(ctx context.Context) (string, error) {
		_, err := a.RoleDelete(ctx, &pb.AuthRoleDeleteRequest{Role: "root"})
		return "", err
	})
	tr.do("alice", "UserChangePassword alice", func(ctx context.Context) (string, error) {
		_, err := a.UserChangePassword(ctx, &pb.AuthUserChangePasswordRequest{Name: "alice", Password: "x"})
		return "", err
	})
	// A changed password ends the user's tokens.
	tr.do("root", "UserChangePassword alice", func(ctx context.Context) (string, error) {
		_, err := a.UserChangePassword(ctx, &pb.AuthUserChangePasswordRequest{Name: "alice", Password: "alicepw2"})
		return "", err
	})
	tr.rng("alice", "/app/x", "", false)
	tr.login("alice", "alicepw")
	tr.login("alice", "alicepw2")
	tr.rng("alice", "/app/x", "", false)
	// Revoking a role takes its keys away at once.
	tr.rng("bob", "/app/x", "", false)
	revokeRole("root", "bob", "reader")
	tr.rng("bob", "/app/x", "", false)
	tr.put("bob", "/app/x", 0, false)
	// Deleting a role removes it from its users.
	tr.do("root", "RoleDelete reader", func(ctx context.Context) (string, error) {
		_, err := a.RoleDelete(ctx, &pb.AuthRoleDeleteRequest{Role: "reader"})
		return "", err
	})
	userGet("root", "alice")
	tr.rng("alice", "/app/x", "", false)
	// Deleting a user ends its tokens.
	tr.do("root", "UserDelete bob", func(ctx context.Context) (string, error) {
		_, err := a.UserDelete(ctx, &pb.AuthUserDeleteRequest{Name: "bob"})
		return "", err
	})
	tr.rng("bob", "/app/x", "", false)
	tr.do("root", "UserDelete bob again", func(ctx context.Context) (string, error) {
		_, err := a.UserDelete(ctx, &pb.AuthUserDeleteRequest{Name: "bob"})
		return "", err
	})
	tr.authStatus("root")
	disable("alice")
	disable("root")
	tr.authStatus("anon")
	// Tokens after auth is off, and after it is on again.
	tr.rng("root", "/app/x", "", false)
	tr.rng("bogus", "/app/x", "", false)
	tr.rng("anon", "/app/x", "", false)
	tr.login("root", "rootpw")
	disable("anon")
	enable("anon")
	tr.rng("root", "/app/x", "", false)
	tr.rng("alice", "/app/x", "", false)
	tr.login("root", "rootpw")
	tr.rng("root", "/app/x", "", false)
	tr.authStatus("root")
	return tr.lines
}

// diffLines shows where two transcripts part.
func diffLines(want, got []string) string {
	var b strings.Builder
	for i := 0; i < max(len(want), len(got)); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			fmt.Fprintf(&b, "line %d:\n  etcd:  %s\n  cairn: %s\n", i, w, g)
		}
	}
	return b.String()
}

// TestAuthMatchesEtcd runs the auth transcript against real etcd 3.7.3 and
// against a cairn member, and wants the same lines.
func TestAuthMatchesEtcd(t *testing.T) {
	want := newTranscript(t, etcdref.Start(t, testnet.FreeURL(t), testnet.FreeURL(t))).runAuthScript()
	curl, _, _ := startMember(t, memberconfig.Config{})
	got := newTranscript(t, curl).runAuthScript()
	if !slices.Equal(want, got) {
		t.Errorf("cairn's auth transcript differs from etcd's:\n%s", diffLines(want, got))
	}
	t.Logf("%d lines the same", len(want))
}
