package cli

import (
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/cairnkv/cairn/internal/cli/keyrange"
)

// The simple format of each result: what etcdctl prints by default.

// kvPair is what the simple format prints of a key-value: key and value.
func (p *printer) kvPair(kv *mvccpb.KeyValue) {
	p.line(p.text(kv.GetKey()))
	p.line(p.text(kv.GetValue()))
}

func (r *getResult) printSimple(p *printer) {
	for _, kv := range r.resp.GetKvs() {
		if !r.valueOnly {
			p.line(p.text(kv.GetKey()))
		}
		p.line(p.text(kv.GetValue()))
	}
}

func (r *putResult) printSimple(p *printer) {
	p.line("OK")
	if prev := r.resp.GetPrevKv(); prev != nil {
		p.kvPair(prev)
	}
}

func (r *delResult) printSimple(p *printer) {
	p.line(r.resp.GetDeleted())
	for _, kv := range r.resp.GetPrevKvs() {
		p.kvPair(kv)
	}
}

func (r *txnResult) printSimple(p *printer) {
	if r.resp.GetSucceeded() {
		p.line("SUCCESS")
	} else {
		p.line("FAILURE")
	}
	for _, op := range r.resp.GetResponses() {
		p.line()
		if res, ok := opResult(op).(simplePrintable); ok {
			res.printSimple(p)
		}
	}
}

func (r *leaseGrantResult) printSimple(p *printer) {
	p.linef("lease %016x granted with TTL(%ds)", r.resp.GetID(), r.resp.GetTTL())
}

func (r *leaseRevokeResult) printSimple(p *printer) {
	p.linef("lease %016x revoked", r.id)
}

func (r *leaseTimeToLiveResult) printSimple(p *printer) {
	if r.resp.GetTTL() == -1 {
		p.linef("lease %016x already expired", r.resp.GetID())
		return
	}
	text := fmt.Sprintf("lease %016x granted with TTL(%ds), remaining(%ds)", r.resp.GetID(), r.resp.GetGrantedTTL(), r.resp.GetTTL())
	if r.keys {
		keys := make([]string, len(r.resp.GetKeys()))
		for i, k := range r.resp.GetKeys() {
			keys[i] = string(k)
		}
		text += fmt.Sprintf(", attached keys(%v)", keys)
	}
	p.line(text)
}

func (r *leaseListResult) printSimple(p *printer) {
	p.linef("found %d leases", len(r.resp.GetLeases()))
	for _, l := range r.resp.GetLeases() {
		p.linef("%016x", l.GetID())
	}
}

func (r *leaseKeepAliveResult) printSimple(p *printer) {
	p.linef("lease %016x keepalived with TTL(%d)", r.resp.GetID(), r.resp.GetTTL())
}

func (r *watchResult) printSimple(p *printer) {
	for _, ev := range r.resp.Events {
		p.line(ev.GetType())
		if prev := ev.GetPrevKv(); prev != nil {
			p.kvPair(prev)
		}
		p.kvPair(ev.GetKv())
	}
}

func (r *memberAddResult) printSimple(p *printer) {
	m := r.resp.GetMember()
	role := ""
	if m.GetIsLearner() {
		role = " as learner"
	}
	p.linef("Member %16x added%s to cluster %16x", m.GetID(), role, r.resp.GetHeader().GetClusterId())
	var cluster []string
	for _, other := range r.resp.GetMembers() {
		name := other.GetName()
		if other.GetID() == m.GetID() {
			name = r.name
		}
		if name == "" {
			continue
		}
		for _, u := range other.GetPeerURLs() {
			cluster = append(cluster, name+"="+u)
		}
	}
	p.line()
	p.linef("ETCD_NAME=%q", r.name)
	p.linef("ETCD_INITIAL_CLUSTER=%q", strings.Join(cluster, ","))
	p.linef("ETCD_INITIAL_ADVERTISE_PEER_URLS=%q", strings.Join(m.GetPeerURLs(), ","))
	p.linef("ETCD_INITIAL_CLUSTER_STATE=%q", "existing")
}

