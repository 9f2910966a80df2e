// Package term says whether the commands write to a terminal, where they
// show progress that would only clutter a file or a pipe. It imports no
// cairn package.
package term

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// IsTerminal says whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
