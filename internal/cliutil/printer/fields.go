package printer

import (
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// The fields format of each result: one `"Name" : value` line per field.

// Field writes one line of the fields format.
func (p *Printer) Field(name string, value any) {
	fmt.Fprintf(p.w, "%q : %v\n", name, value)
}

// quoted renders a byte string as a Go-quoted string.
func quoted(b []byte) string {
	return fmt.Sprintf("%q", b)
}

// fieldsHeader writes a response header. The revision is left out where it
// is zero: responses that are not about keys do not carry one.
func (p *Printer) fieldsHeader(h *pb.ResponseHeader) {
	p.Field("ClusterID", p.id(h.GetClusterId()))
	p.Field("MemberID", p.id(h.GetMemberId()))
	if h.GetRevision() > 0 {
		p.Field("Revision", h.GetRevision())
	}
	p.Field("RaftTerm", h.GetRaftTerm())
}

// fieldsKV writes a key-value; prefix ("" or "Prev") starts each name.
func (p *Printer) fieldsKV(prefix string, kv *mvccpb.KeyValue) {
	p.Field(prefix+"Key", quoted(kv.GetKey()))
	p.Field(prefix+"CreateRevision", kv.GetCreateRevision())
	p.Field(prefix+"ModRevision", kv.GetModRevision())
	p.Field(prefix+"Version", kv.GetVersion())
	p.Field(prefix+"Value", quoted(kv.GetValue()))
	p.Field(prefix+"Lease", p.leaseID(kv.GetLease()))
}

// leaseID renders a lease ID: decimal, or 16 hexadecimal digits with --hex.
func (p *Printer) leaseID(id int64) string {
	if p.hex {
		return fmt.Sprintf("%016x", id)
	}
	return fmt.Sprint(id)
}

func (r *GetResult) PrintFields(p *Printer) {
	p.fieldsHeader(r.Resp.GetHeader())
	for _, kv := range r.Resp.GetKvs() {
		p.fieldsKV("", kv)
	}
	p.Field("More", r.Resp.GetMore())
	p.Field("Count", r.Resp.GetCount())
}

func (r *PutResult) PrintFields(p *Printer) {
	p.fieldsHeader(r.Resp.GetHeader())
	if prev := r.Resp.GetPrevKv(); prev != nil {
		p.fieldsKV("Prev", prev)
	}
}

func (r *DelResult) PrintFields(p *Printer) {
	p.fieldsHeader(r.Resp.GetHeader())
	p.Field("Deleted", r.Resp.GetDeleted())
	for _, kv := range r.Resp.GetPrevKvs() {
		p.fieldsKV("Prev", kv)
	}
}

func (r *TxnResult) PrintFields(p *Printer) {
	p.fieldsHeader(r.Resp.GetHeader())
	p.Field("Succeeded", r.Resp.GetSucceeded())
	for _, op := range r.Resp.GetResponses() {
		if res, ok := opResult(op).(fieldsPrintable); ok {
			res.PrintFields(p)
		}
	}
}

func (r *LeaseGrantResult) PrintFields(p *Printer) {
	p.fieldsHeader(r.Resp.GetHeader())
	p.Field("ID", p.leaseID(r.Resp.GetID()))
	p.Field("TTL", r.Resp.GetTTL())
}

func (r *LeaseRevokeResult) PrintFields(p *Printer) {
	p.fieldsHeader(r.Resp.GetHeader())
}

func (r *LeaseTimeToLiveResult) PrintFields(p *Printer) {
	p.fieldsHeader(r.Resp.GetHeader())
	p.Field("ID", p.leaseID(r.Resp.GetID()))
	p.Field("TTL", r.Resp.GetTTL())
	p.Field("GrantedTTL", r.Resp.GetGrantedTTL())
	for _, k := range r.Resp.GetKeys() {
		p.Field("Key", quoted(k))
	}
}

func (r *LeaseListResult) PrintFields(p *Printer) {
	p.fieldsHeader(r.Resp.GetHeader())
	for _, l := range r.Resp.GetLeases() {
		p.Field("ID", p.leaseID(l.GetID()))
	}
}

func (r *LeaseKeepAliveResult) PrintFields(p *Printer) {
	p.fieldsHeader(r.Resp.GetHeader())
	p.Field("ID", p.leaseID(r.Resp.GetID()))
	p.Field("TTL", r.Resp.GetTTL())
}

func (r *WatchResult) PrintFields(p *Printer) {
	p.fieldsHeader(r.Resp.Header)
	for _, ev := range r.Resp.Events {
		p.Field("Type", ev.GetType())
		if prev := ev.GetPrevKv(); prev != nil {
			p.fieldsKV("Prev", prev)
		}
		p.fieldsKV("", ev.GetKv())
	}
}

// fieldsMembers writes members, each followed by an empty line.
func (p *Printer) fieldsMembers(members []*pb.Member) {
	for _, m := range members {
		p.Field("ID", p.id(m.GetID()))
		p.Field("Name", quoted([]byte(m.GetName())))
		for _, u := range m.GetPeerURLs() {
			p.Field("PeerURL", quoted([]byte(u)))
		}
		for _, u := range m.GetClientURLs() {
			p.Field("ClientURL", quoted([]byte(u)))
		}
		p.Field("IsLearner", m.GetIsLearner())
		p.Line()
	}
}

func (r *MemberListResult) PrintFields(p *Printer) {
	p.fieldsHeader(r.Resp.GetHeader())
	p.fieldsMembers(r.Resp.GetMembers())
}

func (r *EndpointHealthResult) PrintFields(p *Printer) {
	for _, h := range r.Health {
		p.Field("Endpoint", quoted([]byte(h.Endpoint)))
		p.Field("Health", h.Health)
		p.Field("Took", h.Took)
		p.Field("Error", h.Error)
		p.Line()
	}
}

func (r *EndpointStatusResult) PrintFields(p *Printer) {
	for _, s := range r.Statuses {
		st := s.Status
		p.fieldsHeader(st.GetHeader())
		p.Field("Version", quoted([]byte(st.GetVersion())))
		p.Field("StorageVersion", quoted([]byte(st.GetStorageVersion())))
		p.Field("DBSize", st.GetDbSize())
		p.Field("DBSizeInUse", st.GetDbSizeInUse())
		p.Field("DBSizeQuota", st.GetDbSizeQuota())
		p.Field("Leader", st.GetLeader())
		p.Field("IsLearner", st.GetIsLearner())
		p.Field("RaftIndex", st.GetRaftIndex())
		p.Field("RaftAppliedIndex", st.GetRaftAppliedIndex())
		p.Field("Errors", st.GetErrors())
		p.Field("Endpoint", quoted([]byte(s.Endpoint)))
		p.Field("DowngradeTargetVersion", quoted([]byte(st.GetDowngradeInfo().GetTargetVersion())))
		p.Field("DowngradeEnabled", st.GetDowngradeInfo().GetEnabled())
		p.Line()
	}
}

func (r *EndpointHashKVResult) PrintFields(p *Printer) {
	for _, h := range r.Hashes {
		p.fieldsHeader(h.HashKV.GetHeader())
		p.Field("Endpoint", quoted([]byte(h.Endpoint)))
		p.Field("Hash", h.HashKV.GetHash())
		p.Field("HashRevision", h.HashKV.GetHashRevision())
		p.Line()
	}
}

func (r *AlarmResult) PrintFields(p *Printer) {
	p.fieldsHeader(r.Resp.GetHeader())
	for _, a := range r.Resp.GetAlarms() {
		p.Field("MemberID", a.GetMemberID())
		p.Field("AlarmType", a.GetAlarm())
	}
}

func (r *AuthResult) PrintFields(p *Printer) { p.fieldsHeader(r.Resp.GetHeader()) }

func (r *RoleGetResult) PrintFields(p *Printer) {
	p.fieldsHeader(r.Resp.GetHeader())
	for _, perm := range r.Resp.GetPerm() {
		p.Field("PermType", " "+perm.GetPermType().String())
		p.Field("Key", quoted(perm.GetKey()))
		p.Field("RangeEnd", quoted(perm.GetRangeEnd()))
	}
}

func (r *RoleListResult) PrintFields(p *Printer) {
	p.fieldsHeader(r.Resp.GetHeader())
	line := `"Roles" :`
	for _, role := range r.Resp.GetRoles() {
		line += fmt.Sprintf(" %q", role)
	}
	p.Line(line)
}
