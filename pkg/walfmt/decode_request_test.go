package walfmt

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func TestDecodeEntryRequest(t *testing.T) {
	put, _ := proto.Marshal(&pb.InternalRaftRequest{Header: &pb.RequestHeader{ID: 7}, Put: &pb.PutRequest{Key: []byte("k")}})
	cc, _ := proto.Marshal(&raftpb.ConfChange{Type: raftpb.ConfChangeType_ConfChangeRemoveNode.Enum(), NodeId: proto.Uint64(3)})
	cc2, _ := proto.Marshal(&raftpb.ConfChangeV2{Changes: []*raftpb.ConfChangeSingle{{NodeId: proto.Uint64(4)}}})
	normal, conf, conf2 := raftpb.EntryType_EntryNormal, raftpb.EntryType_EntryConfChange, raftpb.EntryType_EntryConfChangeV2

	r, err := DecodeEntryRequest(&raftpb.Entry{Type: &normal, Data: put})
	if err != nil || RequestKind(r.Request) != "put" || r.Request.GetHeader().GetID() != 7 {
		t.Errorf("put: %v %v", r, err)
	}
	if r, err := DecodeEntryRequest(&raftpb.Entry{Type: &normal}); err != nil || r.Request != nil {
		t.Errorf("empty entry: %v %v", r, err)
	}
	if r, err := DecodeEntryRequest(&raftpb.Entry{Type: &conf, Data: cc}); err != nil || r.ConfChange.GetNodeId() != 3 {
		t.Errorf("conf change: %v %v", r, err)
	}
	if r, err := DecodeEntryRequest(&raftpb.Entry{Type: &conf2, Data: cc2}); err != nil || r.ConfChangeV2.GetChanges()[0].GetNodeId() != 4 {
		t.Errorf("conf change v2: %v %v", r, err)
	}
	if _, err := DecodeEntryRequest(&raftpb.Entry{Type: &normal, Data: []byte{0xff}}); err == nil {
		t.Error("garbage decoded")
	}
	bad := raftpb.EntryType(9)
	if _, err := DecodeEntryRequest(&raftpb.Entry{Type: &bad}); err == nil {
		t.Error("unknown entry type decoded")
	}
	if k := RequestKind(&pb.InternalRaftRequest{Header: &pb.RequestHeader{ID: 1}}); k != "" {
		t.Errorf("a request with only a header has kind %q", k)
	}
	if k := RequestKind(&pb.InternalRaftRequest{AuthUserAdd: &pb.AuthUserAddRequest{Name: "u"}}); k != "auth_user_add" {
		t.Errorf("kind %q", k)
	}
}

// FuzzDecodeEntryRequest decodes arbitrary entry data of every type: it
// must return a value or an error, never panic.
func FuzzDecodeEntryRequest(f *testing.F) {
	put, _ := proto.Marshal(&pb.InternalRaftRequest{Header: &pb.RequestHeader{ID: 7}, Txn: &pb.TxnRequest{}})
	f.Add(int32(0), put)
	f.Add(int32(1), []byte{0x10, 0x00, 0x18, 0x01})
	f.Add(int32(2), []byte{})
	f.Fuzz(func(t *testing.T, typ int32, data []byte) {
		et := raftpb.EntryType(typ)
		r, err := DecodeEntryRequest(&raftpb.Entry{Type: &et, Data: data})
		if err == nil && r.Request != nil {
			RequestKind(r.Request)
		}
	})
}
