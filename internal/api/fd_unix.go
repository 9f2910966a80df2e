//go:build unix

package api

import (
	"os"
	"syscall"
)

// fdUsage returns the file descriptors the process has open and its soft
// limit (os_fd_used, os_fd_limit); 0 for what cannot be read.
func fdUsage() (used, limit uint64) {
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		used = uint64(len(fds))
	} else if fds, err := os.ReadDir("/dev/fd"); err == nil {
		used = uint64(len(fds))
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil {
		limit = uint64(rl.Cur)
	}
	return used, limit
}
