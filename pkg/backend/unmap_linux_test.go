package backend

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// mappedKiB is the resident size of this process's map of the file at
// path, from /proc/self/smaps.
func mappedKiB(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	total, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if fields := strings.Fields(line); len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = strings.HasSuffix(line, " "+path) // a map's header line
			continue
		}
		if in && strings.HasPrefix(line, "Rss:") {
			n, err := strconv.Atoi(strings.Fields(line)[1])
			if err != nil {
				t.Fatal(err)
			}
			total += n
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return total
}

// The pages of a retired file leave its map before it is closed (so that
// the unmap has nothing to take down), and a reader still on it reads the
// same data as before, from the page cache.
func TestDropMappedPagesKeepsReadersRight(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	value := bytes.Repeat([]byte("v"), 4000)
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(testBucket)
		for i := 0; err == nil && i < 5000; i++ { // some 20 MB
			err = b.Put(fmt.Appendf(nil, "k%05d", i), value)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin(false)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	readAll := func() {
		t.Helper()
		n := 0
		err := tx.Bucket(testBucket).ForEach(func(k, v []byte) error {
			if !bytes.Equal(v, value) {
				return fmt.Errorf("%s: %d bytes, not the value written", k, len(v))
			}
			n++
			return nil
		})
		if err != nil || n != 5000 {
			t.Fatalf("read %d values: %v", n, err)
		}
	}
	readAll()
	before := mappedKiB(t, path)
	if before < 10<<10 {
		t.Fatalf("%d KiB of the file mapped after reading it all, want some 20 MB", before)
	}
	dropMappedPages(db)
	if after := mappedKiB(t, path); after > before/10 {
		t.Errorf("%d KiB still mapped after the drop (%d before)", after, before)
	}
	readAll()
}
