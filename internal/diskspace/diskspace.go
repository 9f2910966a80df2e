// Package diskspace tells how much room the filesystems under a member's
// directories have left.
package diskspace

import (
	"fmt"
	"syscall"
)

// Free returns the bytes an unprivileged writer can still write on the
// filesystem of dir (root may have a few more: the filesystem's reserve).
func Free(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// Short is a directory whose filesystem has less room than asked for.
type Short struct {
	Dir        string
	Free, Need uint64
}

// FirstShort returns the first of dirs whose filesystem has less than need
// bytes free; ok is false when all have room. A directory that cannot be
// examined is an error.
func FirstShort(need uint64, dirs ...string) (s Short, ok bool, err error) {
	for _, d := range dirs {
		free, err := Free(d)
		if err != nil {
			return Short{}, false, err
		}
		if free < need {
			return Short{Dir: d, Free: free, Need: need}, true, nil
		}
	}
	return Short{}, false, nil
}
