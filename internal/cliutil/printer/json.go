package printer

import (
	"encoding/json"
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// The json format of each result: the encoding/json encoding of the
// response message (its fields named by their protobuf names), or of a
// structure of the same shape as etcdctl prints.

// PrintJSON writes v as one line of JSON.
func (p *Printer) PrintJSON(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode JSON: %w", err)
	}
	_, err = fmt.Fprintln(p.w, string(data))
	return err
}

func (r *GetResult) JSONValue(*Printer) any { return r.Resp }
func (r *PutResult) JSONValue(*Printer) any { return r.Resp }
func (r *DelResult) JSONValue(*Printer) any { return r.Resp }

// txnJSON is the JSON shape of a transaction's response: each response of
// the transaction inside a "Response" object, under the name of its kind.
type txnJSON struct {
	Header    *pb.ResponseHeader `json:"header,omitempty"`
	Succeeded bool               `json:"succeeded,omitempty"`
	Responses []responseOpJSON   `json:"responses,omitempty"`
}

type responseOpJSON struct {
	Response struct {
		Range       *pb.RangeResponse       `json:"response_range,omitempty"`
		Put         *pb.PutResponse         `json:"response_put,omitempty"`
		DeleteRange *pb.DeleteRangeResponse `json:"response_delete_range,omitempty"`
		Txn         *txnJSON                `json:"response_txn,omitempty"`
	} `json:"Response"`
}

func newTxnJSON(resp *pb.TxnResponse) *txnJSON {
	out := &txnJSON{Header: resp.GetHeader(), Succeeded: resp.GetSucceeded()}
	for _, op := range resp.GetResponses() {
		var r responseOpJSON
		switch v := op.GetResponse().(type) {
		case *pb.ResponseOp_ResponseRange:
			r.Response.Range = v.ResponseRange
		case *pb.ResponseOp_ResponsePut:
			r.Response.Put = v.ResponsePut
		case *pb.ResponseOp_ResponseDeleteRange:
			r.Response.DeleteRange = v.ResponseDeleteRange
		case *pb.ResponseOp_ResponseTxn:
			r.Response.Txn = newTxnJSON(v.ResponseTxn)
		}
		out.Responses = append(out.Responses, r)
	}
	return out
}

func (r *TxnResult) JSONValue(*Printer) any { return newTxnJSON(r.Resp) }

// The lease responses print with their header's fields inlined, and their
// own fields under etcdctl's names.
type (
	leaseGrantJSON struct {
		*pb.ResponseHeader
		ID    int64
		TTL   int64
		Error string
	}
	leaseTimeToLiveJSON struct {
		*pb.ResponseHeader
		ID         int64    `json:"id"`
		TTL        int64    `json:"ttl"`
		GrantedTTL int64    `json:"granted-ttl"`
		Keys       [][]byte `json:"keys"`
	}
	leaseListJSON struct {
		*pb.ResponseHeader
		Leases []leaseStatusJSON `json:"leases"`
	}
	leaseStatusJSON struct {
		ID int64 `json:"id"`
	}
	leaseKeepAliveJSON struct {
		*pb.ResponseHeader
		ID  int64
		TTL int64
	}
)

func (r *LeaseGrantResult) JSONValue(*Printer) any {
	return &leaseGrantJSON{ResponseHeader: r.Resp.GetHeader(), ID: r.Resp.GetID(), TTL: r.Resp.GetTTL(), Error: r.Resp.GetError()}
}

func (r *LeaseRevokeResult) JSONValue(*Printer) any { return r.Resp }

func (r *LeaseTimeToLiveResult) JSONValue(*Printer) any {
	return &leaseTimeToLiveJSON{ResponseHeader: r.Resp.GetHeader(), ID: r.Resp.GetID(), TTL: r.Resp.GetTTL(),
		GrantedTTL: r.Resp.GetGrantedTTL(), Keys: r.Resp.GetKeys()}
}

func (r *LeaseListResult) JSONValue(*Printer) any {
	out := &leaseListJSON{ResponseHeader: r.Resp.GetHeader(), Leases: []leaseStatusJSON{}}
	for _, l := range r.Resp.GetLeases() {
		out.Leases = append(out.Leases, leaseStatusJSON{ID: l.GetID()})
	}
	return out
}

func (r *LeaseKeepAliveResult) JSONValue(*Printer) any {
	return &leaseKeepAliveJSON{ResponseHeader: r.Resp.GetHeader(), ID: r.Resp.GetID(), TTL: r.Resp.GetTTL()}
}

