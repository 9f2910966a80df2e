// Package cmderr is the errors of cairn's commands and the exit codes they
// end with, as etcdctl's: a command returns an error made here, and the
// root reports it on one line of stderr and exits with its code. It
// imports only the standard library, so that every command package can
// use it.
package cmderr

import (
	"errors"
	"fmt"
	"io"
)

// Exit codes, as etcdctl uses them.
const (
	ExitError         = 1
	ExitBadConnection = 2
	ExitInvalidInput  = 3
	ExitBadFeature    = 4
	ExitInterrupted   = 5
	ExitBadArgs       = 128
)

// codedError is an error that ends the command with a given exit code.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// WithCode gives err an exit code other than the default 1.
func WithCode(code int, err error) error {
	return &codedError{code: code, err: err}
}

// BadArgs is an error in the command's arguments or flags.
func BadArgs(format string, args ...any) error {
	return WithCode(ExitBadArgs, fmt.Errorf(format, args...))
}

// InvalidInput is an error in what the command read from its input.
func InvalidInput(err error) error {
	return WithCode(ExitInvalidInput, err)
}

// ErrSilent ends a command with exit code 1 without a message: the
// command has already said what went wrong.
var ErrSilent = errors.New("")

// Report writes a command's error on one line of w, as etcdctl does,
// and returns the exit code for it.
func Report(w io.Writer, err error) int {
	if !errors.Is(err, ErrSilent) {
		fmt.Fprintf(w, "Error: %v\n", err)
	}
	return ExitCode(err)
}

// ExitCode is the process exit code for an error returned by a command.
func ExitCode(err error) int {
	var coded *codedError
	if errors.As(err, &coded) {
		return coded.code
	}
	return ExitError
}
