package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// readPassword prompts on stderr and reads one line from stdin, without
// echoing it when stdin is a terminal.
func readPassword(cmd *cobra.Command, prompt string) (string, error) {
	fmt.Fprint(cmd.ErrOrStderr(), prompt)
	in := cmd.InOrStdin()
	if f, ok := in.(*os.File); ok {
		if restore, err := disableEcho(int(f.Fd())); err == nil {
			defer func() {
				restore()
				fmt.Fprintln(cmd.ErrOrStderr())
			}()
		}
	}
	return readLine(in)
}

// readLine reads one line of r, without its line ending. It reads a byte
// at a time so as not to consume what follows the line.
func readLine(r io.Reader) (string, error) {
	var line []byte
	var b [1]byte
	for {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			if err == io.EOF && len(line) > 0 {
				break
			}
			return "", err
		}
		if b[0] == '\n' {
			break
		}
		line = append(line, b[0])
	}
	return strings.TrimSuffix(string(line), "\r"), nil
}

// disableEcho turns off terminal echo on fd and returns how to restore it;
// it fails when fd is not a terminal.
func disableEcho(fd int) (func(), error) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON | unix.ISIG
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &quiet); err != nil {
		return nil, err
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}
