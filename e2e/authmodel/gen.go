package authmodel

import (
	"maps"
	"math/rand/v2"
	"slices"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// A small alphabet, so that permissions and requests collide often: keys
// inside and outside each other's prefixes, and ranges between them.
var (
	keys      = []string{"/a", "/a/b", "/a/c", "/ab", "/b", "/b/c", "/c", "/c/a"}
	prefixes  = []string{"/", "/a", "/a/", "/b", "/c"}
	values    = []string{"v0", "v1", "v2", "v3"}
	users     = []string{"u0", "u1", "u2", "u3"}
	nobody    = "nobody" // a user that never gets a role
	roleNames = []string{"r0", "r1", "r2", "r3"}
)

// allIdentities are those the long-lived watches and the events' readers
// are computed for.
var allIdentities = append([]string{rootUser, nobody}, users...)

// op is one request, sent with the token of who.
type op struct {
	who string
	req any // *pb.XxxRequest; a *pb.WatchCreateRequest opens a watch
}

// gen draws requests from a seeded source; it looks at the model only to
// aim at what exists (leases, granted roles and permissions).
type gen struct {
	r         *rand.Rand
	m         *model
	nextLease int64
	memberID  uint64
	peerURLs  []string
}

func newGen(seed int64, m *model) *gen {
	return &gen{r: rand.New(rand.NewPCG(uint64(seed), 0x5eed)), m: m, nextLease: 1000}
}

func (g *gen) pick(s []string) string { return s[g.r.IntN(len(s))] }
func (g *gen) chance(p float64) bool  { return g.r.Float64() < p }

// prefixEnd is the range end that makes p a prefix.
func prefixEnd(p string) string {
	b := []byte(p)
	b[len(b)-1]++
	return string(b)
}

// keyRange draws a (key, range_end): one key, a prefix, from a key on, a
// range between two names of the alphabet, or every key.
func (g *gen) keyRange() (string, string) {
	switch x := g.r.IntN(100); {
	case x < 40:
		return g.pick(keys), ""
	case x < 65:
		p := g.pick(prefixes)
		return p, prefixEnd(p)
	case x < 80:
		return g.pick(append(keys, prefixes...)), "\x00"
	case x < 93:
		names := append(slices.Clone(keys), prefixes...)
		a, b := g.pick(names), g.pick(names)
		if a > b {
			a, b = b, a
		}
		if a == b {
			return a, ""
		}
		return a, b
	case x < 95:
		// Hostile: a range that ends before it starts, or no key at all.
		if g.chance(0.5) {
			return "", ""
		}
		return g.pick([]string{"/b", "/c"}), g.pick([]string{"/a", "/a/c"})
	}
	return "\x00", "\x00"
}

// who draws the sender: mostly ordinary users, then root, the user with no
// role, no token at all and a forged one.
func (g *gen) who() string {
	switch x := g.r.IntN(100); {
	case x < 65:
		return g.pick(users)
	case x < 77:
		return rootUser
	case x < 87:
		return nobody
	case x < 93:
		return anonymous
	}
	return badToken
}

func (g *gen) permType() authpb.Permission_Type {
	return authpb.Permission_Type(g.r.IntN(3))
}

// setup creates the users and roles and gives them a first set of
// permissions; every request is root's.
func (g *gen) setup() []op {
	var ops []op
	for _, u := range append([]string{nobody}, users...) {
		ops = append(ops, op{rootUser, &pb.AuthUserAddRequest{Name: u, Password: u}})
	}
	for _, r := range roleNames {
		ops = append(ops, op{rootUser, &pb.AuthRoleAddRequest{Name: r}})
		for range 1 + g.r.IntN(3) {
			ops = append(ops, op{rootUser, g.grantPerm(r)})
		}
	}
	for _, u := range users {
		for range g.r.IntN(3) {
			ops = append(ops, op{rootUser, &pb.AuthUserGrantRoleRequest{User: u, Role: g.pick(roleNames)}})
		}
	}
	for _, u := range append([]string{nobody}, users...) {
		ops = append(ops, op{anonymous, &pb.AuthenticateRequest{Name: u, Password: u}})
	}
	return ops
}

func (g *gen) grantPerm(role string) *pb.AuthRoleGrantPermissionRequest {
	k, e := g.keyRange()
	// Not a range the role has already while another of its permissions
	// starts at the same key: etcd then keeps two permissions for the one
	// range (RoleGet lists both) instead of replacing it, and a later revoke
	// leaves one of them, which a model of replacement does not follow.
	for range 20 {
		if !slices.ContainsFunc(g.m.roles[role], func(p perm) bool { return p.key == k && p.end == e }) ||
			!slices.ContainsFunc(g.m.roles[role], func(p perm) bool { return p.key == k && p.end != e }) {
			break
		}
		k, e = g.keyRange()
	}
	return &pb.AuthRoleGrantPermissionRequest{Name: role,
		Perm: &authpb.Permission{PermType: g.permType(), Key: []byte(k), RangeEnd: []byte(e)}}
}

// next draws one request.
func (g *gen) next() op {
	// A deleted user comes back after a while; a user whose token the model
	// knows to be dead logs in again soon.
	for _, u := range allIdentities {
		switch {
		case g.m.users[u] == nil && g.chance(0.05):
			return op{rootUser, &pb.AuthUserAddRequest{Name: u, Password: u}}
		case g.m.users[u] != nil && !g.m.tokenOK[u] && g.chance(0.3):
			return op{g.who(), &pb.AuthenticateRequest{Name: u, Password: u}}
		}
	}
	who := g.who()
	switch x := g.r.IntN(100); {
	case x < 20:
		return op{who, g.rangeReq(true)}
	case x < 33:
		return op{who, g.put()}
	case x < 39:
		return op{who, g.deleteRange()}
	case x < 53:
		return op{who, g.txn(0, map[string]bool{}, &[]interval{})}
	case x < 58:
		return op{who, g.watch()}
	case x < 68:
		return op{who, g.leaseCall()}
	case x < 76:
		return op{who, g.maintenance()}
	case x < 78:
		if g.chance(0.7) {
			who = rootUser
		}
		return op{who, &pb.CompactionRequest{Revision: max(0, g.m.compactRev+g.r.Int64N(g.m.rev-g.m.compactRev+2))}}
	}
	if g.chance(0.6) {
		who = rootUser // most changes of the permissions succeed
	}
	return op{who, g.authCall()}
}

func (g *gen) rev() int64 { return 1 + g.r.Int64N(g.m.rev) }

func (g *gen) rangeReq(top bool) *pb.RangeRequest {
	k, e := g.keyRange()
	r := &pb.RangeRequest{Key: []byte(k), RangeEnd: []byte(e)}
	if g.chance(0.3) {
		r.Limit = 1 + g.r.Int64N(3)
	}
	if g.chance(0.25) {
		r.SortOrder = pb.RangeRequest_SortOrder(g.r.IntN(3))
		r.SortTarget = pb.RangeRequest_SortTarget(g.r.IntN(5))
	}
	r.KeysOnly = g.chance(0.15)
	r.CountOnly = g.chance(0.15)
	if g.chance(0.1) {
		r.MinModRevision = g.rev()
	}
	if g.chance(0.1) {
		r.MaxModRevision = g.rev()
	}
	if g.chance(0.1) {
		r.MinCreateRevision = g.rev()
	}
	if g.chance(0.1) {
		r.MaxCreateRevision = g.rev()
	}
	if top {
		r.Serializable = g.chance(0.3)
		if g.chance(0.25) {
			// From just below the compacted revision to just past the head.
			r.Revision = max(1, g.m.compactRev-1+g.r.Int64N(g.m.rev-g.m.compactRev+3))
		}
	}
	return r
}

// lease draws a lease to attach: none mostly, an existing one, or one that
// does not exist.
func (g *gen) lease() int64 {
	switch x := g.r.IntN(100); {
	case x < 70:
		return 0
	case x < 95 && len(g.m.leases) > 0:
		return g.pick64(slices.Sorted(maps.Keys(g.m.leases)))
	}
	return g.nextLease + 7 // never granted
}

func (g *gen) pick64(s []int64) int64 { return s[g.r.IntN(len(s))] }

func (g *gen) put() *pb.PutRequest {
	p := &pb.PutRequest{Key: []byte(g.pick(keys)), Value: []byte(g.pick(values)),
		PrevKv: g.chance(0.4), Lease: g.lease()}
	// Keep the value or the lease the key has (an error where it has none,
	// or where the request gives one all the same).
	if g.chance(0.05) {
		p.IgnoreValue = true
		if g.chance(0.8) {
			p.Value = nil
		}
	}
	if g.chance(0.05) {
		p.IgnoreLease = true
		if g.chance(0.8) {
			p.Lease = 0
		}
	}
	return p
}

func (g *gen) deleteRange() *pb.DeleteRangeRequest {
	k, e := g.keyRange()
	return &pb.DeleteRangeRequest{Key: []byte(k), RangeEnd: []byte(e), PrevKv: g.chance(0.4)}
}

func (g *gen) compare() *pb.Compare {
	k, e := g.keyRange()
	if g.chance(0.6) {
		e = ""
	}
	c := &pb.Compare{Key: []byte(k), RangeEnd: []byte(e),
		Result: pb.Compare_CompareResult(g.r.IntN(4)), Target: pb.Compare_CompareTarget(g.r.IntN(5))}
	switch c.Target {
	case pb.Compare_VERSION:
		c.TargetUnion = &pb.Compare_Version{Version: g.r.Int64N(3)}
	case pb.Compare_CREATE:
		c.TargetUnion = &pb.Compare_CreateRevision{CreateRevision: g.r.Int64N(g.m.rev + 1)}
	case pb.Compare_MOD:
		c.TargetUnion = &pb.Compare_ModRevision{ModRevision: g.r.Int64N(g.m.rev + 1)}
	case pb.Compare_VALUE:
		c.TargetUnion = &pb.Compare_Value{Value: []byte(g.pick(values))}
	case pb.Compare_LEASE:
		c.TargetUnion = &pb.Compare_Lease{Lease: g.lease()}
	}
	return c
}

// txn draws a txn up to three levels deep. A txn may write a key once, and
// may not delete a key it puts: puts and deletes across the whole tree stay
// apart (written: the keys put; deleted: the ranges deleted).
func (g *gen) txn(depth int, written map[string]bool, deleted *[]interval) *pb.TxnRequest {
	t := &pb.TxnRequest{}
	for range g.r.IntN(4) {
		t.Compare = append(t.Compare, g.compare())
	}
	for _, branch := range []*[]*pb.RequestOp{&t.Success, &t.Failure} {
		for range g.r.IntN(4) {
			if o := g.txnOp(depth, written, deleted); o != nil {
				*branch = append(*branch, o)
			}
		}
	}
	return t
}

func (g *gen) txnOp(depth int, written map[string]bool, deleted *[]interval) *pb.RequestOp {
	switch x := g.r.IntN(100); {
	case x < 35:
		return &pb.RequestOp{Request: &pb.RequestOp_RequestRange{RequestRange: g.rangeReq(false)}}
	case x < 65:
		p := g.put()
		k := string(p.Key)
		if written[k] || slices.ContainsFunc(*deleted, func(iv interval) bool { return iv.contains(k) }) {
			return nil
		}
		written[k] = true
		return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: p}}
	case x < 85:
		d := g.deleteRange()
		for k := range written {
			if inRange(k, string(d.Key), string(d.RangeEnd)) {
				return nil
			}
		}
		*deleted = append(*deleted, span(string(d.Key), string(d.RangeEnd)))
		return &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: d}}
	}
	if depth >= 2 {
		return nil
	}
	return &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: g.txn(depth+1, written, deleted)}}
}

