package e2e

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"

	"github.com/cairnkv/cairn/internal/testnet"
)

// The learner features behind cairn's own gates: AutoPromoteLearners and
// LearnerLinearizableReads.

// addLearner adds a learner to the cluster of ms through cli and returns
// it, not started, with its flags (opts' extra ones included) and its ID.
// A new cluster refuses additions until its members have been connected
// for 5 s (--strict-reconfig-check, as etcd's): it tries until then.
func addLearner(ctx context.Context, t *testing.T, cli *clientv3.Client, ms []*member, opts clusterOptions) (*member, uint64) {
	t.Helper()
	return addMember(ctx, t, cli, ms, opts, "learner", cli.MemberAddAsLearner)
}

// addMember adds a member named name through add (clientv3's MemberAdd or
// MemberAddAsLearner) and returns it, not started, with its ID.
func addMember(ctx context.Context, t *testing.T, cli *clientv3.Client, ms []*member, opts clusterOptions, name string,
	add func(context.Context, []string) (*clientv3.MemberAddResponse, error)) (*member, uint64) {
	t.Helper()
	l := &member{t: t, name: name, dataDir: ms[0].dataDir + "-" + name, curl: testnet.FreeURL(t), purl: testnet.FreeURL(t)}
	var added *clientv3.MemberAddResponse
	var err error
	waitFor(t, 20*time.Second, "the "+name+" to be added", func() bool {
		added, err = add(ctx, []string{l.purl})
		return !errors.Is(err, rpctypes.ErrUnhealthy)
	})
	if err != nil {
		t.Fatal(err)
	}
	var initial []string
	for _, m := range append(ms, l) {
		initial = append(initial, m.name+"="+m.purl)
	}
	l.args = l.flags(strings.Join(initial, ","), "existing", opts)
	return l, added.Member.ID
}

// isLearner asks m (serializably: its own member list) whether id is a
// learner.
func isLearner(ctx context.Context, t *testing.T, m *member, id uint64) bool {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ml, err := client(t, m).MemberList(c, clientv3.WithSerializable())
	if err != nil {
		t.Fatalf("member list on %s: %v", m.name, err)
	}
	for _, mm := range ml.Members {
		if mm.ID == id {
			return mm.IsLearner
		}
	}
	t.Fatalf("%s does not list %x", m.name, id)
	return false
}

// waitVoter waits until every member of ms lists id as a voter.
func waitVoter(ctx context.Context, t *testing.T, ms []*member, id uint64) {
	t.Helper()
	for _, m := range ms {
		waitFor(t, 30*time.Second, fmt.Sprintf("%s to list %x as a voter", m.name, id), func() bool {
			return !isLearner(ctx, t, m, id)
		})
	}
}

func gates(g string) func(string) []string {
	return func(string) []string { return []string{"--feature-gates", g} }
}

var promotedLine = regexp.MustCompile(`msg="promoted learner automatically" learner-id=([0-9a-f]+) learner-match=(\d+) leader-match=(\d+) max-lag=(\d+)`)

// promotion finds the line of the automatic promotion of id in a log.
func promotion(log string, id uint64) (learnerMatch, leaderMatch uint64, ok bool) {
	for _, m := range promotedLine.FindAllStringSubmatch(log, -1) {
		if m[1] == fmt.Sprintf("%x", id) {
			learnerMatch, _ = strconv.ParseUint(m[2], 10, 64)
			leaderMatch, _ = strconv.ParseUint(m[3], 10, 64)
			return learnerMatch, leaderMatch, true
		}
	}
	return 0, 0, false
}

