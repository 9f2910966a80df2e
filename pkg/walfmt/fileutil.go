package walfmt

import (
	"fmt"
	"os"
	"path/filepath"
)

// syncDir fsyncs a directory so that file creations, renames and removals in
// it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// preallocate gives f at least size bytes, reading as zeros past the data.
func preallocate(f *os.File, size int64) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() >= size {
		return nil
	}
	if err := fallocate(f, size); err == nil {
		return nil
	}
	return f.Truncate(size)
}

// removeTempFiles removes the *.wal.tmp files an interrupted segment cut left behind.
func removeTempFiles(dir string) error {
	tmps, err := filepath.Glob(filepath.Join(dir, "*"+SegmentExt+tmpExt))
	if err != nil {
		return err
	}
	for _, p := range tmps {
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	return nil
}
