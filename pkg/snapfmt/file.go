package snapfmt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

const (
	tmpExt   = ".tmp"
	fileMode = 0o600
)

// Read reads and checks the .snap file at path. When the name parses, the
// snapshot's term and index must match it (ErrNameMismatch).
func Read(path string) (*raftpb.Snapshot, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read snap %s: %w", path, err)
	}
	snap, err := Unmarshal(b)
	if err != nil {
		return nil, fmt.Errorf("read snap %s (%d bytes): %w", path, len(b), err)
	}
	if term, index, err := ParseFileName(filepath.Base(path)); err == nil {
		md := snap.GetMetadata()
		if md.GetTerm() != term || md.GetIndex() != index {
			return nil, fmt.Errorf("read snap %s: %w: snapshot has term %d index %d",
				path, ErrNameMismatch, md.GetTerm(), md.GetIndex())
		}
	}
	return snap, nil
}

// Write saves snap in dir as FileName(term, index): it writes NAME.tmp,
// fsyncs it, renames it into place and fsyncs dir, so the file is either
// absent or complete. It returns the file's path. A snapshot at index 0
// (raft's empty snapshot) is refused.
func Write(dir string, snap *raftpb.Snapshot) (string, error) {
	path, _, err := WriteTimed(dir, snap)
	return path, err
}

// Timings are how long the parts of a Write took: encoding the snapshot,
// and the fsync of the file.
type Timings struct{ Marshal, Fsync time.Duration }

// WriteTimed is Write, and also tells how long its parts took (metrics).
func WriteTimed(dir string, snap *raftpb.Snapshot) (string, Timings, error) {
	var tm Timings
	md := snap.GetMetadata()
	if md.GetIndex() == 0 {
		return "", tm, fmt.Errorf("write snap in %s: empty snapshot (index 0)", dir)
	}
	path := filepath.Join(dir, FileName(md.GetTerm(), md.GetIndex()))
	start := time.Now()
	b, err := Marshal(snap)
	tm.Marshal = time.Since(start)
	if err != nil {
		return "", tm, fmt.Errorf("write snap %s: %w", path, err)
	}
	if err := writeFileAtomic(path, b, &tm.Fsync); err != nil {
		return "", tm, fmt.Errorf("write snap %s: %w", path, err)
	}
	return path, tm, nil
}

// writeFileAtomic writes b to path through path.tmp, with fsyncs; the
// file's fsync took fsync.
func writeFileAtomic(path string, b []byte, fsync *time.Duration) error {
	tmp := path + tmpExt
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fileMode)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		start := time.Now()
		err = f.Sync()
		*fsync = time.Since(start)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

// LoadNewest returns the newest .snap file in dir that reads without error,
// and the newer or badly named ones passed over on the way, with the reason.
// It fails with ErrNoSnapshot when no file is valid.
func LoadNewest(dir string) (*raftpb.Snapshot, File, []Skipped, error) {
	files, skipped, err := List(dir)
	if err != nil {
		return nil, File{}, nil, err
	}
	for i := len(files) - 1; i >= 0; i-- {
		snap, err := Read(files[i].Path)
		if err == nil {
			return snap, files[i], skipped, nil
		}
		skipped = append(skipped, Skipped{Path: files[i].Path, Err: err})
	}
	return nil, File{}, skipped, fmt.Errorf("load snap from %s: %w (%d files skipped)", dir, ErrNoSnapshot, len(skipped))
}

// Purge removes all but the newest keep .snap files in dir and returns the
// paths removed, oldest first. Files with bad names are left alone.
func Purge(dir string, keep int) ([]string, error) {
	files, _, err := List(dir)
	if err != nil {
		return nil, err
	}
	if keep < 0 {
		keep = 0
	}
	var removed []string
	for i := 0; i < len(files)-keep; i++ {
		if err := os.Remove(files[i].Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, fmt.Errorf("purge snap %s: %w", files[i].Path, err)
		}
		removed = append(removed, files[i].Path)
	}
	if len(removed) > 0 {
		if err := syncDir(dir); err != nil {
			return removed, fmt.Errorf("purge snap in %s: %w", dir, err)
		}
	}
	return removed, nil
}

// syncDir fsyncs a directory so that renames and removals in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
