package api

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"go.etcd.io/etcd/api/v3/etcdserverpb/gw"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cairnkv/cairn/internal/api/electionpb"
	"github.com/cairnkv/cairn/internal/api/lockpb"
)

// gateway serves the JSON API (POST /v3/kv/range, /v3/watch, ...) with the
// grpc-gateway handlers that etcd's API module ships; they call this
// member's gRPC services over in-process connections, so that the gateway
// needs neither a port of its own nor the member's TLS.
type gateway struct {
	mux    atomic.Pointer[runtime.ServeMux]
	cancel context.CancelFunc
}

// start registers the handlers; dial opens a connection to the gRPC server.
func (g *gateway) start(dial func(context.Context, string) (net.Conn, error)) error {
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	mux := runtime.NewServeMux(runtime.WithMarshalerOption(runtime.MIMEWildcard, &runtime.JSONPb{
		MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true},
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: true},
	}))
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(dial)}
	for _, register := range []func(context.Context, *runtime.ServeMux, string, []grpc.DialOption) error{
		gw.RegisterKVHandlerFromEndpoint, gw.RegisterWatchHandlerFromEndpoint, gw.RegisterLeaseHandlerFromEndpoint,
		gw.RegisterClusterHandlerFromEndpoint, gw.RegisterMaintenanceHandlerFromEndpoint, gw.RegisterAuthHandlerFromEndpoint,
		electionpb.RegisterElectionHandlerFromEndpoint, lockpb.RegisterLockHandlerFromEndpoint,
	} {
		if err := register(ctx, mux, "passthrough:///in-process", opts); err != nil {
			cancel()
			return err
		}
	}
	g.mux.Store(mux)
	return nil
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mux := g.mux.Load()
	if mux == nil {
		http.Error(w, "gateway not ready", http.StatusServiceUnavailable)
		return
	}
	mux.ServeHTTP(w, r)
}

func (g *gateway) stop() {
	if g.cancel != nil {
		g.cancel()
	}
}
