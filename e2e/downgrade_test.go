package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/pkg/snapfmt"
)

// serverVersions is what a member's /version shows.
type serverVersions struct{ Etcdserver, Etcdcluster, Storage string }

func versions(m *member) serverVersions {
	var v serverVersions
	resp, err := http.Get(m.curl + "/version")
	if err != nil {
		return v
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(&v)
	return v
}

// waitVersions waits until every member shows these versions in /version
// and in its status, with this downgrade.
func waitVersions(t *testing.T, ms []*member, cluster, storage string, downgrade *pb.DowngradeInfo) {
	t.Helper()
	for _, m := range ms {
		cli := client(t, m)
		waitFor(t, 20*time.Second, m.name+" at cluster version "+cluster, func() bool {
			if v := versions(m); v.Etcdcluster != cluster || v.Storage != storage {
				return false
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			st, err := cli.Status(ctx, m.curl)
			return err == nil && st.StorageVersion == storage &&
				st.DowngradeInfo.GetEnabled() == downgrade.GetEnabled() &&
				st.DowngradeInfo.GetTargetVersion() == downgrade.GetTargetVersion()
		})
	}
}

// snapClusterVersion is the cluster version in the v2 store of a member's
// newest raft snapshot ("" while it has none).
func snapClusterVersion(t *testing.T, m *member) string {
	t.Helper()
	snap, _, _, err := snapfmt.LoadNewest(filepath.Join(m.dataDir, "member", "snap"))
	if err != nil || snap == nil {
		return ""
	}
	var v2 struct {
		Root struct {
			Children map[string]struct {
				Children map[string]struct{ Value string }
			}
		}
	}
	if err := json.Unmarshal(snap.GetData(), &v2); err != nil {
		t.Fatalf("%s: snapshot data: %v", m.name, err)
	}
	return v2.Root.Children["0"].Children["version"].Value
}

// TestDowngradeOnThreeMembers drives a downgrade with the official client
// through a follower: validation, enable (the cluster and storage versions
// go down on every member, each takes a snapshot), a restart of every
// member, cancel (the versions go back up), and a restart again.
func TestDowngradeOnThreeMembers(t *testing.T) {
	ms := newCluster(t, 3, clusterOptions{})
	follower := ms[0]
	if leader(t, ms) == follower {
		follower = ms[1]
	}
	cli := client(t, follower)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	notEnabled := &pb.DowngradeInfo{}
	enabled := &pb.DowngradeInfo{Enabled: true, TargetVersion: "3.6.0"}
	waitVersions(t, ms, "3.7.0", "3.7.0", notEnabled)

	if resp, err := cli.Downgrade(ctx, clientv3.DowngradeValidate, "3.6"); err != nil || resp.Version != "3.7" {
		t.Fatalf("validate 3.6: %v, %v", resp, err)
	}
	for target, want := range map[string]error{
		"3.5": rpctypes.ErrInvalidDowngradeTargetVersion, "3.7": rpctypes.ErrInvalidDowngradeTargetVersion,
		"v3.6": rpctypes.ErrWrongDowngradeVersionFormat,
	} {
		if _, err := cli.Downgrade(ctx, clientv3.DowngradeValidate, target); !errors.Is(err, want) {
			t.Errorf("validate %s: %v, want %v", target, err, want)
		}
	}
	if resp, err := cli.Downgrade(ctx, clientv3.DowngradeEnable, "3.6"); err != nil || resp.Version != "3.7" {
		t.Fatalf("enable 3.6: %v, %v", resp, err)
	}
	waitVersions(t, ms, "3.6.0", "3.6.0", enabled)
	for _, m := range ms {
		waitFor(t, 10*time.Second, m.name+" taking a snapshot at the lowered cluster version", func() bool {
			return snapClusterVersion(t, m) == "3.6.0"
		})
	}
	if _, err := cli.Downgrade(ctx, clientv3.DowngradeValidate, "3.5"); !errors.Is(err, rpctypes.ErrDowngradeInProcess) {
		t.Errorf("validate 3.5 during the downgrade: %v", err)
	}

	for _, m := range ms {
		m.stop()
	}
	for _, m := range ms {
		m.start()
	}
	waitHealthy(t, ms...)
	waitVersions(t, ms, "3.6.0", "3.6.0", enabled)

	if resp, err := cli.Downgrade(ctx, clientv3.DowngradeCancel, ""); err != nil || resp.Version != "3.6" {
		t.Fatalf("cancel: %v, %v", resp, err)
	}
	waitVersions(t, ms, "3.7.0", "3.7.0", notEnabled)

	for _, m := range ms {
		m.stop()
		m.start()
	}
	waitHealthy(t, ms...)
	waitVersions(t, ms, "3.7.0", "3.7.0", notEnabled)
}

// etcd36 is the etcd release a cairn (etcd 3.7) data dir downgrades to.
const etcd36 = "v3.6.16"

// TestEtcd36StartsOnDowngradedCairnDataDir writes through cairn serve past
// a few snapshots, enables a downgrade to 3.6, stops the member and starts
// real etcd 3.6 on a copy of its data dir: it serves the same keys at the
// same revision, at cluster version 3.6.
func TestEtcd36StartsOnDowngradedCairnDataDir(t *testing.T) {
	etcd := etcdref.ReleaseBin(t, etcd36, "etcd")
	ms := newCluster(t, 1, clusterOptions{snapshotCount: 20})
	m := ms[0]
	cli := client(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 50 {
		if _, err := cli.Put(ctx, fmt.Sprintf("k%02d", i), fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Downgrade(ctx, clientv3.DowngradeEnable, "3.6"); err != nil {
		t.Fatal(err)
	}
	waitVersions(t, ms, "3.6.0", "3.6.0", &pb.DowngradeInfo{Enabled: true, TargetVersion: "3.6.0"})
	if _, err := cli.Put(ctx, "after", "the downgrade"); err != nil {
		t.Fatal(err)
	}
	want, err := cli.Get(ctx, "", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	m.stop()

	startEtcdOnCopy(t, etcd, m)
	if v := versions(m); !strings.HasPrefix(v.Etcdserver, "3.6.") || v.Etcdcluster != "3.6.0" {
		t.Errorf("etcd %s runs at cluster version %q", v.Etcdserver, v.Etcdcluster)
	}
	checkServesSame(t, m, "", want)
}
