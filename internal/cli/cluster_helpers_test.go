package cli_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/client/clienttest"
)

// The helpers of the tests that run the cairn binary against test clusters.

// runCairnBinary runs the cairn binary to its end and returns what it
// printed on stdout and on stderr, and its exit code (-1 when killed).
func runCairnBinary(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, clienttest.CairnBinary(t), args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	var exit *exec.ExitError
	if err := cmd.Run(); errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("cairn %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}

// cairnOutput runs the cairn binary and returns its stdout, failing the test
// on a non-zero exit.
func cairnOutput(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, code := runCairnBinary(t, args...)
	if code != 0 {
		t.Fatalf("cairn %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout
}

// startCommand starts a long-running command, printing to out.
func startCommand(t *testing.T, bin string, out *syncBuffer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd
}

// stop interrupts a command as Ctrl-C would and expects a clean exit.
func stop(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("%s after Ctrl-C: %v", strings.Join(cmd.Args, " "), err)
	}
}

// endpointsFlag is the --endpoints flag that names every member of cluster.
func endpointsFlag(cluster *clienttest.Cluster) string {
	return "--endpoints=" + strings.Join(cluster.Endpoints(), ",")
}

// clusterClient returns a client of cluster, closed when the test ends.
func clusterClient(t *testing.T, cluster *clienttest.Cluster) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{Endpoints: cluster.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// countKeys counts the keys under prefix.
func countKeys(t *testing.T, c *client.Client, prefix string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	end := []byte(prefix)
	end[len(end)-1]++
	resp, err := c.KV.Range(ctx, &pb.RangeRequest{Key: []byte(prefix), RangeEnd: end, CountOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// keyValues lists the keys and values of a cluster, "key=value".
func keyValues(t *testing.T, c *client.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := c.KV.Range(ctx, &pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}})
	if err != nil {
		t.Fatal(err)
	}
	var kvs []string
	for _, kv := range resp.Kvs {
		kvs = append(kvs, fmt.Sprintf("%s=%s", kv.Key, kv.Value))
	}
	return kvs
}
