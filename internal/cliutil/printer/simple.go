package printer

import (
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/cairnkv/cairn/internal/cliutil/keyrange"
)

// The simple format of each result: what etcdctl prints by default.

// kvPair is what the simple format prints of a key-value: key and value.
func (p *Printer) kvPair(kv *mvccpb.KeyValue) {
	p.Line(p.text(kv.GetKey()))
	p.Line(p.text(kv.GetValue()))
}

func (r *GetResult) PrintSimple(p *Printer) {
	for _, kv := range r.Resp.GetKvs() {
		if !r.ValueOnly {
			p.Line(p.text(kv.GetKey()))
		}
		p.Line(p.text(kv.GetValue()))
	}
}

func (r *PutResult) PrintSimple(p *Printer) {
	p.Line("OK")
	if prev := r.Resp.GetPrevKv(); prev != nil {
		p.kvPair(prev)
	}
}

func (r *DelResult) PrintSimple(p *Printer) {
	p.Line(r.Resp.GetDeleted())
	for _, kv := range r.Resp.GetPrevKvs() {
		p.kvPair(kv)
	}
}

func (r *TxnResult) PrintSimple(p *Printer) {
	if r.Resp.GetSucceeded() {
		p.Line("SUCCESS")
	} else {
		p.Line("FAILURE")
	}
	for _, op := range r.Resp.GetResponses() {
		p.Line()
		if res, ok := opResult(op).(simplePrintable); ok {
			res.PrintSimple(p)
		}
	}
}

func (r *LeaseGrantResult) PrintSimple(p *Printer) {
	p.Linef("lease %016x granted with TTL(%ds)", r.Resp.GetID(), r.Resp.GetTTL())
}

func (r *LeaseRevokeResult) PrintSimple(p *Printer) {
	p.Linef("lease %016x revoked", r.ID)
}

func (r *LeaseTimeToLiveResult) PrintSimple(p *Printer) {
	if r.Resp.GetTTL() == -1 {
		p.Linef("lease %016x already expired", r.Resp.GetID())
		return
	}
	text := fmt.Sprintf("lease %016x granted with TTL(%ds), remaining(%ds)", r.Resp.GetID(), r.Resp.GetGrantedTTL(), r.Resp.GetTTL())
	if r.Keys {
		keys := make([]string, len(r.Resp.GetKeys()))
		for i, k := range r.Resp.GetKeys() {
			keys[i] = string(k)
		}
		text += fmt.Sprintf(", attached keys(%v)", keys)
	}
	p.Line(text)
}

func (r *LeaseListResult) PrintSimple(p *Printer) {
	p.Linef("found %d leases", len(r.Resp.GetLeases()))
	for _, l := range r.Resp.GetLeases() {
		p.Linef("%016x", l.GetID())
	}
}

func (r *LeaseKeepAliveResult) PrintSimple(p *Printer) {
	p.Linef("lease %016x keepalived with TTL(%d)", r.Resp.GetID(), r.Resp.GetTTL())
}

func (r *WatchResult) PrintSimple(p *Printer) {
	for _, ev := range r.Resp.Events {
		p.Line(ev.GetType())
		if prev := ev.GetPrevKv(); prev != nil {
			p.kvPair(prev)
		}
		p.kvPair(ev.GetKv())
	}
}

func (r *MemberAddResult) PrintSimple(p *Printer) {
	m := r.Resp.GetMember()
	role := ""
	if m.GetIsLearner() {
		role = " as learner"
	}
	p.Linef("Member %16x added%s to cluster %16x", m.GetID(), role, r.Resp.GetHeader().GetClusterId())
	var cluster []string
	for _, other := range r.Resp.GetMembers() {
		name := other.GetName()
		if other.GetID() == m.GetID() {
			name = r.Name
		}
		if name == "" {
			continue
		}
		for _, u := range other.GetPeerURLs() {
			cluster = append(cluster, name+"="+u)
		}
	}
	p.Line()
	p.Linef("ETCD_NAME=%q", r.Name)
	p.Linef("ETCD_INITIAL_CLUSTER=%q", strings.Join(cluster, ","))
	p.Linef("ETCD_INITIAL_ADVERTISE_PEER_URLS=%q", strings.Join(m.GetPeerURLs(), ","))
	p.Linef("ETCD_INITIAL_CLUSTER_STATE=%q", "existing")
}

