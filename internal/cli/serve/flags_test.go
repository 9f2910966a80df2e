package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"
)

// serveConfigFrom parses args as `cairn serve` does, with the log going to
// a file whose text it returns.
func serveConfigFrom(t *testing.T, args ...string) (log string, cfgErr error) {
	t.Helper()
	logFile := filepath.Join(t.TempDir(), "log")
	cmd := NewCommand()
	if err := cmd.ParseFlags(append([]string{"--log-outputs", logFile}, args...)); err != nil {
		t.Fatal(err)
	}
	_, cfgErr = serveConfig(cmd, viper.New())
	data, _ := os.ReadFile(logFile)
	return string(data), cfgErr
}

// TestServeEtcdFlagChecks: the values etcd refuses are refused with its
// messages; the flags that have no effect in cairn are accepted and said so.
func TestServeEtcdFlagChecks(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--v2-deprecation", "bad"}, `invalid value "bad" for flag -v2-deprecation: invalid value "bad"`},
		{[]string{"--v2-deprecation", "not-yet"}, `invalid value "not-yet" for flag -v2-deprecation: invalid value "not-yet"`},
		{[]string{"--discovery-fallback", "proxy"}, `v2 proxy is deprecated, and --discovery-fallback can't be configured as "proxy"`},
		{[]string{"--discovery-fallback", "bad"}, `invalid value "bad" for flag -discovery-fallback: invalid value`},
		{[]string{"--cors", "a.com"}, `invalid value "a.com" for flag -cors: URL scheme must be http, https, unix, or unixs: a.com`},
		{[]string{"--cors", "http://a.com"}, `invalid value "http://a.com" for flag -cors: URL address does not have the form "host:port": http://a.com`},
		{[]string{"--listen-client-http-urls", "bad"}, `invalid value "bad" for flag -listen-client-http-urls: URL scheme must be http, https, unix, or unixs: bad`},
		{[]string{"--discovery-token", "x"}, "both --discovery-token and --discovery-endpoints must be set"},
		{[]string{"--initial-cluster", "default=http://127.0.0.1:2380", "--discovery-srv", "example.com"}, "multiple discovery or bootstrap flags are set"},
		{[]string{"--enable-log-rotation"}, "--log-outputs requires a single file path when --log-rotate-config-json is defined"},
		{[]string{"--enable-distributed-tracing", "--distributed-tracing-sampling-rate", "2000000"}, "tracing sampling rate must be less than 1000000"},
		{[]string{"--max-learners", "-1"}, "membership: too many learner members in cluster"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := NewCommand()
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			_, err := serveConfig(cmd, viper.New())
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v, want %q", err, tc.err)
			}
		})
	}
	log, err := serveConfigFrom(t, "--raft-read-timeout", "3s", "--max-snapshots", "3", "--v2-deprecation", "gone")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--raft-read-timeout has no effect in cairn", "--max-snapshots is deprecated in 3.6",
		"--v2-deprecation is deprecated and scheduled for removal in v3.8"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// TestServeEtcdFlagsReachTheConfig: the flags cairn implements reach the
// member's configuration.
func TestServeEtcdFlagsReachTheConfig(t *testing.T) {
	cmd := NewCommand()
	if err := cmd.ParseFlags([]string{"--wal-dir", "/w", "--force-new-cluster", "--max-wals", "0", "--max-learners", "0",
		"--pre-vote=false", "--watch-progress-notify-interval", "2s", "--max-concurrent-streams", "7", "--grpc-keepalive-interval", "0",
		"--cors", "http://a.com:80,*", "--listen-client-http-urls", "http://127.0.0.1:3000", "--socket-reuse-port",
		"--client-crl-file", "c.crl", "--peer-cert-allowed-hostname", "a,b", "--compaction-batch-limit", "9", "--unsafe-no-fsync"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := serveConfig(cmd, viper.New())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.WALDir != "/w" || !cfg.ForceNewCluster || cfg.MaxWALs != 0 || cfg.MaxSnapshots != 5 || cfg.LearnerLimit() != 0 || !cfg.NoPreVote ||
		cfg.WatchProgressNotifyInterval != 2*time.Second || cfg.MaxConcurrentStreams != 7 || cfg.GRPCKeepAliveInterval != 0 ||
		cfg.GRPCKeepAliveMinTime != 5*time.Second || len(cfg.CORS) != 2 || len(cfg.ListenClientHTTPURLs) != 1 || !cfg.Listen.ReusePort ||
		cfg.ClientTLS.CRLFile != "c.crl" || len(cfg.PeerTLS.AllowedHostnames) != 2 || cfg.CompactionBatchLimit != 9 || !cfg.UnsafeNoFsync {
		t.Errorf("config %+v", cfg)
	}
}

// TestServeConfigFileAsEtcds: etcd's YAML, with its security sections and
// its sample's v2 proxy keys, is read; a key that names nothing is an
// error that names it.
func TestServeConfigFileAsEtcds(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "etcd.yml")
	yaml := `name: 'm1'
data-dir:
wal-dir: /tmp/w
heartbeat-interval: 100
max-wals: 3
cors:
proxy: 'off'
proxy-dial-timeout: 1000
discovery-fallback: 'proxy'
watch-progress-notify-interval: 600000000000
log-outputs: [stderr]
client-transport-security:
  cert-file:
  client-cert-auth: false
peer-transport-security:
  cert-file: p.pem
  key-file: p-key.pem
  allowed-cn: example.com
  crl-file: p.crl
force-new-cluster: false
`
	if err := os.WriteFile(good, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := NewCommand()
	if err := cmd.ParseFlags([]string{"--config-file", good}); err != nil {
		t.Fatal(err)
	}
	cfg, err := serveConfig(cmd, viper.New())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "m1" || cfg.DataDir != "m1.cairn" || cfg.WALDir != "/tmp/w" || cfg.MaxWALs != 3 || cfg.WatchProgressNotifyInterval != 10*time.Minute ||
		cfg.PeerTLS.CertFile != "p.pem" || cfg.PeerTLS.CRLFile != "p.crl" || len(cfg.PeerTLS.AllowedCNs) != 1 || len(cfg.CORS) != 1 {
		t.Errorf("config %+v", cfg)
	}
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte("name: m1\nsnapshot-cuont: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := serveConfigFrom(t, "--config-file", bad); err == nil || !strings.Contains(err.Error(), `unknown key "snapshot-cuont"`) {
		t.Errorf("unknown key: %v", err)
	}
}

// TestServeUsesDefaultEtcdDataDir: without --data-dir, default.etcd is used
// where it exists and default.cairn does not, and the log says so.
func TestServeUsesDefaultEtcdDataDir(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.Mkdir("default.etcd", 0o700); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "log")
	cmd := NewCommand()
	if err := cmd.ParseFlags([]string{"--log-outputs", logFile}); err != nil {
		t.Fatal(err)
	}
	cfg, err := serveConfig(cmd, viper.New())
	if err != nil {
		t.Fatal(err)
	}
	log, _ := os.ReadFile(logFile)
	if cfg.DataDir != "default.etcd" || !strings.Contains(string(log), `"data-dir":"default.etcd"`) {
		t.Errorf("data dir %q; log:\n%s", cfg.DataDir, log)
	}
	if err := os.Mkdir("default.cairn", 0o700); err != nil {
		t.Fatal(err)
	}
	if cfg, err = serveConfig(NewCommand(), viper.New()); err != nil || cfg.DataDir != "default.cairn" {
		t.Errorf("with default.cairn too: data dir %q, %v", cfg.DataDir, err)
	}
}