// watch opens a watch from a past revision, so that the events it must
// deliver are known and arrive at once.
func (g *gen) watch() *pb.WatchCreateRequest {
	k, e := g.keyRange()
	w := &pb.WatchCreateRequest{Key: []byte(k), RangeEnd: []byte(e), PrevKv: g.chance(0.5),
		StartRevision: max(1, g.m.compactRev+1+g.r.Int64N(g.m.rev-g.m.compactRev+1))}
	if g.chance(0.15) {
		w.Filters = []pb.WatchCreateRequest_FilterType{pb.WatchCreateRequest_FilterType(g.r.IntN(2))}
	}
	return w
}

func (g *gen) leaseCall() any {
	id := g.lease()
	if id == 0 && len(g.m.leases) > 0 && g.chance(0.8) {
		id = g.pick64(slices.Sorted(maps.Keys(g.m.leases)))
	}
	switch g.r.IntN(6) {
	case 0, 1:
		if g.chance(0.1) && len(g.m.leases) > 0 {
			// One that exists (ID 0 would have the server choose one).
			return &pb.LeaseGrantRequest{ID: g.pick64(slices.Sorted(maps.Keys(g.m.leases))), TTL: 3600}
		}
		g.nextLease++
		return &pb.LeaseGrantRequest{ID: g.nextLease, TTL: 3600}
	case 2:
		return &pb.LeaseRevokeRequest{ID: id}
	case 3:
		return &pb.LeaseKeepAliveRequest{ID: id}
	case 4:
		return &pb.LeaseTimeToLiveRequest{ID: id, Keys: g.chance(0.7)}
	}
	return &pb.LeaseLeasesRequest{}
}

