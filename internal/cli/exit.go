package cli

import (
	"errors"
	"fmt"
	"io"
)

// Exit codes, as etcdctl uses them.
const (
	exitError         = 1
	exitBadConnection = 2
	exitInvalidInput  = 3
	exitBadFeature    = 4
	exitInterrupted   = 5
	exitBadArgs       = 128
)

// codedError is an error that ends the command with a given exit code.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// withCode gives err an exit code other than the default 1.
func withCode(code int, err error) error {
	return &codedError{code: code, err: err}
}

// badArgs is an error in the command's arguments or flags.
func badArgs(format string, args ...any) error {
	return withCode(exitBadArgs, fmt.Errorf(format, args...))
}

// invalidInput is an error in what the command read from its input.
func invalidInput(err error) error {
	return withCode(exitInvalidInput, err)
}

// errSilent ends a command with exit code 1 without a message: the
// command has already said what went wrong.
var errSilent = errors.New("")

// reportError writes a command's error on one line of w, as etcdctl does,
// and returns the exit code for it.
func reportError(w io.Writer, err error) int {
	if !errors.Is(err, errSilent) {
		fmt.Fprintf(w, "Error: %v\n", err)
	}
	return exitCode(err)
}

// exitCode is the process exit code for an error returned by a command.
func exitCode(err error) int {
	var coded *codedError
	if errors.As(err, &coded) {
		return coded.code
	}
	return exitError
}
