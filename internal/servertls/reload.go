package servertls

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// checkEvery is how often at most a reloader reads its files again.
const checkEvery = time.Second

// now is the reloaders' clock; tests move it on rather than wait.
var now = time.Now

// reloader is a value parsed from files (a certificate and its key, a CA
// bundle, a CRL) and parsed again when they change on disk, so that
// rotated files are taken without a restart. The files are read again
// when a handshake asks for the value, at most once per checkEvery: no
// goroutine of its own, which nothing would stop. Their contents are
// compared rather than os.Stat's size and mtime, which a rewrite in place
// within one tick of the file system's clock can leave unchanged; the
// files are a few kilobytes.
type reloader[T any] struct {
	log   *slog.Logger
	flags []string // the flags that name paths, for the log
	paths []string
	// parse turns the contents of paths, or the error reading them, into
	// a value, or into an error in the words of the start-up checks.
	parse func(contents [][]byte, readErr error) (T, error)

	mu      sync.Mutex
	value   T        // parsed from the last good contents
	seen    [][]byte // the contents last read, good or bad
	checked time.Time
}

// newReloader reads and parses the files; an error is returned as it is,
// for the start to fail with it.
func newReloader[T any](log *slog.Logger, flags, paths []string, parse func([][]byte, error) (T, error)) (*reloader[T], error) {
	r := &reloader[T]{log: log, flags: flags, paths: paths, parse: parse, checked: now()}
	contents, err := readFiles(paths)
	if r.value, err = parse(contents, err); err != nil {
		return nil, err
	}
	r.seen = contents
	return r, nil
}

// current is the value of the files as they were checkEvery ago at most.
// New contents that cannot be parsed (a half-written file, a certificate
// whose new key is not there yet) leave the previous value in use and are
// logged once, not at every handshake; the next change is tried again.
func (r *reloader[T]) current() T {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := now()
	if t.Sub(r.checked) < checkEvery {
		return r.value
	}
	r.checked = t
	contents, readErr := readFiles(r.paths)
	var flags, paths []string
	for i := range contents {
		if !bytes.Equal(contents[i], r.seen[i]) || (contents[i] == nil) != (r.seen[i] == nil) {
			flags, paths = append(flags, r.flags[i]), append(paths, r.paths[i])
		}
	}
	if len(paths) == 0 {
		return r.value
	}
	r.seen = contents
	attrs := []any{"flag", strings.Join(flags, ", "), "file", strings.Join(paths, ", ")}
	v, err := r.parse(contents, readErr)
	if err != nil {
		r.log.Warn("TLS file changed but cannot be used; the previous one stays in use", append(attrs, "error", err)...)
		return r.value
	}
	r.value = v
	r.log.Info("reloaded TLS file", attrs...)
	return r.value
}

// readFiles returns the contents of paths, nil for those that cannot be
// read, and the first error.
func readFiles(paths []string) ([][]byte, error) {
	contents := make([][]byte, len(paths))
	var first error
	for i, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		contents[i] = data
	}
	return contents, first
}
