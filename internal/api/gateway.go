package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
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
// member's gRPC services over one in-process connection, so that the
// gateway needs neither a port of its own nor the member's TLS. One, as
// etcd's gateway has: the gRPC server's limit of concurrent streams per
// connection (etcd's --max-concurrent-streams) bounds the gateway's calls
// together.
type gateway struct {
	mux  atomic.Pointer[runtime.ServeMux]
	conn *grpc.ClientConn
}

// start registers the handlers; dial opens a connection to the gRPC server.
func (g *gateway) start(dial func(context.Context, string) (net.Conn, error)) error {
	conn, err := grpc.NewClient("passthrough:///in-process", grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(dial))
	if err != nil {
		return err
	}
	g.conn = conn
	mux := runtime.NewServeMux(runtime.WithMarshalerOption(runtime.MIMEWildcard, &compactJSON{runtime.JSONPb{
		MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true},
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: true},
	}}))
	for _, register := range []func(context.Context, *runtime.ServeMux, *grpc.ClientConn) error{
		gw.RegisterKVHandler, gw.RegisterWatchHandler, gw.RegisterLeaseHandler,
		gw.RegisterClusterHandler, gw.RegisterMaintenanceHandler, gw.RegisterAuthHandler,
		electionpb.RegisterElectionHandler, lockpb.RegisterLockHandler,
	} {
		if err := register(context.Background(), mux, conn); err != nil {
			g.stop()
			return err
		}
	}
	g.mux.Store(mux)
	return nil
}

// ServeHTTP serves the paths under /v3/, and under /v3beta/ the same, as
// etcd does for the clients of etcd 3.3 (etcd3gw, patroni) that ask there.
func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mux := g.mux.Load()
	if mux == nil {
		http.Error(w, "gateway not ready", http.StatusServiceUnavailable)
		return
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/v3beta/"); ok {
		r = r.Clone(r.Context())
		r.URL.Path, r.URL.RawPath = "/v3/"+rest, ""
	}
	mux.ServeHTTP(w, r)
}

func (g *gateway) stop() {
	if g.conn != nil {
		g.conn.Close()
	}
}

// compactJSON is the gateway's JSON without the spaces protojson adds at
// random (it varies them from one build to the next, so that no one relies
// on its layout): the same bytes from every build, as a script that
// compares a curl's output expects.
type compactJSON struct{ runtime.JSONPb }

func (c *compactJSON) Marshal(v any) ([]byte, error) {
	b, err := c.JSONPb.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func (c *compactJSON) NewEncoder(w io.Writer) runtime.Encoder {
	return runtime.EncoderFunc(func(v any) error {
		b, err := c.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		_, err = w.Write(c.Delimiter())
		return err
	})
}
