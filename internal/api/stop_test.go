package api

import (
	"context"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestStopEndsStreams: a member that stops ends its watch streams with
// etcd's "server stopped", an Unavailable status on which clients go on
// with another member, and does not wait for them to end on their own.
func TestStopEndsStreams(t *testing.T) {
	m := startInProcess(t, 1, nil)[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := pb.NewWatchClient(m.dial(t)).Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: &pb.WatchCreateRequest{Key: []byte("k")}}}); err != nil {
		t.Fatal(err)
	}
	if resp, err := w.Recv(); err != nil || !resp.Created {
		t.Fatalf("watch creation: %v, %v", resp, err)
	}
	start := time.Now()
	stopped := make(chan struct{})
	go func() { m.stop(); close(stopped) }()
	_, err = w.Recv()
	if st := status.Convert(err); st.Code() != codes.Unavailable || st.Message() != "etcdserver: server stopped" {
		t.Errorf("the watch stream ended with %v, want Unavailable, etcdserver: server stopped", err)
	}
	select {
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("Stop did not return")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Stop took %v with a watch stream open; the stream should not hold it", took)
	}
}
