package servertls

import (
	"log"
	"log/slog"
	"strings"
)

// ErrorLog is the error log of an HTTP server that serves one endpoint
// ("client", "peer", "metrics"): what it logs goes to lg as warnings, and
// a refused TLS handshake as etcd logs it, "rejected connection on client
// endpoint" with the remote address and the error, the line that operators
// and etcd's tests look for.
func ErrorLog(lg *slog.Logger, endpoint string) *log.Logger {
	return log.New(errorLogWriter{lg: lg, endpoint: endpoint}, "", 0)
}

type errorLogWriter struct {
	lg       *slog.Logger
	endpoint string
}

// handshakeError starts net/http's line for a failed TLS handshake:
// "http: TLS handshake error from ADDR: ERROR".
const handshakeError = "http: TLS handshake error from "

func (w errorLogWriter) Write(p []byte) (int, error) {
	line := strings.TrimSuffix(string(p), "\n")
	if rest, ok := strings.CutPrefix(line, handshakeError); ok {
		if addr, err, ok := strings.Cut(rest, ": "); ok {
			w.lg.Warn("rejected connection on "+w.endpoint+" endpoint", "remote-addr", addr, "server-name", "", "error", err)
			return len(p), nil
		}
	}
	w.lg.Warn(line)
	return len(p), nil
}