func (r *MemberChangeResult) PrintSimple(p *Printer) {
	p.Linef("Member %16x %s cluster %16x", r.ID, r.Verb, r.Resp.GetHeader().GetClusterId())
}

// memberStatus is "started" for a member that has joined, "unstarted" for
// one added but not yet running.
func memberStatus(m *pb.Member) string {
	if m.GetName() == "" {
		return "unstarted"
	}
	return "started"
}

func (r *MemberListResult) PrintSimple(p *Printer) {
	for _, m := range r.Resp.GetMembers() {
		p.Linef("%x, %s, %s, %s, %s, %v", m.GetID(), memberStatus(m), m.GetName(),
			strings.Join(m.GetPeerURLs(), ","), strings.Join(m.GetClientURLs(), ","), m.GetIsLearner())
	}
}

func (r *EndpointHealthResult) PrintSimple(p *Printer) {
	for _, h := range r.Health {
		if h.Health {
			p.Linef("%s is healthy: successfully committed proposal: took = %s", h.Endpoint, h.Took)
		} else {
			fmt.Fprintf(r.Stderr, "%s is unhealthy: failed to commit proposal: %s\n", h.Endpoint, h.Error)
		}
	}
}

func (r *EndpointStatusResult) PrintSimple(p *Printer) {
	for _, s := range r.Statuses {
		p.Line(strings.Join(statusRow(s), ", "))
	}
}

func (r *EndpointHashKVResult) PrintSimple(p *Printer) {
	for _, h := range r.Hashes {
		p.Linef("%s, %d, %d", h.Endpoint, h.HashKV.GetHash(), h.HashKV.GetHashRevision())
	}
}

func (r *AlarmResult) PrintSimple(p *Printer) {
	for _, a := range r.Resp.GetAlarms() {
		p.Linef("memberID:%d alarm:%v", a.GetMemberID(), a.GetAlarm())
	}
}

func (r *MoveLeaderResult) PrintSimple(p *Printer) {
	p.Linef("Leadership transferred from %x to %x", r.From, r.To)
}

func (r *DowngradeResult) PrintSimple(p *Printer) {
	p.Linef("Downgrade %s success, cluster version %s", r.Action, r.Resp.GetVersion())
}

func (r *AuthResult) PrintSimple(p *Printer) { p.Line(r.Text) }

func (r *AuthStatusResult) PrintSimple(p *Printer) {
	p.Linef("Authentication Status: %t", r.Resp.GetEnabled())
	p.Linef("AuthRevision: %d", r.Resp.GetAuthRevision())
}

func (r *UserGetResult) PrintSimple(p *Printer) {
	p.Linef("User: %s", r.Name)
	line := "Roles:"
	for _, role := range r.Resp.GetRoles() {
		line += " " + role
	}
	p.Line(line)
}

func (r *UserListResult) PrintSimple(p *Printer) {
	for _, u := range r.Resp.GetUsers() {
		p.Line(u)
	}
}

func (r *RoleListResult) PrintSimple(p *Printer) {
	for _, role := range r.Resp.GetRoles() {
		p.Line(role)
	}
}

func (r *RoleGetResult) PrintSimple(p *Printer) {
	p.Linef("Role %s", r.Name)
	if r.Name == "root" && r.Resp.GetPerm() == nil {
		// The root role may do anything.
		p.Line("KV Read:\n\t[, <open ended>\nKV Write:\n\t[, <open ended>")
		return
	}
	p.Line("KV Read:")
	for _, perm := range r.Resp.GetPerm() {
		if perm.GetPermType() == authpb.READ || perm.GetPermType() == authpb.READWRITE {
			p.Line("\t" + permissionRangeText(perm))
		}
	}
	p.Line("KV Write:")
	for _, perm := range r.Resp.GetPerm() {
		if perm.GetPermType() == authpb.WRITE || perm.GetPermType() == authpb.READWRITE {
			p.Line("\t" + permissionRangeText(perm))
		}
	}
}

// permissionRangeText describes the keys of a permission: one key, a range,
// a prefix or all keys from one on.
func permissionRangeText(perm *authpb.Permission) string {
	key, end := string(perm.GetKey()), string(perm.GetRangeEnd())
	switch {
	case end == "":
		return key
	case end == "\x00":
		return fmt.Sprintf("[%s, <open ended>", key)
	case end == string(keyrange.PrefixEnd(perm.GetKey())):
		return fmt.Sprintf("[%s, %s) (prefix %s)", key, end, key)
	}
	return fmt.Sprintf("[%s, %s)", key, end)
}
