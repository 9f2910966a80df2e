//go:build robustdiag

// Harness DIAGNOSTIC (cairn robustness; NOT a measurement), copied into
// tests/robustness/failpoint/ by prepare.sh and compiled only with -tags
// robustdiag. failpoint.Inject checks every member with the gRPC health
// service (grpc.health.v1.Health/Check) before and after injecting a failure.
// A member that answers that call with codes.Unimplemented (no health
// service registered) is instead checked with Maintenance.Status on its own
// endpoint, so that the run goes on to traffic, injection and validation.
package failpoint

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func diagHealthFallback(ctx context.Context, c *clientv3.Client, endpoint, name string, err error) (bool, error) {
	if err == nil || status.Code(err) != codes.Unimplemented {
		return false, nil
	}
	if _, serr := c.Status(ctx, endpoint); serr != nil {
		return true, fmt.Errorf("Error checking member %s with Status (diag fallback for missing grpc.health.v1.Health): %w", name, serr)
	}
	return true, nil
}
