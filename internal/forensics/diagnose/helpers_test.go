package diagnose

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/client/clienttest"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
	"github.com/cairnkv/cairn/pkg/kvcodec"
	"github.com/cairnkv/cairn/pkg/store"
	"github.com/cairnkv/cairn/pkg/walfmt"
)

// fixtureData is the real etcd 3.7.3 data directory of the testdata.
const fixtureData = "../../../testdata/etcd-3.7.3/data"

// binDir holds the cairn binary the cluster tests build once.
var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// cairnBin builds cairn once for the package's tests.
func cairnBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "cairn-diagnose-")
		if binErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, "cairn"), "github.com/cairnkv/cairn/cmd/cairn").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("build cairn: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "cairn")
}

// diagnoseResult is the outcome of one in-process `diagnose`.
type diagnoseResult struct {
	stdout string
	err    error
}

// runDiagnose runs the command in-process, under a root with the global
// --write-out flag as internal/cli has it.
func runDiagnose(t *testing.T, args ...string) diagnoseResult {
	t.Helper()
	root := &cobra.Command{Use: "cairn", SilenceUsage: true, SilenceErrors: true}
	root.PersistentFlags().StringP("write-out", "w", printer.FormatSimple, "set the output format")
	root.AddCommand(NewCommand())
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(io.Discard)
	root.SetArgs(append([]string{"diagnose"}, args...))
	err := root.Execute()
	return diagnoseResult{stdout: out.String(), err: err}
}

// diagnoseJSON runs `diagnose -w json` and decodes the report.
func diagnoseJSON(t *testing.T, dirs ...string) *report {
	t.Helper()
	res := runDiagnose(t, append([]string{"-w", "json"}, dirs...)...)
	if res.err != nil {
		t.Fatalf("diagnose -w json %v: %v\n%s", dirs, res.err, res.stdout)
	}
	r := &report{}
	if err := json.Unmarshal([]byte(res.stdout), r); err != nil {
		t.Fatalf("diagnose -w json output: %v\n%s", err, res.stdout)
	}
	return r
}

// memberOf returns the report's entry for dir.
func memberOf(t *testing.T, r *report, dir string) memberJSON {
	t.Helper()
	for _, m := range r.Members {
		if m.Dir == dir {
			return m
		}
	}
	t.Fatalf("no member with dir %s in the report", dir)
	return memberJSON{}
}

// copyDirs copies each dir (with cp -a) into a directory of its own in a
// new temporary directory, keeping its base name, and returns the copies.
func copyDirs(t *testing.T, dirs []string) []string {
	t.Helper()
	root := t.TempDir()
	out := make([]string, len(dirs))
	for i, d := range dirs {
		out[i] = filepath.Join(root, fmt.Sprint(i), filepath.Base(d))
		if err := os.Mkdir(filepath.Dir(out[i]), 0o700); err != nil {
			t.Fatal(err)
		}
		if b, err := exec.Command("cp", "-a", d, out[i]).CombinedOutput(); err != nil {
			t.Fatalf("cp -a %s %s: %v\n%s", d, out[i], err, b)
		}
	}
	return out
}

// tearWAL truncates the last segment of dir's WAL in the middle of its
// last record, as a crash mid-write leaves it.
func tearWAL(t *testing.T, dir string) {
	t.Helper()
	d, err := walfmt.OpenDecoder(filepath.Join(dir, "member", "wal"), walfmt.DecoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var last *walfmt.Item
	for {
		it, err := d.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("wal of %s is damaged before the test tears it: %v", dir, err)
		}
		last = it
	}
	d.Close()
	if last == nil {
		t.Fatalf("wal of %s has no record", dir)
	}
	if err := os.Truncate(last.Segment.Path, last.Offset+last.FrameSize/2); err != nil {
		t.Fatal(err)
	}
}

// changeValue rewrites, with bbolt directly, the value of every revision
// of key in the db of dir: the db then diverges from the others.
func changeValue(t *testing.T, dir, key, value string) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, "member", "snap", "db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	changed := 0
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(store.BucketKey)
		type put struct{ k, v []byte }
		var puts []put
		err := b.ForEach(func(k, v []byte) error {
			kv := &mvccpb.KeyValue{}
			if err := kvcodec.Unmarshal(v, kv); err != nil {
				return err
			}
			if string(kv.Key) == key {
				kv.Value = []byte(value)
				puts = append(puts, put{append([]byte{}, k...), kvcodec.Marshal(kv)})
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, p := range puts {
			if err := b.Put(p.k, p.v); err != nil {
				return err
			}
		}
		changed = len(puts)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if changed == 0 {
		t.Fatalf("key %q not in the db of %s", key, dir)
	}
}

// putKeys writes prefix0..prefix(n-1) through the endpoints.
func putKeys(t *testing.T, endpoints []string, prefix string, n int) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := cli.Put(ctx, fmt.Sprintf("%s%d", prefix, i), fmt.Sprintf("value %d", i))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// waitRevision waits until the member at endpoint serves revision rev
// locally (a serializable read), so that it has applied it.
func waitRevision(t *testing.T, endpoint string, rev int64) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	clienttest.Poll(t, 30*time.Second, fmt.Sprintf("revision %d on %s", rev, endpoint), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := cli.Get(ctx, "k", clientv3.WithSerializable())
		return err == nil && resp.Header.Revision >= rev
	})
}
