package api

import (
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/cairnkv/cairn/internal/featuregate"
)

// The standard gRPC health service (grpc.health.v1.Health), served on the
// client URLs as etcd 3.7.3 serves it (observed side by side, see
// grpchealth_test.go):
//   - the server as a whole (service "") is SERVING once the member serves
//     clients, and stays so without a leader and with a NOSPACE or CORRUPT
//     alarm raised: /health and /readyz are the checks of those;
//   - any other service name is unknown: Check answers NotFound, Watch
//     SERVICE_UNKNOWN;
//   - with the feature gate StopGRPCServiceOnDefrag, it is NOT_SERVING while
//     a defragmentation runs, so that clients that watch it go elsewhere;
//   - a stopping member says nothing more: its connections end (etcd's with
//     a GOAWAY), and a Watch ends with them.

// newHealth registers the health service on the gRPC server.
func (a *API) newHealth() {
	a.health = health.NewServer() // "" SERVING
	healthpb.RegisterHealthServer(a.grpc, a.health)
	a.log.Info("grpc service status changed", "service", "", "status", healthpb.HealthCheckResponse_SERVING.String())
}

// setDefragging records that a defragmentation runs (or ended), and with
// StopGRPCServiceOnDefrag says so in the health service.
func (a *API) setDefragging(on bool) {
	a.defragging.Store(on)
	if !a.s.Config().Features.Enabled(featuregate.StopGRPCServiceOnDefrag) {
		return
	}
	if on {
		a.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
		a.log.Warn("grpc service status changed", "service", "", "status", healthpb.HealthCheckResponse_NOT_SERVING.String(), "reason", "defrag is active")
		return
	}
	a.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	a.log.Info("grpc service status changed", "service", "", "status", healthpb.HealthCheckResponse_SERVING.String())
}
