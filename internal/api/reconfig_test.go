package api

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/memberconfig"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func newClient(t *testing.T, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestRemovingTheLastMemberIsRefused: removing the only voter used to be
// accepted, and raft then panicked at apply, on every restart too. It is
// refused as etcd refuses it, with or without the strict check, and the
// member goes on serving.
func TestRemovingTheLastMemberIsRefused(t *testing.T) {
	for _, strict := range []bool{true, false} {
		m := startInProcess(t, 1, func(cfg *memberconfig.Config) { cfg.NoStrictReconfigCheck = !strict })[0]
		cli := newClient(t, m.curl)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := cli.MemberRemove(ctx, m.s.ID()); !errors.Is(err, rpctypes.ErrMemberNotEnoughStarted) {
			t.Errorf("strict %v: remove the last member: %v, want %v", strict, err, rpctypes.ErrMemberNotEnoughStarted)
		}
		if _, err := cli.Put(ctx, "k", "v"); err != nil {
			t.Errorf("strict %v: put after the refused removal: %v", strict, err)
		}
	}
}

// TestStrictReconfigCheck: with --strict-reconfig-check (the default) a
// member refuses changes that could break the active quorum, as etcd's
// does: any addition until it has been connected to a quorum of voters
// for 5 s, and, with one of three members down, an addition and the
// removal of a live one;
// the removal of the member that is down is accepted.
func TestStrictReconfigCheck(t *testing.T) {
	start := time.Now()
	ms := startInProcess(t, 3, func(cfg *memberconfig.Config) {
		cfg.HeartbeatInterval, cfg.ElectionTimeout = 20*time.Millisecond, 200*time.Millisecond
	})
	cli := newClient(t, ms[0].curl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.MemberAddAsLearner(ctx, []string{"http://127.0.0.1:1"}); !errors.Is(err, rpctypes.ErrUnhealthy) {
		t.Errorf("add right after the start: %v, want %v", err, rpctypes.ErrUnhealthy)
	}
	ms[2].stop()
	// The members' connections must be older than the health interval.
	waitFor(t, 10*time.Second, "5 s since the start", func() bool { return time.Since(start) > 5*time.Second+time.Second })
	// Two of three connected is not a quorum of the four the cluster would
	// have (etcd's TestCtlV3MemberAddAsLearnerWithOneMemberDown).
	if _, err := cli.MemberAddAsLearner(ctx, []string{"http://127.0.0.1:1"}); !errors.Is(err, rpctypes.ErrUnhealthy) {
		t.Errorf("add a learner with one of three members down: %v, want %v", err, rpctypes.ErrUnhealthy)
	}
	if _, err := cli.MemberRemove(ctx, ms[1].s.ID()); !errors.Is(err, rpctypes.ErrUnhealthy) {
		t.Errorf("remove a live member while another is down: %v, want %v", err, rpctypes.ErrUnhealthy)
	}
	if _, err := cli.MemberRemove(ctx, ms[2].s.ID()); err != nil {
		t.Errorf("remove the member that is down: %v", err)
	}
}

// TestNoStrictReconfigCheck: --strict-reconfig-check=false accepts an
// addition at once.
func TestNoStrictReconfigCheck(t *testing.T) {
	ms := startInProcess(t, 3, func(cfg *memberconfig.Config) {
		cfg.HeartbeatInterval, cfg.ElectionTimeout, cfg.NoStrictReconfigCheck = 20*time.Millisecond, 200*time.Millisecond, true
	})
	cli := newClient(t, ms[0].curl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.MemberAddAsLearner(ctx, []string{"http://127.0.0.1:1"}); err != nil {
		t.Errorf("add with the check off: %v", err)
	}
}
