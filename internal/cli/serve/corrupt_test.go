package serve

import (
	"testing"
	"time"

	"github.com/spf13/viper"
)

// TestServeCorruptCheckFlags: --corrupt-check-time and
// --compact-hash-check-time have etcd 3.7.3's defaults (0s: off, and 1m)
// and help texts, and reach the member's configuration from the command
// line and from CAIRN_* variables.
func TestServeCorruptCheckFlags(t *testing.T) {
	cmd := NewCommand()
	for _, f := range []struct{ name, def, usage string }{
		{"corrupt-check-time", "0s", "Duration of time between cluster corruption check passes."},
		{"compact-hash-check-time", "1m0s", "Duration of time between leader checks followers compaction hashes."},
	} {
		flag := cmd.Flags().Lookup(f.name)
		if flag == nil {
			t.Fatalf("no --%s", f.name)
		}
		if flag.DefValue != f.def || flag.Usage != f.usage {
			t.Errorf("--%s: default %q, usage %q; want %q, %q", f.name, flag.DefValue, flag.Usage, f.def, f.usage)
		}
	}
	cfg, err := serveConfig(cmd, viper.New())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CorruptCheckTime != 0 || cfg.CompactHashCheckTime != time.Minute {
		t.Errorf("defaults: %v, %v; want 0s, 1m", cfg.CorruptCheckTime, cfg.CompactHashCheckTime)
	}
	t.Setenv("CAIRN_COMPACT_HASH_CHECK_TIME", "30s")
	cmd = NewCommand()
	if err := cmd.ParseFlags([]string{"--corrupt-check-time", "5s"}); err != nil {
		t.Fatal(err)
	}
	if cfg, err = serveConfig(cmd, viper.New()); err != nil {
		t.Fatal(err)
	}
	if cfg.CorruptCheckTime != 5*time.Second || cfg.CompactHashCheckTime != 30*time.Second {
		t.Errorf("set: %v, %v; want 5s, 30s", cfg.CorruptCheckTime, cfg.CompactHashCheckTime)
	}
}
