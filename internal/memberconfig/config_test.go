package memberconfig

import (
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/featuregate"
)

func TestConfigDefaultsAreEtcds(t *testing.T) {
	c := Config{}.WithDefaults()
	if c.Name != "default" || c.DataDir != "default.cairn" || c.ListenClientURLs[0] != "http://127.0.0.1:2379" ||
		c.ListenPeerURLs[0] != "http://127.0.0.1:2380" || c.InitialCluster != "default=http://127.0.0.1:2380" ||
		c.SnapshotCount != 10000 || c.HeartbeatInterval != 100*time.Millisecond || c.ElectionTimeout != time.Second ||
		c.MaxRequestBytes != 1536*1024 || c.MaxTxnOps != 128 || c.QuotaBackendBytes != 2<<30 {
		t.Errorf("defaults: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("the defaults do not validate: %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	base := Config{Name: "m1", InitialCluster: "m1=http://127.0.0.1:2380,m2=http://127.0.0.1:22380"}
	cases := map[string]struct {
		change func(*Config)
		want   string
	}{
		"unknown cluster state": {func(c *Config) { c.InitialClusterState = "maybe" }, "--initial-cluster-state"},
		"name not in cluster":   {func(c *Config) { c.Name = "m9" }, "no member named"},
		"bad URL":               {func(c *Config) { c.ListenClientURLs = []string{"ftp://x:2379"} }, "scheme"},
		"election too short":    {func(c *Config) { c.ElectionTimeout = 200 * time.Millisecond }, "--election-timeout"},
		"peer URLs disagree":    {func(c *Config) { c.InitialAdvertisePeerURLs = []string{"http://127.0.0.1:9999"} }, "--initial-advertise-peer-urls"},
		"bad retention":         {func(c *Config) { c.AutoCompactionMode = "revision"; c.AutoCompactionRetention = "1h" }, "--auto-compaction-retention"},
		"https client without a certificate": {func(c *Config) { c.ListenClientURLs = []string{"https://127.0.0.1:2379"} },
			"TLS key/cert (--cert-file, --key-file) must be provided for client url https://127.0.0.1:2379 with HTTPS scheme"},
		"https peer without a certificate": {func(c *Config) { c.ListenPeerURLs = []string{"https://127.0.0.1:2380"} },
			"TLS key/cert (--peer-cert-file, --peer-key-file) must be provided for peer url https://127.0.0.1:2380 with HTTPS scheme"},
		"certificate without its key": {func(c *Config) { c.ClientTLS.CertFile = "server.pem" }, "--key-file and --cert-file must both be present"},
		"bad TLS version":             {func(c *Config) { c.TLS.Min = "TLS1.1" }, `unexpected TLS version "TLS1.1"`},
		"unknown metrics level":       {func(c *Config) { c.Metrics = "verbose" }, "--metrics"},
		"bad metrics URL":             {func(c *Config) { c.ListenMetricsURLs = []string{"ftp://x:2381"} }, "--listen-metrics-urls"},
		"https metrics without a certificate": {func(c *Config) { c.ListenMetricsURLs = []string{"https://127.0.0.1:2381"} },
			"client TLS key/cert (--cert-file, --key-file) must be provided for metrics secure url"},
	}
	for name, tc := range cases {
		c := base
		tc.change(&c)
		c = c.WithDefaults()
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %s", name, err, tc.want)
		}
	}
}

// TestQuotaPastTheMaximumIsValid: etcd 3.7.3 starts with a quota past 8
// GiB, and warns (logStart); a member whose etcd ran with one must start.
func TestQuotaPastTheMaximumIsValid(t *testing.T) {
	c := Config{QuotaBackendBytes: 16 << 30}.WithDefaults()
	if err := c.Validate(); err != nil {
		t.Errorf("a quota of 16 GiB: %v", err)
	}
}

func TestHTTPSWithAutoTLSIsValid(t *testing.T) {
	c := Config{ListenClientURLs: []string{"https://127.0.0.1:2379"}, ListenPeerURLs: []string{"https://127.0.0.1:2380"}}
	c.ClientTLS.AutoTLS, c.PeerTLS.AutoTLS = true, true
	if err := c.WithDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestPeerLocalIP: with the SetMemberLocalAddr gate, connections to peers
// start from the IP of the advertised peer URL (none for a name or 0.0.0.0).
func TestPeerLocalIP(t *testing.T) {
	gate, err := featuregate.Parse("SetMemberLocalAddr=true")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		features featuregate.Gates
		url      string
		want     string
	}{
		{gate, "https://10.1.2.3:2380", "10.1.2.3"},
		{nil, "https://10.1.2.3:2380", "<nil>"},
		{gate, "https://0.0.0.0:2380", "<nil>"},
		{gate, "https://peer.example:2380", "<nil>"},
	} {
		c := Config{Features: tc.features, InitialAdvertisePeerURLs: []string{tc.url}}
		if got := c.PeerLocalIP().String(); got != tc.want {
			t.Errorf("%s, gate %v: %s, want %s", tc.url, tc.features, got, tc.want)
		}
	}
}
