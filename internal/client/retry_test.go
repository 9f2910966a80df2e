package client

import (
	"errors"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestIsRetryable(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "connection refused")
	readTxn := &pb.TxnRequest{Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{}}}}}
	writeTxn := &pb.TxnRequest{Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{}}}}}
	tests := []struct {
		name   string
		method string
		req    any
		err    error
		sent   bool
		want   bool
	}{
		{"read, member unavailable", "/etcdserverpb.KV/Range", &pb.RangeRequest{}, unavailable, true, true},
		{"write never sent", "/etcdserverpb.KV/Put", &pb.PutRequest{}, unavailable, false, true},
		{"write sent, outcome unknown", "/etcdserverpb.KV/Put", &pb.PutRequest{}, unavailable, true, false},
		{"write timed out on the server", "/etcdserverpb.KV/Put", &pb.PutRequest{}, rpctypes.ErrGRPCTimeout, true, false},
		{"read-only txn", "/etcdserverpb.KV/Txn", readTxn, unavailable, true, true},
		{"txn with a put", "/etcdserverpb.KV/Txn", writeTxn, unavailable, true, false},
		{"alarm list", "/etcdserverpb.Maintenance/Alarm", &pb.AlarmRequest{Action: pb.AlarmRequest_GET}, unavailable, true, true},
		{"alarm disarm", "/etcdserverpb.Maintenance/Alarm", &pb.AlarmRequest{Action: pb.AlarmRequest_DEACTIVATE}, unavailable, true, false},
		{"learner refuses a write", "/etcdserverpb.KV/Put", &pb.PutRequest{}, rpctypes.ErrGRPCNotSupportedForLearner, true, true},
		{"server error on a read", "/etcdserverpb.KV/Range", &pb.RangeRequest{}, rpctypes.ErrGRPCCompacted, true, false},
		{"converted etcd error", "/etcdserverpb.KV/Range", &pb.RangeRequest{}, rpctypes.ErrNoLeader, true, true},
		{"not a gRPC error", "/etcdserverpb.KV/Range", &pb.RangeRequest{}, errors.New("boom"), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isRetryable(tt.method, tt.req, tt.err, tt.sent); got != tt.want {
				t.Errorf("isRetryable = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseEndpoint(t *testing.T) {
	tests := []struct {
		in       string
		target   string
		secure   bool
		explicit bool
	}{
		{"127.0.0.1:2379", "passthrough:///127.0.0.1:2379", false, false},
		{"http://10.0.0.1:2379", "passthrough:///10.0.0.1:2379", false, true},
		{"https://example.com:2379", "passthrough:///example.com:2379", true, true},
		{"unix://localhost:1234", "unix:localhost:1234", false, true},
		{"unixs:///tmp/etcd.sock", "unix:/tmp/etcd.sock", true, true},
	}
	for _, tt := range tests {
		target, secure, explicit, err := parseEndpoint(tt.in)
		if err != nil || target != tt.target || secure != tt.secure || explicit != tt.explicit {
			t.Errorf("parseEndpoint(%q) = %q, %v, %v, %v; want %q, %v, %v", tt.in, target, secure, explicit, err, tt.target, tt.secure, tt.explicit)
		}
	}
	if _, _, _, err := parseEndpoint("ftp://x"); err == nil {
		t.Error("parseEndpoint accepted an ftp:// endpoint")
	}
}

func TestRetryDelayGrowsAndIsBounded(t *testing.T) {
	for attempt := range 20 {
		d := retryDelay(attempt)
		if d <= 0 || d > retryMaxDelay {
			t.Fatalf("retryDelay(%d) = %v, want in (0, %v]", attempt, d, retryMaxDelay)
		}
	}
	if retryDelay(0) > retryBaseDelay {
		t.Fatalf("first delay %v exceeds the base %v", retryDelay(0), retryBaseDelay)
	}
}
