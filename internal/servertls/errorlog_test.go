package servertls

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestErrorLog: a refused handshake is logged as etcd logs it; any other
// line of the HTTP server as it is, as a warning.
func TestErrorLog(t *testing.T) {
	var buf bytes.Buffer
	lg := ErrorLog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})), "peer")
	lg.Printf("http: TLS handshake error from 127.0.0.1:4242: tls: client didn't provide a certificate")
	lg.Printf("http: superfluous response.WriteHeader call")
	want := `level=WARN msg="rejected connection on peer endpoint" remote-addr=127.0.0.1:4242 server-name="" error="tls: client didn't provide a certificate"
level=WARN msg="http: superfluous response.WriteHeader call"
`
	if got := buf.String(); got != want {
		t.Errorf("logged:\n%s\nwant:\n%s", got, want)
	}
	if strings.Count(buf.String(), "\n") != 2 {
		t.Error("not one line per message")
	}
}