// watchJSON is the JSON shape of a watch response.
type watchJSON struct {
	Header          *pb.ResponseHeader
	Events          []*mvccpb.Event
	CompactRevision int64
	Canceled        bool
	Created         bool
	CancelReason    string
}

func (r *WatchResult) JSONValue(*Printer) any {
	return &watchJSON{Header: r.Resp.Header, Events: r.Resp.Events, CompactRevision: r.Resp.CompactRevision,
		Canceled: r.Resp.Canceled, CancelReason: r.Resp.CancelReason}
}

// With --hex, member responses print IDs as hexadecimal strings.
type (
	hexHeaderJSON struct {
		ClusterID string `json:"cluster_id"`
		MemberID  string `json:"member_id"`
		Revision  int64  `json:"revision,omitempty"`
		RaftTerm  uint64 `json:"raft_term,omitempty"`
	}
	hexMemberJSON struct {
		ID         string   `json:"ID"`
		Name       string   `json:"name,omitempty"`
		PeerURLs   []string `json:"peerURLs,omitempty"`
		ClientURLs []string `json:"clientURLs,omitempty"`
		IsLearner  bool     `json:"isLearner,omitempty"`
	}
	hexMembersJSON struct {
		Header  *hexHeaderJSON   `json:"header"`
		Members []*hexMemberJSON `json:"members"`
	}
	hexMemberAddJSON struct {
		Header  *hexHeaderJSON   `json:"header"`
		Member  *hexMemberJSON   `json:"member"`
		Members []*hexMemberJSON `json:"members"`
	}
)

func newHexHeaderJSON(h *pb.ResponseHeader) *hexHeaderJSON {
	if h == nil {
		return nil
	}
	return &hexHeaderJSON{ClusterID: fmt.Sprintf("%x", h.GetClusterId()), MemberID: fmt.Sprintf("%x", h.GetMemberId()),
		Revision: h.GetRevision(), RaftTerm: h.GetRaftTerm()}
}

func newHexMemberJSON(m *pb.Member) *hexMemberJSON {
	if m == nil {
		return nil
	}
	return &hexMemberJSON{ID: fmt.Sprintf("%x", m.GetID()), Name: m.GetName(), PeerURLs: m.GetPeerURLs(),
		ClientURLs: m.GetClientURLs(), IsLearner: m.GetIsLearner()}
}

func newHexMembersJSON(h *pb.ResponseHeader, members []*pb.Member) *hexMembersJSON {
	out := &hexMembersJSON{Header: newHexHeaderJSON(h), Members: make([]*hexMemberJSON, len(members))}
	for i, m := range members {
		out.Members[i] = newHexMemberJSON(m)
	}
	return out
}

func (r *MemberAddResult) JSONValue(p *Printer) any {
	if !p.hex {
		return r.Resp
	}
	members := newHexMembersJSON(r.Resp.GetHeader(), r.Resp.GetMembers())
	return &hexMemberAddJSON{Header: members.Header, Member: newHexMemberJSON(r.Resp.GetMember()), Members: members.Members}
}

func (r *MemberChangeResult) JSONValue(p *Printer) any {
	if !p.hex {
		return r.Resp
	}
	return newHexMembersJSON(r.Resp.GetHeader(), r.Resp.GetMembers())
}

func (r *MemberListResult) JSONValue(p *Printer) any {
	if !p.hex {
		return r.Resp
	}
	return newHexMembersJSON(r.Resp.GetHeader(), r.Resp.GetMembers())
}

func (r *EndpointHealthResult) JSONValue(*Printer) any { return r.Health }
func (r *EndpointStatusResult) JSONValue(*Printer) any { return r.Statuses }
func (r *EndpointHashKVResult) JSONValue(*Printer) any { return r.Hashes }

func (r *AlarmResult) JSONValue(*Printer) any      { return r.Resp }
func (r *MoveLeaderResult) JSONValue(*Printer) any { return r.Resp }
func (r *DowngradeResult) JSONValue(*Printer) any  { return r.Resp }

func (r *AuthResult) JSONValue(*Printer) any       { return r.Resp }
func (r *AuthStatusResult) JSONValue(*Printer) any { return r.Resp }
func (r *UserGetResult) JSONValue(*Printer) any    { return r.Resp }
func (r *UserListResult) JSONValue(*Printer) any   { return r.Resp }
func (r *RoleGetResult) JSONValue(*Printer) any    { return r.Resp }
func (r *RoleListResult) JSONValue(*Printer) any   { return r.Resp }
