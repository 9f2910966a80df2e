package walfmt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
)

// Create makes a new WAL in dir (which must not exist or be empty) with the
// first segment 0000000000000000-0000000000000000.wal holding a crc record
// (crc 0), the metadata record and an empty snapshot record. The directory is
// built as dir.tmp and renamed into place, so a crash leaves either no WAL or
// a complete one. The returned Writer appends after those records. etcd
// sets both fields of the metadata, and so should the caller.
func Create(dir string, md *etcdserverpb.Metadata, opts Options) (*Writer, error) {
	mdBytes, err := proto.Marshal(md)
	if err != nil {
		return nil, fmt.Errorf("create wal %s: marshal metadata: %w", dir, err)
	}
	if err := ensureAbsentOrEmpty(dir); err != nil {
		return nil, fmt.Errorf("create wal %s: %w", dir, err)
	}
	tmpDir := filepath.Clean(dir) + tmpExt
	if err := os.RemoveAll(tmpDir); err != nil {
		return nil, fmt.Errorf("create wal %s: %w", dir, err)
	}
	if err := os.MkdirAll(tmpDir, dirMode); err != nil {
		return nil, fmt.Errorf("create wal %s: %w", dir, err)
	}
	w := &Writer{dir: dir, opts: opts, metadata: mdBytes}
	first := SegmentName(0, 0)
	if err := w.startSegment(filepath.Join(tmpDir, first), 0, 0); err != nil {
		w.closeFiles()
		_ = os.RemoveAll(tmpDir)
		return nil, fmt.Errorf("create wal %s: %w", dir, err)
	}
	if err := os.Rename(tmpDir, dir); err != nil {
		w.closeFiles()
		_ = os.RemoveAll(tmpDir)
		return nil, fmt.Errorf("create wal %s: %w", dir, err)
	}
	w.segs[0].Path = filepath.Join(dir, first)
	if err := syncDir(filepath.Dir(filepath.Clean(dir))); err != nil {
		w.closeFiles()
		return nil, fmt.Errorf("create wal %s: %w", dir, err)
	}
	return w, nil
}

func ensureAbsentOrEmpty(dir string) error {
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return os.MkdirAll(filepath.Dir(filepath.Clean(dir)), dirMode)
	case err != nil:
		return err
	case len(ents) > 0:
		return fmt.Errorf("directory is not empty: %w", os.ErrExist)
	}
	return os.Remove(dir)
}