func (r *memberChangeResult) printSimple(p *printer) {
	p.linef("Member %16x %s cluster %16x", r.id, r.verb, r.resp.GetHeader().GetClusterId())
}

// memberStatus is "started" for a member that has joined, "unstarted" for
// one added but not yet running.
func memberStatus(m *pb.Member) string {
	if m.GetName() == "" {
		return "unstarted"
	}
	return "started"
}

func (r *memberListResult) printSimple(p *printer) {
	for _, m := range r.resp.GetMembers() {
		p.linef("%x, %s, %s, %s, %s, %v", m.GetID(), memberStatus(m), m.GetName(),
			strings.Join(m.GetPeerURLs(), ","), strings.Join(m.GetClientURLs(), ","), m.GetIsLearner())
	}
}

func (r *endpointHealthResult) printSimple(p *printer) {
	for _, h := range r.health {
		if h.Health {
			p.linef("%s is healthy: successfully committed proposal: took = %s", h.Endpoint, h.Took)
		} else {
			fmt.Fprintf(r.stderr, "%s is unhealthy: failed to commit proposal: %s\n", h.Endpoint, h.Error)
		}
	}
}

func (r *endpointStatusResult) printSimple(p *printer) {
	for _, s := range r.statuses {
		p.line(strings.Join(statusRow(s), ", "))
	}
}

func (r *endpointHashKVResult) printSimple(p *printer) {
	for _, h := range r.hashes {
		p.linef("%s, %d, %d", h.Endpoint, h.HashKV.GetHash(), h.HashKV.GetHashRevision())
	}
}

func (r *alarmResult) printSimple(p *printer) {
	for _, a := range r.resp.GetAlarms() {
		p.linef("memberID:%d alarm:%v", a.GetMemberID(), a.GetAlarm())
	}
}

func (r *moveLeaderResult) printSimple(p *printer) {
	p.linef("Leadership transferred from %x to %x", r.from, r.to)
}

func (r *downgradeResult) printSimple(p *printer) {
	p.linef("Downgrade %s success, cluster version %s", r.action, r.resp.GetVersion())
}

func (r *authResult) printSimple(p *printer) { p.line(r.text) }

func (r *authStatusResult) printSimple(p *printer) {
	p.linef("Authentication Status: %t", r.resp.GetEnabled())
	p.linef("AuthRevision: %d", r.resp.GetAuthRevision())
}

func (r *userGetResult) printSimple(p *printer) {
	p.linef("User: %s", r.name)
	line := "Roles:"
	for _, role := range r.resp.GetRoles() {
		line += " " + role
	}
	p.line(line)
}

func (r *userListResult) printSimple(p *printer) {
	for _, u := range r.resp.GetUsers() {
		p.line(u)
	}
}

func (r *roleListResult) printSimple(p *printer) {
	for _, role := range r.resp.GetRoles() {
		p.line(role)
	}
}

func (r *roleGetResult) printSimple(p *printer) {
	p.linef("Role %s", r.name)
	if r.name == "root" && r.resp.GetPerm() == nil {
		// The root role may do anything.
		p.line("KV Read:\n\t[, <open ended>\nKV Write:\n\t[, <open ended>")
		return
	}
	p.line("KV Read:")
	for _, perm := range r.resp.GetPerm() {
		if perm.GetPermType() == authpb.READ || perm.GetPermType() == authpb.READWRITE {
			p.line("\t" + permissionRangeText(perm))
		}
	}
	p.line("KV Write:")
	for _, perm := range r.resp.GetPerm() {
		if perm.GetPermType() == authpb.WRITE || perm.GetPermType() == authpb.READWRITE {
			p.line("\t" + permissionRangeText(perm))
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
