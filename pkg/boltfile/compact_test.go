package boltfile

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestCompactToCopiesEveryShape: CompactTo's pages, written without bbolt,
// hold what the source holds, in every shape bbolt stores (small and
// overflowing values, long keys that make branch pages of few elements,
// empty values and buckets, buckets nested three deep, inline buckets,
// sequences), at two page sizes; bbolt's own check passes on the copy, the
// copy takes no more pages than the source, and bbolt can go on writing it.
func TestCompactToCopiesEveryShape(t *testing.T) {
	for _, pageSize := range []int{4096, 16384} {
		t.Run(fmt.Sprint(pageSize), func(t *testing.T) {
			dir := t.TempDir()
			src, err := bolt.Open(filepath.Join(dir, "src"), 0o600, &bolt.Options{PageSize: pageSize, NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			rng := rand.New(rand.NewPCG(1, uint64(pageSize)))
			fillShapes(t, src, rng)

			dst := filepath.Join(dir, "dst")
			if err := CompactTo(src, dst, 0o600, false); err != nil {
				t.Fatal(err)
			}
			if err := CheckPages(dst); err != nil {
				t.Fatal(err)
			}
			out, err := bolt.Open(dst, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			if got := out.Info().PageSize; got != pageSize {
				t.Errorf("page size %d, want %d", got, pageSize)
			}
			checkBolt(t, out)
			assertSameContent(t, src, out)
			if srcPages, outPages := pagesInUse(t, src), pagesInUse(t, out); outPages > srcPages {
				t.Errorf("the copy uses %d pages, the source %d", outPages, srcPages)
			}

			// Both go on the same way: the copy's pages are bbolt's to change.
			for _, db := range []*bolt.DB{src, out} {
				change := rand.New(rand.NewPCG(2, uint64(pageSize)))
				if err := db.Update(func(tx *bolt.Tx) error { return changeShapes(tx, change) }); err != nil {
					t.Fatal(err)
				}
			}
			checkBolt(t, out)
			assertSameContent(t, src, out)
		})
	}
}

// fillShapes writes the buckets of TestCompactToCopiesEveryShape to db, and
// deletes some of what it wrote, so that db has free pages.
func fillShapes(t *testing.T, db *bolt.DB, rng *rand.Rand) {
	t.Helper()
	err := db.Update(func(tx *bolt.Tx) error {
		small, err := tx.CreateBucket([]byte("small"))
		if err != nil {
			return err
		}
		for i := range 30000 {
			if err := small.Put(fmt.Appendf(nil, "%08d", i), make([]byte, rng.IntN(600))); err != nil {
				return err
			}
		}
		big, err := tx.CreateBucket([]byte("big"))
		if err != nil {
			return err
		}
		for i := range 200 {
			v := make([]byte, 1000+rng.IntN(40000))
			fillRandom(rng, v)
			if err := big.Put(fmt.Appendf(nil, "%04d", i), v); err != nil {
				return err
			}
		}
		long, err := tx.CreateBucket([]byte("long keys"))
		if err != nil {
			return err
		}
		for i := range 3000 {
			k := append(fmt.Appendf(nil, "%06d", i), bytes.Repeat([]byte{'k'}, rng.IntN(3000))...)
			if err := long.Put(k, []byte("v")); err != nil {
				return err
			}
		}
		if _, err := tx.CreateBucket([]byte("empty")); err != nil {
			return err
		}
		tiny, err := tx.CreateBucket([]byte("tiny"))
		if err != nil {
			return err
		}
		if err := tiny.Put([]byte("nothing"), []byte{}); err != nil {
			return err
		}
		if err := tiny.SetSequence(77); err != nil {
			return err
		}
		nest := tx.Bucket([]byte("small"))
		for depth := range 3 {
			if nest, err = nest.CreateBucket(fmt.Appendf(nil, "nested-%d", depth)); err != nil {
				return err
			}
			if err := nest.SetSequence(uint64(depth + 1)); err != nil {
				return err
			}
			for i := range 50 * (depth + 1) {
				if err := nest.Put(fmt.Appendf(nil, "n%03d", i), bytes.Repeat([]byte{byte(depth)}, 100)); err != nil {
					return err
				}
			}
		}
		// A bucket small enough to be kept inline, beside keys.
		inline, err := tx.Bucket([]byte("big")).CreateBucket([]byte("0100-inline"))
		if err != nil {
			return err
		}
		return inline.Put([]byte("a"), []byte("b"))
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		small := tx.Bucket([]byte("small"))
		for i := 0; i < 30000; i += 3 {
			if err := small.Delete(fmt.Appendf(nil, "%08d", i)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// changeShapes puts, overwrites and deletes keys across the buckets of
// fillShapes and adds a bucket, the same way for the same rng.
func changeShapes(tx *bolt.Tx, rng *rand.Rand) error {
	for _, name := range []string{"small", "big", "long keys", "empty", "tiny"} {
		b := tx.Bucket([]byte(name))
		c := b.Cursor()
		n := 0
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v != nil && rng.IntN(4) == 0 {
				if err := c.Delete(); err != nil {
					return err
				}
			}
			n++
		}
		for i := range 200 + n/10 {
			if err := b.Put(fmt.Appendf(nil, "%08d-new-%d", rng.IntN(30000), i), make([]byte, rng.IntN(3000))); err != nil {
				return err
			}
		}
	}
	added, err := tx.CreateBucket([]byte("added"))
	if err != nil {
		return err
	}
	return added.Put([]byte("k"), []byte("v"))
}

func fillRandom(rng *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}

// checkBolt fails t with the problems bbolt's own check finds in db.
func checkBolt(t *testing.T, db *bolt.DB) {
	t.Helper()
	err := db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			t.Error(err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// pagesInUse is the number of pages of db that are not free.
func pagesInUse(t *testing.T, db *bolt.DB) int {
	t.Helper()
	fi, err := os.Stat(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	return int(SizeInUse(db, fi.Size()) / int64(db.Info().PageSize))
}

// assertSameContent fails t unless a and b hold the same buckets, nested
// buckets, sequences, keys and values.
func assertSameContent(t *testing.T, a, b *bolt.DB) {
	t.Helper()
	want, got := dumpContent(t, a), dumpContent(t, b)
	if len(want) != len(got) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("entry %d is %.200q, want %.200q", i, got[i], want[i])
		}
	}
}

// dumpContent lists every bucket (path and sequence) and key (path, key,
// value) of db, in order.
func dumpContent(t *testing.T, db *bolt.DB) []string {
	t.Helper()
	var out []string
	var walk func(path string, b *bolt.Bucket)
	walk = func(path string, b *bolt.Bucket) {
		out = append(out, fmt.Sprintf("bucket %q seq %d", path, b.Sequence()))
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v == nil {
				walk(path+"/"+string(k), b.Bucket(k))
				continue
			}
			out = append(out, fmt.Sprintf("%q %q = %q", path, k, v))
		}
	}
	err := db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			walk(string(name), b)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
