package printer

import (
	"fmt"
	"io"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
)

// The results of the client commands: what each prints, the response of
// the cluster and what else its formats need. The files of the formats
// (simple.go, json.go, ...) render them.

// Message is a result that prints the same text in every format.
type Message string

// GetResult is the outcome of get.
type GetResult struct {
	Resp      *pb.RangeResponse
	ValueOnly bool // --print-value-only
}

// PutResult, DelResult and TxnResult are the outcomes of put, del and txn.
type (
	PutResult struct{ Resp *pb.PutResponse }
	DelResult struct{ Resp *pb.DeleteRangeResponse }
	TxnResult struct{ Resp *pb.TxnResponse }
)

// opResult wraps one response of a transaction as the result of the
// command that would have made it alone, to print it the same way.
func opResult(op *pb.ResponseOp) any {
	switch r := op.GetResponse().(type) {
	case *pb.ResponseOp_ResponseRange:
		return &GetResult{Resp: r.ResponseRange}
	case *pb.ResponseOp_ResponsePut:
		return &PutResult{Resp: r.ResponsePut}
	case *pb.ResponseOp_ResponseDeleteRange:
		return &DelResult{Resp: r.ResponseDeleteRange}
	case *pb.ResponseOp_ResponseTxn:
		return &TxnResult{Resp: r.ResponseTxn}
	}
	return nil
}

// WatchResult is one response of a watch.
type WatchResult struct{ Resp *pb.WatchResponse }

// The outcomes of the lease subcommands.
type (
	LeaseGrantResult      struct{ Resp *pb.LeaseGrantResponse }
	LeaseKeepAliveResult  struct{ Resp *pb.LeaseKeepAliveResponse }
	LeaseListResult       struct{ Resp *pb.LeaseLeasesResponse }
	LeaseTimeToLiveResult struct {
		Resp *pb.LeaseTimeToLiveResponse
		Keys bool // --keys: the attached keys were asked for
	}
	LeaseRevokeResult struct {
		ID   int64
		Resp *pb.LeaseRevokeResponse
	}
)

// The outcomes of the member subcommands.
type (
	MemberAddResult struct {
		Resp *pb.MemberAddResponse
		Name string // the name the new member is to start with
	}
	// MemberChangeResult is the outcome of member remove, update or promote.
	MemberChangeResult struct {
		ID   uint64
		Verb string // "removed from", "updated in", "promoted in"
		Resp MemberChangeResponse
	}
	// MemberChangeResponse is the response of member remove, update or
	// promote: the members after the change.
	MemberChangeResponse interface {
		proto.Message
		GetHeader() *pb.ResponseHeader
		GetMembers() []*pb.Member
	}
	MemberListResult struct{ Resp *pb.MemberListResponse }
)

// The endpoint commands' answers, one per endpoint.
type (
	// EndpointHealth is the health of one endpoint, in etcdctl's JSON shape.
	EndpointHealth struct {
		Endpoint string `json:"endpoint"`
		Health   bool   `json:"health"`
		Took     string `json:"took"`
		Error    string `json:"error,omitempty"`
	}
	// EndpointStatus is the status of one endpoint, in etcdctl's JSON shape.
	EndpointStatus struct {
		Endpoint string             `json:"Endpoint"`
		Status   *pb.StatusResponse `json:"Status"`
	}
	// EndpointHashKV is the KV hash of one endpoint, in etcdctl's JSON shape.
	EndpointHashKV struct {
		Endpoint string             `json:"Endpoint"`
		HashKV   *pb.HashKVResponse `json:"HashKV"`
	}
)

// The outcomes of endpoint health, status and hashkv.
type (
	EndpointHealthResult struct {
		Health []EndpointHealth
		Stderr io.Writer // where the simple format reports unhealthy endpoints
	}
	EndpointStatusResult struct{ Statuses []*EndpointStatus }
	EndpointHashKVResult struct{ Hashes []*EndpointHashKV }
)

// statusRow is the row of one endpoint status in the simple and table formats.
func statusRow(s *EndpointStatus) []string {
	st := s.Status
	var notInUse string
	if st.GetDbSize() > 0 {
		notInUse = fmt.Sprintf("%d%%", 100-st.GetDbSizeInUse()*100/st.GetDbSize())
	}
	return []string{
		s.Endpoint,
		fmt.Sprintf("%x", st.GetHeader().GetMemberId()),
		st.GetVersion(),
		st.GetStorageVersion(),
		HumanBytes(st.GetDbSize()),
		HumanBytes(st.GetDbSizeInUse()),
		notInUse,
		HumanBytes(st.GetDbSizeQuota()),
		fmt.Sprint(st.GetLeader() == st.GetHeader().GetMemberId()),
		fmt.Sprint(st.GetIsLearner()),
		fmt.Sprint(st.GetRaftTerm()),
		fmt.Sprint(st.GetRaftIndex()),
		fmt.Sprint(st.GetRaftAppliedIndex()),
		strings.Join(st.GetErrors(), ", "),
		st.GetDowngradeInfo().GetTargetVersion(),
		fmt.Sprint(st.GetDowngradeInfo().GetEnabled()),
	}
}

// The outcomes of alarm list/disarm, move-leader and downgrade.
type (
	AlarmResult      struct{ Resp *pb.AlarmResponse }
	MoveLeaderResult struct {
		From, To uint64
		Resp     *pb.MoveLeaderResponse
	}
	// DowngradeResult is the answer to a downgrade subcommand, named by
	// action.
	DowngradeResult struct {
		Action string
		Resp   *pb.DowngradeResponse
	}
)

// headerResponse is a response with a header.
type headerResponse interface {
	proto.Message
	GetHeader() *pb.ResponseHeader
}

// The outcomes of the auth, user and role subcommands.
type (
	// AuthResult is the outcome of a change to users or roles: a sentence
	// in the simple format, the response otherwise.
	AuthResult struct {
		Text string
		Resp headerResponse
	}
	AuthStatusResult struct{ Resp *pb.AuthStatusResponse }
	UserGetResult    struct {
		Name string
		Resp *pb.AuthUserGetResponse
	}
	UserListResult struct{ Resp *pb.AuthUserListResponse }
	RoleGetResult  struct {
		Name string
		Resp *pb.AuthRoleGetResponse
	}
	RoleListResult struct{ Resp *pb.AuthRoleListResponse }
)
