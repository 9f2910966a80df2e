package walfmt

import (
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// EntryRequest is the decoded data of a raft entry as etcd 3.7 writes it:
// exactly one field is set, except for a normal entry without data (the
// empty entry a new leader appends), which has none.
type EntryRequest struct {
	// Request is the data of a normal entry.
	Request *pb.InternalRaftRequest
	// ConfChange is the data of a conf change entry; its context is the JSON
	// of the member added or updated.
	ConfChange *raftpb.ConfChange
	// ConfChangeV2 is the data of a conf change v2 entry.
	ConfChangeV2 *raftpb.ConfChangeV2
}

// DecodeEntryRequest decodes the data of e according to its type.
func DecodeEntryRequest(e *raftpb.Entry) (EntryRequest, error) {
	var r EntryRequest
	data := e.GetData()
	switch t := e.GetType(); t {
	case raftpb.EntryType_EntryNormal:
		if len(data) == 0 {
			return r, nil
		}
		r.Request = new(pb.InternalRaftRequest)
		if err := proto.Unmarshal(data, r.Request); err != nil {
			return EntryRequest{}, fmt.Errorf("entry %d: decode InternalRaftRequest: %w", e.GetIndex(), err)
		}
	case raftpb.EntryType_EntryConfChange:
		r.ConfChange = new(raftpb.ConfChange)
		if err := proto.Unmarshal(data, r.ConfChange); err != nil {
			return EntryRequest{}, fmt.Errorf("entry %d: decode ConfChange: %w", e.GetIndex(), err)
		}
	case raftpb.EntryType_EntryConfChangeV2:
		r.ConfChangeV2 = new(raftpb.ConfChangeV2)
		if err := proto.Unmarshal(data, r.ConfChangeV2); err != nil {
			return EntryRequest{}, fmt.Errorf("entry %d: decode ConfChangeV2: %w", e.GetIndex(), err)
		}
	default:
		return EntryRequest{}, fmt.Errorf("entry %d: unknown entry type %d", e.GetIndex(), t)
	}
	return r, nil
}

// RequestKind returns the protobuf name of the request an
// InternalRaftRequest carries ("put", "delete_range", "txn", "lease_grant",
// "auth_user_add", "cluster_version_set", ...), or "" when it carries none.
// The header and the deprecated top-level ID are not requests.
func RequestKind(r *pb.InternalRaftRequest) string {
	var kind string
	r.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		switch fd.Name() {
		case "header", "ID":
			return true
		}
		kind = string(fd.Name())
		return false
	})
	return kind
}
