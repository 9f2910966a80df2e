package authmodel

import (
	"bytes"
	"maps"
	"slices"
	"sort"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

// The answers the model predicts: "ok", or the message of the gRPC error.
const (
	outOK          = "ok"
	outDenied      = "etcdserver: permission denied"
	outNoUser      = "etcdserver: user name is empty"
	outBadToken    = "etcdserver: invalid auth token"
	outAuthFailed  = "etcdserver: authentication failed, invalid user ID or password"
	outCompacted   = "etcdserver: mvcc: required revision has been compacted"
	outFutureRev   = "etcdserver: mvcc: required revision is a future revision"
	outLeaseAbsent = "etcdserver: requested lease not found"
	outLeaseExists = "etcdserver: lease already exists"
	outUserExists  = "etcdserver: user name already exists"
	outUserAbsent  = "etcdserver: user name not found"
	outRoleExists  = "etcdserver: role name already exists"
	outRoleAbsent  = "etcdserver: role name not found"
	outNotGranted  = "etcdserver: role is not granted to the user"
	outPermAbsent  = "etcdserver: permission is not granted to the role"
	outAuthMgmt    = "etcdserver: invalid auth management"
	outNotLearner  = "etcdserver: can only promote a learner member"
	outNoKey       = "etcdserver: key is not provided"
	outWatchEmpty  = "mvcc: watcher range is empty"
	outKeyAbsent   = "etcdserver: key not found"
	outValueGiven  = "etcdserver: value is provided"
	outLeaseGiven  = "etcdserver: lease is provided"
)

// Identities that are not users of the store.
const (
	anonymous = ""     // no token at all
	badToken  = "!bad" // a token the server never issued
	rootUser  = "root"
	rootRole  = "root"
)

// perm is one permission of a role: a key, a range [key, end) or, with end
// "\x00", every key from key on.
type perm struct {
	key, end string
	typ      authpb.Permission_Type
}

// event is one change of the store, as a watcher sees it.
type event struct {
	ev *mvccpb.Event
	// unreadable says, for each user that could not read the key when it
	// changed, why: "deleted" or "no permission".
	unreadable map[string]string
}

type lease struct {
	ttl  int64
	keys map[string]bool
}

// model is what the store should hold: users, roles, keys with their
// revisions, leases; and the rules that say who may do what.
type model struct {
	users map[string]map[string]bool // user -> its roles
	roles map[string][]perm          // role -> its permissions, by (key, end)
	// tokenOK says whether the token a user got at its last authentication
	// is still good: deleting a user or changing its password ends it.
	tokenOK map[string]bool

	kv         map[string]*mvccpb.KeyValue
	events     []event
	rev        int64
	compactRev int64 // -1 until the first compaction
	leases     map[int64]*lease
}

func newModel() *model {
	return &model{
		users:   map[string]map[string]bool{rootUser: {rootRole: true}},
		roles:   map[string][]perm{rootRole: nil},
		tokenOK: map[string]bool{rootUser: true},
		kv:      map[string]*mvccpb.KeyValue{},
		rev:     1, compactRev: -1,
		leases: map[int64]*lease{},
	}
}

// ---- permissions

// interval is [lo, hi); hi "" means no end.
type interval struct{ lo, hi string }

// span turns a (key, range_end) pair into the keys it names: one key when
// end is empty, everything from key on when end is "\x00".
func span(key, end string) interval {
	switch end {
	case "":
		return interval{key, key + "\x00"}
	case "\x00":
		return interval{key, ""}
	}
	return interval{key, end}
}

func (m *model) isAdmin(user string) bool { return m.users[user][rootRole] }

// covered says whether the union of the user's permissions that allow want
// (READ or WRITE) covers every key of [key, end).
func (m *model) covered(user, key, end string, want authpb.Permission_Type) bool {
	if m.isAdmin(user) {
		return true
	}
	need := span(key, end)
	if need.empty() {
		return true // names no key; see emptyRange
	}
	var have []interval
	for role := range m.users[user] {
		for _, p := range m.roles[role] {
			if p.typ == want || p.typ == authpb.READWRITE {
				have = append(have, span(p.key, p.end))
			}
		}
	}
	sort.Slice(have, func(i, j int) bool { return have[i].lo < have[j].lo })
	at := need.lo
	for _, iv := range have {
		if iv.lo > at {
			break
		}
		if iv.hi == "" {
			return true
		}
		if iv.hi > at {
			at = iv.hi
		}
		if need.hi != "" && at >= need.hi {
			return true
		}
	}
	return need.hi != "" && at >= need.hi
}

func (m *model) canRead(user, key, end string) bool {
	return m.covered(user, key, end, authpb.READ)
}

func (m *model) canWrite(user, key, end string) bool {
	return m.covered(user, key, end, authpb.WRITE)
}

// identityCheck is the answer every call but AuthStatus and Authenticate
// gets before any permission is looked at.
func (m *model) identityCheck(user string) string {
	switch {
	case user == anonymous:
		return outNoUser
	case user == badToken || !m.tokenOK[user]:
		return outBadToken
	}
	return outOK
}

// leaseWritable: attaching a key to a lease, or revoking it, needs WRITE on
// every key already attached to it.
func (m *model) leaseWritable(user string, id int64) bool {
	if l := m.leases[id]; l != nil {
		for k := range l.keys {
			if !m.canWrite(user, k, "") {
				return false
			}
		}
	}
	return true
}

// permitted is the verdict of the permission rules on req by user, who
// passed identityCheck.
func (m *model) permitted(user string, req any) bool {
	admin := m.isAdmin(user)
	switch r := req.(type) {
	case *pb.RangeRequest:
		return m.canRead(user, string(r.Key), string(r.RangeEnd))
	case *pb.PutRequest:
		return m.canWrite(user, string(r.Key), "") && (!r.PrevKv || m.canRead(user, string(r.Key), "")) &&
			m.leaseWritable(user, r.Lease)
	case *pb.DeleteRangeRequest:
		return m.canWrite(user, string(r.Key), string(r.RangeEnd)) &&
			(!r.PrevKv || m.canRead(user, string(r.Key), string(r.RangeEnd)))
	case *pb.TxnRequest:
		for _, c := range r.Compare {
			if !m.canRead(user, string(c.Key), string(c.RangeEnd)) {
				return false
			}
		}
		for _, op := range slices.Concat(r.Success, r.Failure) {
			if !m.permitted(user, opRequest(op)) {
				return false
			}
		}
		return true
	case *pb.WatchCreateRequest:
		return m.canRead(user, string(r.Key), string(r.RangeEnd))
	case *pb.LeaseRevokeRequest:
		return m.leaseWritable(user, r.ID)
	case *pb.LeaseTimeToLiveRequest:
		// etcd 3.7.3 lists a lease's keys only to a user that may read every
		// one of them; without the keys, anyone may ask.
		if l := m.leases[r.ID]; l != nil && r.Keys && !admin {
			for k := range l.keys {
				if !m.canRead(user, k, "") {
					return false
				}
			}
		}
		return true
	case *pb.LeaseKeepAliveRequest:
		return m.leaseWritable(user, r.ID)
	case *pb.LeaseLeasesRequest:
		// etcd 3.7.3 lists the leases only to a user that may read every key
		// attached to any of them.
		for _, l := range m.leases {
			for k := range l.keys {
				if !m.canRead(user, k, "") {
					return false
				}
			}
		}
		return true
	case *pb.LeaseGrantRequest, *pb.StatusRequest, *pb.MemberListRequest,
		*pb.AuthStatusRequest:
		return true
	case *pb.AlarmRequest:
		return r.Action == pb.AlarmRequest_GET || admin
	case *pb.AuthUserGetRequest:
		return admin || r.Name == user
	case *pb.AuthRoleGetRequest:
		return admin || m.users[user][r.Role]
	}
	// Compaction, the other maintenance and cluster calls and the auth
	// administration: root's alone.
	return admin
}

// verdict is the answer the model expects for req sent as user.
func (m *model) verdict(user string, req any) string {
	switch r := req.(type) {
	case *pb.AuthStatusRequest:
		if user == badToken || (user != anonymous && !m.tokenOK[user]) {
			return outBadToken
		}
		return outOK
	case *pb.AuthenticateRequest:
		if m.users[r.Name] == nil || r.Password != r.Name {
			return outAuthFailed
		}
		return outOK
	}
	if out := malformed(req); out != outOK {
		return out // checked before anything else
	}
	if out := m.identityCheck(user); out != outOK {
		return out
	}
	if w, ok := req.(*pb.WatchCreateRequest); ok && span(string(w.Key), string(w.RangeEnd)).empty() {
		return outWatchEmpty // before the permissions
	}
	if !m.permitted(user, req) {
		return outDenied
	}
	return m.failure(req)
}

// failure is the error a permitted request gets from the store's state, or
// "ok".
func (m *model) failure(req any) string {
	switch r := req.(type) {
	case *pb.RangeRequest:
		switch {
		case r.Revision > m.rev:
			return outFutureRev
		case r.Revision > 0 && r.Revision < m.compactRev:
			return outCompacted
		}
	case *pb.PutRequest:
		switch {
		case r.Lease != 0 && m.leases[r.Lease] == nil:
			return outLeaseAbsent
		case (r.IgnoreValue || r.IgnoreLease) && m.kv[string(r.Key)] == nil:
			return outKeyAbsent
		}
	case *pb.TxnRequest:
		for _, op := range m.branch(r) {
			if out := m.failure(opRequest(op)); out != outOK {
				return out
			}
		}
	case *pb.CompactionRequest:
		switch {
		case r.Revision > m.rev:
			return outFutureRev
		case r.Revision <= m.compactRev:
			return outCompacted
		}
	case *pb.LeaseGrantRequest:
		if m.leases[r.ID] != nil {
			return outLeaseExists
		}
	case *pb.LeaseRevokeRequest:
		if m.leases[r.ID] == nil {
			return outLeaseAbsent
		}
	case *pb.LeaseKeepAliveRequest:
		// A keepalive of an unknown lease is answered with TTL 0, no error.
	case *pb.AuthUserAddRequest:
		if m.users[r.Name] != nil {
			return outUserExists
		}
	case *pb.AuthUserDeleteRequest:
		if r.Name == rootUser {
			return outAuthMgmt
		}
		if m.users[r.Name] == nil {
			return outUserAbsent
		}
	case *pb.AuthUserGetRequest:
		if m.users[r.Name] == nil {
			return outUserAbsent
		}
	case *pb.AuthUserChangePasswordRequest:
		if m.users[r.Name] == nil {
			return outUserAbsent
		}
	case *pb.AuthUserGrantRoleRequest:
		if m.users[r.User] == nil {
			return outUserAbsent
		}
		if _, ok := m.roles[r.Role]; !ok {
			return outRoleAbsent
		}
	case *pb.AuthUserRevokeRoleRequest:
		if r.Name == rootUser && r.Role == rootRole {
			return outAuthMgmt
		}
		if m.users[r.Name] == nil {
			return outUserAbsent
		}
		if !m.users[r.Name][r.Role] {
			return outNotGranted
		}
	case *pb.AuthRoleAddRequest:
		if _, ok := m.roles[r.Name]; ok {
			return outRoleExists
		}
	case *pb.AuthRoleDeleteRequest:
		if r.Role == rootRole {
			return outAuthMgmt
		}
		if _, ok := m.roles[r.Role]; !ok {
			return outRoleAbsent
		}
	case *pb.AuthRoleGetRequest:
		if _, ok := m.roles[r.Role]; !ok {
			return outRoleAbsent
		}
	case *pb.AuthRoleGrantPermissionRequest:
		if len(r.Perm.Key) == 0 || span(string(r.Perm.Key), string(r.Perm.RangeEnd)).empty() {
			return outAuthMgmt
		}
		if _, ok := m.roles[r.Name]; !ok {
			return outRoleAbsent
		}
	case *pb.AuthRoleRevokePermissionRequest:
		if _, ok := m.roles[r.Role]; !ok {
			return outRoleAbsent
		}
		if !slices.ContainsFunc(m.roles[r.Role], func(p perm) bool {
			return p.key == string(r.Key) && p.end == string(r.RangeEnd)
		}) {
			return outPermAbsent
		}
	case *pb.MemberPromoteRequest:
		return outNotLearner
	}
	return outOK
}

// malformed is the error of a request that etcd refuses before it looks
// at anything else: a KV request, compare or txn operation with no key; a
// put that asks to keep its key's value or lease and gives one all the
// same. A txn reports the first, in the order of its compares, then its
// operations, depth first.
func malformed(req any) string {
	switch r := req.(type) {
	case *pb.RangeRequest:
		if len(r.Key) == 0 {
			return outNoKey
		}
	case *pb.DeleteRangeRequest:
		if len(r.Key) == 0 {
			return outNoKey
		}
	case *pb.PutRequest:
		switch {
		case len(r.Key) == 0:
			return outNoKey
		case r.IgnoreValue && len(r.Value) > 0:
			return outValueGiven
		case r.IgnoreLease && r.Lease != 0:
			return outLeaseGiven
		}
	case *pb.TxnRequest:
		for _, c := range r.Compare {
			if len(c.Key) == 0 {
				return outNoKey
			}
		}
		for _, op := range slices.Concat(r.Success, r.Failure) {
			if out := malformed(opRequest(op)); out != outOK {
				return out
			}
		}
	}
	return outOK
}

// emptyRange says whether a request, or a compare or operation of a txn at
// any depth, names a range that ends before it starts. Such a range names
// no key, so allowing it shows nothing; etcd allows or denies it by an
// accident of how it stores permissions. Where one is present, the checks
// take "permission denied" and the model's answer as equally right.
func emptyRange(req any) bool {
	switch r := req.(type) {
	case *pb.RangeRequest:
		return span(string(r.Key), string(r.RangeEnd)).empty()
	case *pb.DeleteRangeRequest:
		return span(string(r.Key), string(r.RangeEnd)).empty()
	case *pb.WatchCreateRequest:
		// A watch of the empty key alone watches no key either.
		return span(string(r.Key), string(r.RangeEnd)).empty() || len(r.Key) == 0 && len(r.RangeEnd) == 0
	case *pb.TxnRequest:
		for _, c := range r.Compare {
			if span(string(c.Key), string(c.RangeEnd)).empty() {
				return true
			}
		}
		for _, op := range slices.Concat(r.Success, r.Failure) {
			if emptyRange(opRequest(op)) {
				return true
			}
		}
	}
	return false
}

// opRequest is the request inside a txn operation.
func opRequest(op *pb.RequestOp) any {
	switch o := op.Request.(type) {
	case *pb.RequestOp_RequestRange:
		return o.RequestRange
	case *pb.RequestOp_RequestPut:
		return o.RequestPut
	case *pb.RequestOp_RequestDeleteRange:
		return o.RequestDeleteRange
	case *pb.RequestOp_RequestTxn:
		return o.RequestTxn
	}
	return nil
}

// ---- the key-value store

// empty: a range that ends before it starts.
func (iv interval) empty() bool { return iv.hi != "" && iv.hi <= iv.lo }

func (iv interval) contains(key string) bool { return key >= iv.lo && (iv.hi == "" || key < iv.hi) }

// inRange says whether key is among the keys of (start, end).
func inRange(key, start, end string) bool { return span(start, end).contains(key) }

// at returns the keys of [key, end) as they were at revision rev (0: now),
// in key order.
func (m *model) at(key, end string, rev int64) []*mvccpb.KeyValue {
	state := m.kv
	if rev > 0 && rev < m.rev {
		state = map[string]*mvccpb.KeyValue{}
		for _, e := range m.events {
			if e.ev.Kv.ModRevision > rev {
				break
			}
			if e.ev.Type == mvccpb.DELETE {
				delete(state, string(e.ev.Kv.Key))
			} else {
				state[string(e.ev.Kv.Key)] = e.ev.Kv
			}
		}
	}
	var out []*mvccpb.KeyValue
	for _, k := range slices.Sorted(maps.Keys(state)) {
		if inRange(k, key, end) {
			out = append(out, state[k])
		}
	}
	return out
}

// txnState holds the writes of one revision while it is being applied.
type txnState struct {
	m       *model
	rev     int64 // the revision the writes get
	changes []*mvccpb.Event
	path    map[*pb.TxnRequest]bool // the branch each txn takes
}

func (m *model) begin() *txnState { return &txnState{m: m, rev: m.rev + 1} }

func (s *txnState) put(r *pb.PutRequest) *pb.PutResponse {
	m, key := s.m, string(r.Key)
	resp := &pb.PutResponse{}
	old := m.kv[key]
	kv := &mvccpb.KeyValue{Key: r.Key, Value: r.Value, ModRevision: s.rev, CreateRevision: s.rev, Version: 1, Lease: r.Lease}
	if old != nil {
		kv.CreateRevision, kv.Version = old.CreateRevision, old.Version+1
		if r.IgnoreValue {
			kv.Value = old.Value
		}
		if r.IgnoreLease {
			kv.Lease = old.Lease
		}
		if r.PrevKv {
			resp.PrevKv = old
		}
		if l := m.leases[old.Lease]; l != nil {
			delete(l.keys, key)
		}
	}
	if l := m.leases[kv.Lease]; l != nil && kv.Lease != 0 {
		l.keys[key] = true
	}
	m.kv[key] = kv
	s.changes = append(s.changes, &mvccpb.Event{Type: mvccpb.PUT, Kv: kv, PrevKv: old})
	return resp
}

func (s *txnState) deleteRange(r *pb.DeleteRangeRequest) *pb.DeleteRangeResponse {
	m := s.m
	resp := &pb.DeleteRangeResponse{}
	for _, old := range m.at(string(r.Key), string(r.RangeEnd), 0) {
		resp.Deleted++
		if r.PrevKv {
			resp.PrevKvs = append(resp.PrevKvs, old)
		}
		s.deleteKey(string(old.Key))
	}
	return resp
}

func (s *txnState) deleteKey(key string) {
	m := s.m
	old := m.kv[key]
	if l := m.leases[old.Lease]; l != nil {
		delete(l.keys, key)
	}
	delete(m.kv, key)
	s.changes = append(s.changes, &mvccpb.Event{Type: mvccpb.DELETE,
		Kv: &mvccpb.KeyValue{Key: []byte(key), ModRevision: s.rev}, PrevKv: old})
}

// commit ends the revision: it exists only if something changed.
func (s *txnState) commit(users []string) {
	m := s.m
	if len(s.changes) == 0 {
		return
	}
	m.rev = s.rev
	for _, c := range s.changes {
		unreadable := map[string]string{}
		for _, u := range users {
			switch {
			case m.users[u] == nil:
				unreadable[u] = "deleted"
			case !m.canRead(u, string(c.Kv.Key), ""):
				unreadable[u] = "no permission"
			}
		}
		m.events = append(m.events, event{ev: c, unreadable: unreadable})
	}
}

// rangeResult is what a range should return; sorted by a target other than
// the key, ties may come in any order, so the checks compare it loosely.
func (m *model) rangeResult(r *pb.RangeRequest) *pb.RangeResponse {
	all := m.at(string(r.Key), string(r.RangeEnd), r.Revision)
	resp := &pb.RangeResponse{Count: int64(len(all))}
	if r.CountOnly {
		return resp // no keys, and no "more" either
	}
	filtered := r.MinModRevision > 0 || r.MaxModRevision > 0 || r.MinCreateRevision > 0 || r.MaxCreateRevision > 0
	if r.SortOrder == pb.RangeRequest_NONE && !filtered && r.Limit > 0 && int64(len(all)) > r.Limit+1 {
		// etcd 3.7.3 cuts at the limit (one more, to know if there is more)
		// while it reads in key order, before any sort, unless an order or
		// a filter asks for every key.
		all = all[:r.Limit+1]
	}
	var kvs []*mvccpb.KeyValue
	for _, kv := range all {
		if (r.MinModRevision > 0 && kv.ModRevision < r.MinModRevision) ||
			(r.MaxModRevision > 0 && kv.ModRevision > r.MaxModRevision) ||
			(r.MinCreateRevision > 0 && kv.CreateRevision < r.MinCreateRevision) ||
			(r.MaxCreateRevision > 0 && kv.CreateRevision > r.MaxCreateRevision) {
			continue
		}
		kvs = append(kvs, kv)
	}
	less := sortKey(r.SortTarget)
	switch {
	case r.SortOrder == pb.RangeRequest_DESCEND:
		sort.SliceStable(kvs, func(i, j int) bool { return less(kvs[j], kvs[i]) })
	case r.SortOrder == pb.RangeRequest_ASCEND || r.SortTarget != pb.RangeRequest_KEY:
		// No order but a target other than the key sorts ascending.
		sort.SliceStable(kvs, func(i, j int) bool { return less(kvs[i], kvs[j]) })
	}
	if r.Limit > 0 && int64(len(kvs)) > r.Limit {
		kvs, resp.More = kvs[:r.Limit], true
	}
	for _, kv := range kvs {
		if r.KeysOnly {
			// etcd 3.7.3 leaves the lease out of a keys-only answer too,
			// unless it read the values to sort by them.
			kv = proto.Clone(kv).(*mvccpb.KeyValue)
			kv.Value = nil
			if r.SortTarget != pb.RangeRequest_VALUE {
				kv.Lease = 0
			}
		}
		resp.Kvs = append(resp.Kvs, kv)
	}
	return resp
}

func sortKey(t pb.RangeRequest_SortTarget) func(a, b *mvccpb.KeyValue) bool {
	switch t {
	case pb.RangeRequest_VERSION:
		return func(a, b *mvccpb.KeyValue) bool { return a.Version < b.Version }
	case pb.RangeRequest_CREATE:
		return func(a, b *mvccpb.KeyValue) bool { return a.CreateRevision < b.CreateRevision }
	case pb.RangeRequest_MOD:
		return func(a, b *mvccpb.KeyValue) bool { return a.ModRevision < b.ModRevision }
	case pb.RangeRequest_VALUE:
		return func(a, b *mvccpb.KeyValue) bool { return bytes.Compare(a.Value, b.Value) < 0 }
	}
	return func(a, b *mvccpb.KeyValue) bool { return bytes.Compare(a.Key, b.Key) < 0 }
}

// compare evaluates one txn compare on the current keys: every key of its
// range must pass; a compare of the value of no key fails.
func (m *model) compare(c *pb.Compare) bool {
	kvs := m.at(string(c.Key), string(c.RangeEnd), 0)
	if len(kvs) == 0 {
		if c.Target == pb.Compare_VALUE {
			return false
		}
		kvs = []*mvccpb.KeyValue{{}}
	}
	for _, kv := range kvs {
		var d int
		switch c.Target {
		case pb.Compare_VERSION:
			d = cmp64(kv.Version, c.GetVersion())
		case pb.Compare_CREATE:
			d = cmp64(kv.CreateRevision, c.GetCreateRevision())
		case pb.Compare_MOD:
			d = cmp64(kv.ModRevision, c.GetModRevision())
		case pb.Compare_VALUE:
			d = bytes.Compare(kv.Value, c.GetValue())
		case pb.Compare_LEASE:
			d = cmp64(kv.Lease, c.GetLease())
		}
		ok := false
		switch c.Result {
		case pb.Compare_EQUAL:
			ok = d == 0
		case pb.Compare_NOT_EQUAL:
			ok = d != 0
		case pb.Compare_GREATER:
			ok = d > 0
		case pb.Compare_LESS:
			ok = d < 0
		}
		if !ok {
			return false
		}
	}
	return true
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// branch is the list of operations a txn runs given the current keys.
func (m *model) branch(r *pb.TxnRequest) []*pb.RequestOp {
	if m.succeeded(r) {
		return r.Success
	}
	return r.Failure
}

// txn runs r inside s; ranges see the txn's own earlier writes.
func (s *txnState) txn(r *pb.TxnRequest) *pb.TxnResponse {
	m := s.m
	resp := &pb.TxnResponse{Succeeded: s.path[r]}
	ops := r.Failure
	if resp.Succeeded {
		ops = r.Success
	}
	for _, op := range ops {
		var ro pb.ResponseOp
		switch o := op.Request.(type) {
		case *pb.RequestOp_RequestRange:
			ro.Response = &pb.ResponseOp_ResponseRange{ResponseRange: m.rangeResult(o.RequestRange)}
		case *pb.RequestOp_RequestPut:
			ro.Response = &pb.ResponseOp_ResponsePut{ResponsePut: s.put(o.RequestPut)}
		case *pb.RequestOp_RequestDeleteRange:
			ro.Response = &pb.ResponseOp_ResponseDeleteRange{ResponseDeleteRange: s.deleteRange(o.RequestDeleteRange)}
		case *pb.RequestOp_RequestTxn:
			ro.Response = &pb.ResponseOp_ResponseTxn{ResponseTxn: s.txn(o.RequestTxn)}
		}
		resp.Responses = append(resp.Responses, &ro)
	}
	return resp
}

// txnPath decides, before a txn writes anything, which branch it and each
// txn nested in the branches it takes will run: etcd evaluates every
// compare, at any depth, on the keys as they were before the txn.
func (m *model) txnPath(r *pb.TxnRequest, path map[*pb.TxnRequest]bool) map[*pb.TxnRequest]bool {
	path[r] = m.succeeded(r)
	for _, op := range m.branch(r) {
		if t, ok := op.Request.(*pb.RequestOp_RequestTxn); ok {
			m.txnPath(t.RequestTxn, path)
		}
	}
	return path
}

func (m *model) succeeded(r *pb.TxnRequest) bool {
	for _, c := range r.Compare {
		if !m.compare(c) {
			return false
		}
	}
	return true
}

// ---- applying what the server did

// apply changes the model as req, answered "ok", changed the server, and
// returns the response the model expects (nil where it checks none).
func (m *model) apply(user string, req any, users []string) any {
	switch r := req.(type) {
	case *pb.RangeRequest:
		return m.rangeResult(r)
	case *pb.PutRequest:
		s := m.begin()
		resp := s.put(r)
		s.commit(users)
		return resp
	case *pb.DeleteRangeRequest:
		s := m.begin()
		resp := s.deleteRange(r)
		s.commit(users)
		return resp
	case *pb.TxnRequest:
		s := m.begin()
		s.path = m.txnPath(r, map[*pb.TxnRequest]bool{})
		resp := s.txn(r)
		s.commit(users)
		return resp
	case *pb.CompactionRequest:
		m.compactRev = r.Revision
	case *pb.LeaseGrantRequest:
		m.leases[r.ID] = &lease{ttl: r.TTL, keys: map[string]bool{}}
	case *pb.LeaseRevokeRequest:
		if l := m.leases[r.ID]; l != nil {
			s := m.begin()
			for _, k := range slices.Sorted(maps.Keys(l.keys)) {
				s.deleteKey(k)
			}
			s.commit(users)
			delete(m.leases, r.ID)
		}
	case *pb.AuthUserAddRequest:
		m.users[r.Name] = map[string]bool{}
	case *pb.AuthUserDeleteRequest:
		delete(m.users, r.Name)
		m.tokenOK[r.Name] = false
	case *pb.AuthUserChangePasswordRequest:
		m.tokenOK[r.Name] = false
	case *pb.AuthUserGrantRoleRequest:
		m.users[r.User][r.Role] = true
	case *pb.AuthUserRevokeRoleRequest:
		delete(m.users[r.Name], r.Role)
	case *pb.AuthRoleAddRequest:
		m.roles[r.Name] = nil
	case *pb.AuthRoleDeleteRequest:
		delete(m.roles, r.Role)
		for _, roles := range m.users {
			delete(roles, r.Role)
		}
	case *pb.AuthRoleGrantPermissionRequest:
		p := perm{string(r.Perm.Key), string(r.Perm.RangeEnd), r.Perm.PermType}
		ps := slices.DeleteFunc(m.roles[r.Name], func(q perm) bool { return q.key == p.key && q.end == p.end })
		m.roles[r.Name] = append(ps, p)
	case *pb.AuthRoleRevokePermissionRequest:
		m.roles[r.Role] = slices.DeleteFunc(m.roles[r.Role], func(q perm) bool {
			return q.key == string(r.Key) && q.end == string(r.RangeEnd)
		})
	case *pb.AuthenticateRequest:
		m.tokenOK[r.Name] = true
	}
	return nil
}

// describe tells a user's roles and permissions, for a failure's report.
func (m *model) describe(user string) string {
	if m.users[user] == nil {
		return "(no such user)"
	}
	var b bytes.Buffer
	for _, role := range slices.Sorted(maps.Keys(m.users[user])) {
		b.WriteString(role + "[")
		for i, p := range m.roles[role] {
			if i > 0 {
				b.WriteString(" ")
			}
			b.WriteString(p.typ.String() + " " + quote(p.key))
			switch p.end {
			case "":
			case "\x00":
				b.WriteString("..")
			default:
				b.WriteString("-" + quote(p.end))
			}
		}
		b.WriteString("] ")
	}
	return b.String()
}

func quote(s string) string {
	if s == "\x00" {
		return `\x00`
	}
	return s
}
