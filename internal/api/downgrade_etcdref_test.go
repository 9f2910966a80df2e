package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/status"

	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/internal/testnet"
)

// downgradeTranscript runs a downgrade through all its states against the
// server at curl and records what each call answered. Where the leader
// changes the cluster version in the background (etcd within seconds,
// cairn at once), it waits until /version shows the change.
type downgradeTranscript struct {
	t     *testing.T
	curl  string
	cli   *clientv3.Client
	lines []string
}

func (tr *downgradeTranscript) record(format string, args ...any) {
	tr.lines = append(tr.lines, fmt.Sprintf(format, args...))
}

func (tr *downgradeTranscript) call(action clientv3.DowngradeAction, target string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := tr.cli.Downgrade(ctx, action, target)
	tr.record("downgrade %d %q: %s", action, target, downgradeOutcome(resp, err))
}

// downgradeOutcome is the answer to a call: the cluster version, or the
// gRPC code and message of the error (which clientv3 wraps).
func downgradeOutcome(resp *clientv3.DowngradeResponse, err error) string {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return fmt.Sprintf("%s %q", ee.Code(), ee.Error())
	}
	if err != nil {
		return fmt.Sprintf("%s %q", status.Code(err), status.Convert(err).Message())
	}
	return "cluster version " + resp.Version
}

// rawCall sends an action clientv3 refuses to send.
func (tr *downgradeTranscript) rawCall(action pb.DowngradeRequest_DowngradeAction) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := pb.NewMaintenanceClient(tr.cli.ActiveConnection()).Downgrade(ctx, &pb.DowngradeRequest{Action: action, Version: "3.6"})
	tr.record("raw downgrade %d: %s", action, downgradeOutcome((*clientv3.DowngradeResponse)(resp), err))
}

// gatewayCall validates a target through the JSON gateway.
func (tr *downgradeTranscript) gatewayCall(target string) {
	body := fmt.Sprintf(`{"action":"VALIDATE","version":%q}`, target)
	resp, err := http.Post(tr.curl+"/v3/maintenance/downgrade", "application/json", strings.NewReader(body))
	if err != nil {
		tr.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Version string `json:"version"`
		Message string `json:"message"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil {
		tr.t.Fatalf("gateway answer %s: %v", b, err)
	}
	tr.record("gateway validate %q: %d %q %q", target, resp.StatusCode, out.Version, out.Message)
}

func (tr *downgradeTranscript) versions() (cluster, storage string) {
	resp, err := http.Get(tr.curl + "/version")
	if err != nil {
		return "", ""
	}
	defer resp.Body.Close()
	var v struct{ Etcdcluster, Storage string }
	json.NewDecoder(resp.Body).Decode(&v)
	return v.Etcdcluster, v.Storage
}

// waitVersions waits until /version shows these cluster and storage
// versions.
func (tr *downgradeTranscript) waitVersions(cluster, storage string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, s := tr.versions()
		if c == cluster && s == storage {
			tr.record("versions: cluster %s, storage %s", c, s)
			return
		}
		if time.Now().After(deadline) {
			tr.t.Fatalf("versions: cluster %s, storage %s; waited for %s, %s", c, s, cluster, storage)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition
	}
}

func (tr *downgradeTranscript) status() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := tr.cli.Status(ctx, tr.curl)
	if err != nil {
		tr.t.Fatal(err)
	}
	tr.record("status: storage version %s, downgrade info %v %q", st.StorageVersion,
		st.DowngradeInfo.GetEnabled(), st.DowngradeInfo.GetTargetVersion())
}

func runDowngradeScript(t *testing.T, curl string) []string {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{curl}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	tr := &downgradeTranscript{t: t, curl: curl, cli: cli}
	validate, enable, cancel := clientv3.DowngradeValidate, clientv3.DowngradeEnable, clientv3.DowngradeCancel
	tr.waitVersions("3.7.0", "3.7.0")
	tr.status()
	for _, target := range []string{"3.6", "3.6.0", "3.6.5-rc.1+b", "3", "v3.6", "", "3.5", "3.7", "4.6", "2.6"} {
		tr.call(validate, target)
	}
	tr.call(cancel, "")
	tr.rawCall(pb.DowngradeRequest_DowngradeAction(7))
	tr.gatewayCall("3.6")
	tr.gatewayCall("3.5")
	tr.call(enable, "v3.6")
	tr.call(enable, "3.5")
	tr.call(enable, "3.6")
	tr.waitVersions("3.6.0", "3.6.0")
	tr.status()
	for _, target := range []string{"3.6", "3.5", "3.4", "x"} {
		tr.call(validate, target)
		tr.call(enable, target)
	}
	tr.call(cancel, "")
	tr.waitVersions("3.7.0", "3.7.0")
	tr.status()
	tr.call(cancel, "")
	tr.call(validate, "3.6")
	return tr.lines
}

// TestDowngradeMatchesEtcd runs a downgrade, from validation through enable
// and cancel, against real etcd 3.7.3 and against a cairn member, and
// wants the same answers, versions and statuses.
func TestDowngradeMatchesEtcd(t *testing.T) {
	want := runDowngradeScript(t, etcdref.Start(t, testnet.FreeURL(t), testnet.FreeURL(t)))
	curl, _, _ := startMember(t, memberconfig.Config{})
	got := runDowngradeScript(t, curl)
	if !slices.Equal(want, got) {
		t.Errorf("cairn's downgrade transcript differs from etcd's:\n%s", diffLines(want, got))
	}
	t.Logf("%d lines the same:\n%s", len(want), strings.Join(want, "\n"))
}
