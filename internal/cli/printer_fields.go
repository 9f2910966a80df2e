package cli

import (
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// The fields format of each result: one `"Name" : value` line per field.

// field writes one line of the fields format.
func (p *printer) field(name string, value any) {
	fmt.Fprintf(p.w, "%q : %v\n", name, value)
}

// quoted renders a byte string as a Go-quoted string.
func quoted(b []byte) string {
	return fmt.Sprintf("%q", b)
}

// fieldsHeader writes a response header. The revision is left out where it
// is zero: responses that are not about keys do not carry one.
func (p *printer) fieldsHeader(h *pb.ResponseHeader) {
	p.field("ClusterID", p.id(h.GetClusterId()))
	p.field("MemberID", p.id(h.GetMemberId()))
	if h.GetRevision() > 0 {
		p.field("Revision", h.GetRevision())
	}
	p.field("RaftTerm", h.GetRaftTerm())
}

// fieldsKV writes a key-value; prefix ("" or "Prev") starts each name.
func (p *printer) fieldsKV(prefix string, kv *mvccpb.KeyValue) {
	p.field(prefix+"Key", quoted(kv.GetKey()))
	p.field(prefix+"CreateRevision", kv.GetCreateRevision())
	p.field(prefix+"ModRevision", kv.GetModRevision())
	p.field(prefix+"Version", kv.GetVersion())
	p.field(prefix+"Value", quoted(kv.GetValue()))
	p.field(prefix+"Lease", p.leaseID(kv.GetLease()))
}

// leaseID renders a lease ID: decimal, or 16 hexadecimal digits with --hex.
func (p *printer) leaseID(id int64) string {
	if p.hex {
		return fmt.Sprintf("%016x", id)
	}
	return fmt.Sprint(id)
}

func (r *getResult) printFields(p *printer) {
	p.fieldsHeader(r.resp.GetHeader())
	for _, kv := range r.resp.GetKvs() {
		p.fieldsKV("", kv)
	}
	p.field("More", r.resp.GetMore())
	p.field("Count", r.resp.GetCount())
}

func (r *putResult) printFields(p *printer) {
	p.fieldsHeader(r.resp.GetHeader())
	if prev := r.resp.GetPrevKv(); prev != nil {
		p.fieldsKV("Prev", prev)
	}
}

func (r *delResult) printFields(p *printer) {
	p.fieldsHeader(r.resp.GetHeader())
	p.field("Deleted", r.resp.GetDeleted())
	for _, kv := range r.resp.GetPrevKvs() {
		p.fieldsKV("Prev", kv)
	}
}

func (r *txnResult) printFields(p *printer) {
	p.fieldsHeader(r.resp.GetHeader())
	p.field("Succeeded", r.resp.GetSucceeded())
	for _, op := range r.resp.GetResponses() {
		if res, ok := opResult(op).(fieldsPrintable); ok {
			res.printFields(p)
		}
	}
}

func (r *leaseGrantResult) printFields(p *printer) {
	p.fieldsHeader(r.resp.GetHeader())
	p.field("ID", p.leaseID(r.resp.GetID()))
	p.field("TTL", r.resp.GetTTL())
}

func (r *leaseRevokeResult) printFields(p *printer) {
	p.fieldsHeader(r.resp.GetHeader())
}

func (r *leaseTimeToLiveResult) printFields(p *printer) {
	p.fieldsHeader(r.resp.GetHeader())
	p.field("ID", p.leaseID(r.resp.GetID()))
	p.field("TTL", r.resp.GetTTL())
	p.field("GrantedTTL", r.resp.GetGrantedTTL())
	for _, k := range r.resp.GetKeys() {
		p.field("Key", quoted(k))
	}
}

func (r *leaseListResult) printFields(p *printer) {
	p.fieldsHeader(r.resp.GetHeader())
	for _, l := range r.resp.GetLeases() {
		p.field("ID", p.leaseID(l.GetID()))
	}
}

func (r *leaseKeepAliveResult) printFields(p *printer) {
	p.fieldsHeader(r.resp.GetHeader())
	p.field("ID", p.leaseID(r.resp.GetID()))
	p.field("TTL", r.resp.GetTTL())
}

func (r *watchResult) printFields(p *printer) {
	p.fieldsHeader(r.resp.Header)
	for _, ev := range r.resp.Events {
		p.field("Type", ev.GetType())
		if prev := ev.GetPrevKv(); prev != nil {
			p.fieldsKV("Prev", prev)
		}
		p.fieldsKV("", ev.GetKv())
	}
}

// fieldsMembers writes members, each followed by an empty line.
func (p *printer) fieldsMembers(members []*pb.Member) {
	for _, m := range members {
		p.field("ID", p.id(m.GetID()))
		p.field("Name", quoted([]byte(m.GetName())))
		for _, u := range m.GetPeerURLs() {
			p.field("PeerURL", quoted([]byte(u)))
		}
		for _, u := range m.GetClientURLs() {
			p.field("ClientURL", quoted([]byte(u)))
		}
		p.field("IsLearner", m.GetIsLearner())
		p.line()
	}
}

func (r *memberListResult) printFields(p *printer) {
	p.fieldsHeader(r.resp.GetHeader())
	p.fieldsMembers(r.resp.GetMembers())
}

func (r *endpointHealthResult) printFields(p *printer) {
	for _, h := range r.health {
		p.field("Endpoint", quoted([]byte(h.Endpoint)))
		p.field("Health", h.Health)
		p.field("Took", h.Took)
		p.field("Error", h.Error)
		p.line()
	}
}

func (r *endpointStatusResult) printFields(p *printer) {
	for _, s := range r.statuses {
		st := s.Status
		p.fieldsHeader(st.GetHeader())
		p.field("Version", quoted([]byte(st.GetVersion())))
		p.field("StorageVersion", quoted([]byte(st.GetStorageVersion())))
		p.field("DBSize", st.GetDbSize())
		p.field("DBSizeInUse", st.GetDbSizeInUse())
		p.field("DBSizeQuota", st.GetDbSizeQuota())
		p.field("Leader", st.GetLeader())
		p.field("IsLearner", st.GetIsLearner())
		p.field("RaftIndex", st.GetRaftIndex())
		p.field("RaftAppliedIndex", st.GetRaftAppliedIndex())
		p.field("Errors", st.GetErrors())
		p.field("Endpoint", quoted([]byte(s.Endpoint)))
		p.field("DowngradeTargetVersion", quoted([]byte(st.GetDowngradeInfo().GetTargetVersion())))
		p.field("DowngradeEnabled", st.GetDowngradeInfo().GetEnabled())
		p.line()
	}
}

func (r *endpointHashKVResult) printFields(p *printer) {
	for _, h := range r.hashes {
		p.fieldsHeader(h.HashKV.GetHeader())
		p.field("Endpoint", quoted([]byte(h.Endpoint)))
		p.field("Hash", h.HashKV.GetHash())
		p.field("HashRevision", h.HashKV.GetHashRevision())
		p.line()
	}
}

func (r *alarmResult) printFields(p *printer) {
	p.fieldsHeader(r.resp.GetHeader())
	for _, a := range r.resp.GetAlarms() {
		p.field("MemberID", a.GetMemberID())
		p.field("AlarmType", a.GetAlarm())
	}
}

func (r *authResult) printFields(p *printer) { p.fieldsHeader(r.resp.GetHeader()) }

func (r *roleGetResult) printFields(p *printer) {
	p.fieldsHeader(r.resp.GetHeader())
	for _, perm := range r.resp.GetPerm() {
		p.field("PermType", " "+perm.GetPermType().String())
		p.field("Key", quoted(perm.GetKey()))
		p.field("RangeEnd", quoted(perm.GetRangeEnd()))
	}
}

func (r *roleListResult) printFields(p *printer) {
	p.fieldsHeader(r.resp.GetHeader())
	line := `"Roles" :`
	for _, role := range r.resp.GetRoles() {
		line += fmt.Sprintf(" %q", role)
	}
	p.line(line)
}
