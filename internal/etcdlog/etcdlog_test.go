package etcdlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestJSONLinesAsEtcd: the keys etcd's lines start with, in etcd's order,
// zap's level names and timestamp, a short caller, then the fields.
func TestJSONLinesAsEtcd(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewHandler(&buf, JSON, slog.LevelInfo)).With("local-member-id", "8e9e05c52164694d")
	log.Debug("not shown")
	log.Warn("lost TCP streaming connection with remote peer", "remote-peer-id", "fd422379fda50e48",
		"error", errors.New("EOF \"quoted\"\n"), "timeout", 7*time.Second, "urls", []string{"http://a"}, "n", 3)
	line := buf.String()
	if strings.Count(line, "\n") != 1 {
		t.Fatalf("want one line: %q", line)
	}
	re := regexp.MustCompile(`^\{"level":"warn","ts":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z","caller":"etcdlog/etcdlog_test\.go:\d+","msg":"lost TCP streaming connection with remote peer",`)
	if !re.MatchString(line) {
		t.Errorf("line %s", line)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"local-member-id": "8e9e05c52164694d", "remote-peer-id": "fd422379fda50e48",
		"error": "EOF \"quoted\"\n", "timeout": "7s", "n": float64(3)}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %#v, want %#v", k, m[k], v)
		}
	}
	if urls, _ := m["urls"].([]any); len(urls) != 1 || urls[0] != "http://a" {
		t.Errorf("urls = %#v", m["urls"])
	}
}

// TestConsoleLines: zap's console layout, tab-separated, fields as JSON.
func TestConsoleLines(t *testing.T) {
	var buf bytes.Buffer
	slog.New(NewHandler(&buf, Console, slog.LevelInfo)).Info("ready to serve client requests", "name", "default")
	f := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\t")
	if len(f) != 5 || f[1] != "info" || !strings.HasPrefix(f[2], "etcdlog/") || f[3] != "ready to serve client requests" || f[4] != `{"name":"default"}` {
		t.Errorf("console line %q", f)
	}
}

func TestParseFlags(t *testing.T) {
	if _, err := ParseFormat("text"); err == nil || err.Error() != "unknown log format: text, supported values json, console" {
		t.Errorf("format text: %v", err)
	}
	if _, err := ParseLevel("verbose"); err == nil || err.Error() != `unrecognized level: "verbose"` {
		t.Errorf("level verbose: %v", err)
	}
	if l, err := ParseLevel("warn"); err != nil || l != slog.LevelWarn {
		t.Errorf("level warn: %v %v", l, err)
	}
}
