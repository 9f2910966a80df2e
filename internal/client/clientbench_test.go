package client_test

import (
	"context"
	"net"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/cairnkv/cairn/internal/client"
)

// stubKV answers every put at once, so that a benchmark of a client
// measures the client.
type stubKV struct {
	pb.UnimplementedKVServer
}

func (stubKV) Put(context.Context, *pb.PutRequest) (*pb.PutResponse, error) {
	return &pb.PutResponse{Header: &pb.ResponseHeader{Revision: 1}}, nil
}

func startStub(b *testing.B) string {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := grpc.NewServer()
	pb.RegisterKVServer(s, stubKV{})
	go s.Serve(l)
	b.Cleanup(s.Stop)
	return l.Addr().String()
}

// BenchmarkPutClient compares the cost of a put in cairn's client and in
// etcd's, against a server that does nothing.
func BenchmarkPutClient(b *testing.B) {
	value := make([]byte, 256)
	key := []byte("benchmark-key")
	b.Run("cairn", func(b *testing.B) {
		c, err := client.New(client.Config{Endpoints: []string{startStub(b)}, HealthProbeInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		b.ReportAllocs()
		b.SetParallelism(10)
		b.RunParallel(func(p *testing.PB) {
			for p.Next() {
				if _, err := c.KV.Put(context.Background(), &pb.PutRequest{Key: key, Value: value}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("etcd", func(b *testing.B) {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{startStub(b)}})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		b.ReportAllocs()
		b.SetParallelism(10)
		sk, sv := string(key), string(value)
		b.RunParallel(func(p *testing.PB) {
			for p.Next() {
				if _, err := c.Put(context.Background(), sk, sv); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
