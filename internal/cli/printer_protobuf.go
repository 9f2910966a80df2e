package cli

import (
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
)

// The protobuf format of each result: the response message, marshalled.

// printProtobuf writes the marshalled message of r.
func (p *printer) printProtobuf(r protobufPrintable) error {
	data, err := proto.Marshal(r.protoMessage())
	if err != nil {
		return fmt.Errorf("marshal protobuf: %w", err)
	}
	_, err = p.w.Write(data)
	return err
}

func (r *getResult) protoMessage() proto.Message { return r.resp }
func (r *putResult) protoMessage() proto.Message { return r.resp }
func (r *delResult) protoMessage() proto.Message { return r.resp }
func (r *txnResult) protoMessage() proto.Message { return r.resp }

// Lease grant and keep-alive print only their header, as etcdctl does.
func (r *leaseGrantResult) protoMessage() proto.Message     { return r.resp.GetHeader() }
func (r *leaseKeepAliveResult) protoMessage() proto.Message { return r.resp.GetHeader() }

func (r *watchResult) protoMessage() proto.Message {
	return &pb.WatchResponse{Header: r.resp.Header, Events: r.resp.Events, CompactRevision: r.resp.CompactRevision,
		Canceled: r.resp.Canceled, CancelReason: r.resp.CancelReason}
}
func (r *memberAddResult) protoMessage() proto.Message    { return r.resp }
func (r *memberChangeResult) protoMessage() proto.Message { return r.resp }
func (r *memberListResult) protoMessage() proto.Message   { return r.resp }

func (r *leaseListResult) protoMessage() proto.Message       { return r.resp.GetHeader() }
func (r *leaseTimeToLiveResult) protoMessage() proto.Message { return r.resp.GetHeader() }
func (r *alarmResult) protoMessage() proto.Message           { return r.resp }
func (r *moveLeaderResult) protoMessage() proto.Message      { return r.resp }
func (r *downgradeResult) protoMessage() proto.Message       { return r.resp }

func (r *authResult) protoMessage() proto.Message       { return r.resp }
func (r *authStatusResult) protoMessage() proto.Message { return r.resp }
func (r *userGetResult) protoMessage() proto.Message    { return r.resp }
func (r *userListResult) protoMessage() proto.Message   { return r.resp }
func (r *roleGetResult) protoMessage() proto.Message    { return r.resp }
func (r *roleListResult) protoMessage() proto.Message   { return r.resp }
