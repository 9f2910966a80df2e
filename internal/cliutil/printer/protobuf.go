package printer

import (
	"fmt"

	"google.golang.org/protobuf/proto"
)

// The protobuf format of each result: the response message, marshalled.

// printProtobuf writes the marshalled message of r.
func (p *Printer) printProtobuf(r protobufPrintable) error {
	data, err := proto.Marshal(r.protoMessage())
	if err != nil {
		return fmt.Errorf("marshal protobuf: %w", err)
	}
	_, err = p.w.Write(data)
	return err
}

func (r *GetResult) protoMessage() proto.Message { return r.Resp }
func (r *PutResult) protoMessage() proto.Message { return r.Resp }
func (r *DelResult) protoMessage() proto.Message { return r.Resp }
func (r *TxnResult) protoMessage() proto.Message { return r.Resp }

// Lease grant and keep-alive print only their header, as etcdctl does.
func (r *LeaseGrantResult) protoMessage() proto.Message     { return r.Resp.GetHeader() }
func (r *LeaseKeepAliveResult) protoMessage() proto.Message { return r.Resp.GetHeader() }

func (r *WatchResult) protoMessage() proto.Message        { return r.Resp }
func (r *MemberAddResult) protoMessage() proto.Message    { return r.Resp }
func (r *MemberChangeResult) protoMessage() proto.Message { return r.Resp }
func (r *MemberListResult) protoMessage() proto.Message   { return r.Resp }

func (r *LeaseListResult) protoMessage() proto.Message       { return r.Resp.GetHeader() }
func (r *LeaseTimeToLiveResult) protoMessage() proto.Message { return r.Resp.GetHeader() }
func (r *AlarmResult) protoMessage() proto.Message           { return r.Resp }
func (r *MoveLeaderResult) protoMessage() proto.Message      { return r.Resp }
func (r *DowngradeResult) protoMessage() proto.Message       { return r.Resp }

func (r *AuthResult) protoMessage() proto.Message       { return r.Resp }
func (r *AuthStatusResult) protoMessage() proto.Message { return r.Resp }
func (r *UserGetResult) protoMessage() proto.Message    { return r.Resp }
func (r *UserListResult) protoMessage() proto.Message   { return r.Resp }
func (r *RoleGetResult) protoMessage() proto.Message    { return r.Resp }
func (r *RoleListResult) protoMessage() proto.Message   { return r.Resp }
