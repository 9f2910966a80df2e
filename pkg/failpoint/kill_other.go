//go:build failpoints && !unix

package failpoint

import "os"

// crash ends the process at once (TerminateProcess on Windows).
func crash() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Kill()
	}
	select {}
}
