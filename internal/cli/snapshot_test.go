package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/client/clienttest"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
	"github.com/cairnkv/cairn/internal/cliutil/progress"
	"github.com/cairnkv/cairn/internal/faultfs"
	"github.com/cairnkv/cairn/pkg/writebehind"
)

// TestSnapshotSaveReports: snapshot save shows the bytes received of the
// total the stream announces, and sums up the file it wrote (size and
// sha256 as sha256sum shows them).
func TestSnapshotSaveReports(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c := clientOfValues(ctx, t, 1<<20)
	path := filepath.Join(t.TempDir(), "snap.db")
	var shown bytes.Buffer
	saved, err := saveSnapshot(ctx, c, path, progress.New(&shown, "snapshot save", 0, true))
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(file))
	if want := fmt.Sprintf("of %s)", printer.HumanBytes(size)); !strings.Contains(shown.String(), want) {
		t.Errorf("progress %q does not show the total (%q)", shown.String(), want)
	}
	if sum := sha256.Sum256(file); saved.size != size || !bytes.Equal(saved.sha256, sum[:]) || saved.took <= 0 {
		t.Errorf("saved %d bytes, sha256 %x, in %s; the file has %d bytes, sha256 %x", saved.size, saved.sha256, saved.took, size, sum)
	}
}

// TestSnapshotSaveSyncsAsItWrites: snapshot save syncs the file every
// writebehind.DefaultInterval bytes as they come, not once at the end, so that a
// member whose disk takes the file does not wait for all of it at once.
func TestSnapshotSaveSyncsAsItWrites(t *testing.T) {
	dir := t.TempDir()
	fs := faultfs.MountT(t, t.TempDir(), dir)
	// A delay of nothing to speak of, so that the fsyncs of the file
	// being written are counted.
	fs.Set(faultfs.Faults{FsyncDelay: time.Microsecond, Only: func(path string) bool { return strings.HasSuffix(path, ".part") }})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	const syncs = 4
	c := clientOfValues(ctx, t, syncs*writebehind.DefaultInterval)
	saved, err := saveSnapshot(ctx, c, filepath.Join(dir, "snap.db"), progress.New(io.Discard, "snapshot save", 0, false))
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.Stats().DelayedFsyncs; got < syncs {
		t.Errorf("%d bytes saved with %d fsyncs of the file, want at least %d (one every %d bytes)",
			saved.size, got, syncs, writebehind.DefaultInterval)
	}
}

// clientOfValues starts a member holding about size bytes of values, 64
// KiB each, and returns a client of it, closed with the test.
func clientOfValues(ctx context.Context, t *testing.T, size int) *client.Client {
	t.Helper()
	cluster := clienttest.StartCluster(t, clienttest.Options{})
	c, err := client.New(client.Config{Endpoints: cluster.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	value := bytes.Repeat([]byte("v"), 64<<10)
	for i := range size / len(value) {
		if _, err := c.KV.Put(ctx, &pb.PutRequest{Key: fmt.Appendf(nil, "k%d", i), Value: value}); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func TestSavedSnapshotLine(t *testing.T) {
	s := savedSnapshot{size: 22_000_032, took: 1250 * time.Millisecond, sha256: []byte{0xab, 0x01}}
	want := "Snapshot of 22 MB (22000032 bytes) saved in 1.25s (18 MB/s), sha256 ab01"
	if got := s.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
