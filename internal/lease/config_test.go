package lease

import (
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

func TestMinTTL(t *testing.T) {
	for _, c := range []struct {
		ticks     int
		heartbeat time.Duration
		want      int64
	}{
		{10, 100 * time.Millisecond, 2}, // etcd's defaults: 1.5 s, rounded up
		{20, 100 * time.Millisecond, 3},
		{5, 100 * time.Millisecond, 1},
		{10, time.Second, 15},
		{10, 200 * time.Millisecond, 3},
	} {
		if got := MinTTL(c.ticks, c.heartbeat); got != c.want {
			t.Errorf("MinTTL(%d, %v) = %d, want %d", c.ticks, c.heartbeat, got, c.want)
		}
	}
	if got := (Config{}).withDefaults().MinTTL; got != 2 {
		t.Errorf("default MinTTL %d, want 2", got)
	}
}

func TestErrorTextsAreEtcds(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{ErrLeaseNotFound, "etcdserver: requested lease not found"},
		{ErrLeaseExists, "etcdserver: lease already exists"},
		{ErrLeaseTTLTooLarge, "etcdserver: too large lease TTL"},
		{ErrNotPrimary, "not a primary lessor"},
	} {
		if c.err.Error() != c.want {
			t.Errorf("%q, want %q", c.err, c.want)
		}
	}
	if ErrLeaseNotFound.Error() != rpctypes.ErrLeaseNotFound.Error() ||
		ErrLeaseExists.Error() != rpctypes.ErrLeaseExist.Error() ||
		ErrLeaseTTLTooLarge.Error() != rpctypes.ErrLeaseTTLTooLarge.Error() {
		t.Error("texts differ from rpctypes")
	}
}

func TestRevokesPerTick(t *testing.T) {
	if got := (Config{}).withDefaults().revokesPerTick(); got != 500 {
		t.Errorf("default budget %d, want 500 (1000/s at 500 ms)", got)
	}
	if got := (Config{RevokeRate: 1}).withDefaults().revokesPerTick(); got != 1 {
		t.Errorf("budget %d at 1/s, want 1", got)
	}
}