// TestAutoPromoteLearner: with AutoPromoteLearners on, a learner that is
// started becomes a voter with no promote call, and the leader logs it.
func TestAutoPromoteLearner(t *testing.T) {
	opts := clusterOptions{extraArgs: gates("AutoPromoteLearners=true")}
	ms := newCluster(t, 3, opts)
	cli := client(t, ms...)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for i := 0; i < 50; i++ {
		if _, err := cli.Put(ctx, fmt.Sprintf("pre/%04d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	l, id := addLearner(ctx, t, cli, ms, opts)
	l.start()
	waitVoter(ctx, t, append(ms, l), id)
	lead := leader(t, ms)
	if lead == nil {
		t.Fatal("no leader")
	}
	if _, _, ok := promotion(lead.log(), id); !ok {
		t.Errorf("the leader %s did not log the promotion of %x; log:\n%s", lead.name, id, lead.log())
	}
	// The promoted member serves writes now.
	if _, err := client(t, l).Put(ctx, "after", "promotion"); err != nil {
		t.Errorf("put on the promoted member: %v", err)
	}
}

// TestAutoPromoteLearnerBehind: a learner that is stopped, and then far
// behind (it needs a snapshot), is not promoted; leadership moves in the
// meantime, and the new leader promotes it once it has caught up.
func TestAutoPromoteLearnerBehind(t *testing.T) {
	opts := clusterOptions{snapshotCount: 100, catchUpEntries: 10, extraArgs: gates("AutoPromoteLearners=true")}
	ms := newCluster(t, 3, opts)
	cli := client(t, ms...)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	l, id := addLearner(ctx, t, cli, ms, opts)
	notReady := fmt.Sprintf(`msg="learner not ready for automatic promotion" learner-id=%x`, id)

	// Stopped: the leader checks it and reports it not ready.
	old, rest := leaderAndRest(t, ms)
	waitFor(t, 10*time.Second, "the leader to find the learner not ready", func() bool {
		return strings.Contains(old.log(), notReady)
	})
	if !isLearner(ctx, t, old, id) {
		t.Fatal("a stopped learner was promoted")
	}

	// Leadership moves; the new leader checks too.
	next := rest[0]
	st, err := client(t, next).Status(ctx, next.curl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client(t, old).MoveLeader(ctx, st.Header.MemberId); err != nil {
		t.Fatalf("move leader to %s: %v", next.name, err)
	}
	waitFor(t, 10*time.Second, "the new leader to find the learner not ready", func() bool {
		return strings.Contains(next.log(), notReady)
	})

	// Far behind: 400 writes, so that the leader's log is compacted
	// past the learner (--snapshot-count 100, 10 catch-up entries).
	for i := 0; i < 400; i++ {
		if _, err := cli.Put(ctx, fmt.Sprintf("snap/%04d", i), strings.Repeat("x", 100)); err != nil {
			t.Fatal(err)
		}
	}
	if !isLearner(ctx, t, next, id) {
		t.Fatal("a stopped learner was promoted")
	}
	st, err = client(t, next).Status(ctx, next.curl)
	if err != nil {
		t.Fatal(err)
	}
	written := st.RaftIndex // the learner must have this much, less the lag, to be promoted

	l.start()
	waitVoter(ctx, t, append(ms, l), id)
	learnerMatch, leaderMatch, ok := promotion(next.log(), id)
	if !ok {
		t.Fatalf("the new leader %s did not log the promotion of %x; log:\n%s", next.name, id, next.log())
	}
	t.Logf("promoted by %s at learner match %d, leader match %d (raft index %d after the writes)", next.name, learnerMatch, leaderMatch, written)
	if learnerMatch+10 < written || leaderMatch > learnerMatch+10 {
		t.Errorf("promoted at learner match %d, leader match %d: want within 10 entries of the leader and of index %d", learnerMatch, leaderMatch, written)
	}
	if _, _, ok := promotion(old.log(), id); ok {
		t.Errorf("the old leader %s promoted the learner too", old.name)
	}
	if !strings.Contains(l.log(), "installed snapshot from the leader") {
		t.Errorf("the learner caught up without a snapshot; log:\n%s", l.log())
	}
}

// errLearner is etcd's refusal of an RPC on a learner, as clientv3 returns it.
var errLearner = rpctypes.Error(rpctypes.ErrGRPCNotSupportedForLearner)

// TestLearnerLinearizableReads: without the gate a learner refuses
// linearizable reads as etcd's does; with it (on the learner), each read
// on the learner sees every write acknowledged before it, and writes are
// still refused.
func TestLearnerLinearizableReads(t *testing.T) {
	ms := newCluster(t, 3, clusterOptions{})
	cli := client(t, ms...)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	l, id := addLearner(ctx, t, cli, ms, clusterOptions{})
	l.start()
	lc := client(t, l) // the learner only
	waitFor(t, 30*time.Second, "the learner to serve serializable reads", func() bool {
		c, cc := context.WithTimeout(ctx, time.Second)
		defer cc()
		_, err := lc.Get(c, "k", clientv3.WithSerializable())
		return err == nil
	})
	if _, err := lc.Get(ctx, "k"); !errors.Is(err, errLearner) {
		t.Fatalf("linearizable read on a learner without the gate: %v, want %v", err, errLearner)
	} else if ee, ok := err.(rpctypes.EtcdError); !ok || ee.Code() != codes.FailedPrecondition {
		t.Errorf("error %#v, want code FailedPrecondition as etcd's", err)
	}

	l.stop()
	l.args = append(l.args, "--feature-gates", "LearnerLinearizableReads=true")
	l.start()
	waitFor(t, 30*time.Second, "the learner to serve linearizable reads", func() bool {
		c, cc := context.WithTimeout(ctx, time.Second)
		defer cc()
		_, err := lc.Get(c, "k")
		return err == nil
	})
	voters := []*clientv3.Client{client(t, ms[0]), client(t, ms[1]), client(t, ms[2])}
	for i := 0; i < 150; i++ {
		want := strconv.Itoa(i)
		if _, err := voters[i%3].Put(ctx, "k", want); err != nil {
			t.Fatalf("put %d on %s: %v", i, ms[i%3].name, err)
		}
		resp, err := lc.Get(ctx, "k")
		if err != nil {
			t.Fatalf("linearizable read %d on the learner: %v", i, err)
		}
		if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != want {
			t.Fatalf("read %d on the learner after the write was acknowledged: %v, want %q", i, resp.Kvs, want)
		}
	}
	if _, err := lc.Put(ctx, "k", "from the learner"); !errors.Is(err, errLearner) {
		t.Errorf("write on a learner with the gate: %v, want %v", err, errLearner)
	}
	if !isLearner(ctx, t, ms[0], id) {
		t.Error("the learner was promoted without AutoPromoteLearners")
	}
}
