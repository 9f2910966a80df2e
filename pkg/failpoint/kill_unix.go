//go:build failpoints && unix

package failpoint

import (
	"os"
	"syscall"
)

// crash kills the process with SIGKILL, which cannot be caught.
func crash() {
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way: run nothing more
}
