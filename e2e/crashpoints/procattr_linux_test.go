//go:build failpoints && linux

package crashpoints

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes the kernel kill the member if the test process dies
// first (a -timeout panic runs no cleanup).
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