func (g *gen) maintenance() any {
	switch g.r.IntN(12) {
	case 0:
		return &pb.StatusRequest{}
	case 1:
		return &pb.AlarmRequest{Action: pb.AlarmRequest_GET}
	case 2:
		// Disarming an alarm that is not raised changes nothing.
		return &pb.AlarmRequest{Action: pb.AlarmRequest_DEACTIVATE, MemberID: g.memberID, Alarm: pb.AlarmType_NOSPACE}
	case 3:
		return &pb.HashKVRequest{}
	case 4:
		return &pb.HashRequest{}
	case 5:
		return &pb.DefragmentRequest{}
	case 6:
		return &pb.SnapshotRequest{}
	case 7:
		return &pb.MoveLeaderRequest{TargetID: g.memberID}
	case 8:
		return &pb.MemberUpdateRequest{ID: g.memberID, PeerURLs: g.peerURLs}
	case 9:
		return &pb.MemberPromoteRequest{ID: g.memberID}
	}
	return &pb.MemberListRequest{}
}

func (g *gen) authCall() any {
	u := g.pick(append([]string{nobody}, users...))
	if g.chance(0.1) {
		u = rootUser
	}
	role := g.pick(roleNames)
	switch g.r.IntN(16) {
	case 0, 1, 2:
		return g.grantPerm(role)
	case 3, 4:
		ps := g.m.roles[role]
		if len(ps) > 0 && g.chance(0.8) {
			p := ps[g.r.IntN(len(ps))]
			return &pb.AuthRoleRevokePermissionRequest{Role: role, Key: []byte(p.key), RangeEnd: []byte(p.end)}
		}
		k, e := g.keyRange()
		return &pb.AuthRoleRevokePermissionRequest{Role: role, Key: []byte(k), RangeEnd: []byte(e)}
	case 5, 6:
		if u == nobody {
			u = g.pick(users)
		}
		if g.chance(0.05) {
			role = rootRole // a user that is root without being named root
		}
		return &pb.AuthUserGrantRoleRequest{User: u, Role: role}
	case 7:
		if roles := slices.Sorted(maps.Keys(g.m.users[u])); len(roles) > 0 && g.chance(0.8) {
			role = g.pick(roles)
		}
		return &pb.AuthUserRevokeRoleRequest{Name: u, Role: role}
	case 8:
		return &pb.AuthUserAddRequest{Name: u, Password: u}
	case 9:
		if u == rootUser || g.chance(0.5) {
			return &pb.AuthUserGetRequest{Name: u}
		}
		return &pb.AuthUserDeleteRequest{Name: u}
	case 10:
		return &pb.AuthUserChangePasswordRequest{Name: u, Password: u}
	case 11:
		if g.chance(0.5) {
			return &pb.AuthRoleAddRequest{Name: role}
		}
		return &pb.AuthRoleDeleteRequest{Role: role}
	case 12:
		return &pb.AuthRoleGetRequest{Role: role}
	case 13:
		if g.chance(0.5) {
			return &pb.AuthUserListRequest{}
		}
		return &pb.AuthRoleListRequest{}
	case 14:
		return &pb.AuthStatusRequest{}
	}
	pw := u
	if g.chance(0.3) {
		pw = "wrong"
	}
	return &pb.AuthenticateRequest{Name: u, Password: pw}
}
