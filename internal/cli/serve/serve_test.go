package serve

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/spf13/viper"

	"github.com/cairnkv/cairn/internal/servertls"
)

// TestServeTLSFlagsFromEverySource: the TLS flags reach the member's
// configuration from the command line and CAIRN_* variables alike, or from
// the config file, which, as etcd's, is then the whole configuration.
func TestServeTLSFlagsFromEverySource(t *testing.T) {
	configFile := filepath.Join(t.TempDir(), "cairn.yaml")
	yaml := "peer-cert-file: peer.pem\npeer-key-file: peer-key.pem\npeer-client-cert-auth: true\ncipher-suites: TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256\n" +
		"tls-max-version: TLS1.3\nclient-transport-security:\n  cert-file: c.pem\n  key-file: k.pem\n  crl-file: crl.pem\n"
	if err := os.WriteFile(configFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CAIRN_TRUSTED_CA_FILE", "ca.pem")
	t.Setenv("CAIRN_AUTO_TLS", "true")
	cmd := NewCommand()
	if err := cmd.ParseFlags([]string{"--cert-file", "c.pem", "--key-file", "k.pem",
		"--client-cert-auth", "--tls-max-version", "TLS1.3", "--peer-cert-allowed-cn", "a,b"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := serveConfig(cmd, viper.New())
	if err != nil {
		t.Fatal(err)
	}
	wantClient := servertls.Files{CertFile: "c.pem", KeyFile: "k.pem", TrustedCAFile: "ca.pem", ClientCertAuth: true, AutoTLS: true}
	wantPeer := servertls.Files{AllowedCNs: []string{"a", "b"}, VerifyClientSAN: true}
	if !reflect.DeepEqual(cfg.ClientTLS, wantClient) || !reflect.DeepEqual(cfg.PeerTLS, wantPeer) || cfg.TLS.Max != "TLS1.3" {
		t.Errorf("client TLS %+v, peer TLS %+v, max version %q; want %+v, %+v", cfg.ClientTLS, cfg.PeerTLS, cfg.TLS.Max, wantClient, wantPeer)
	}

	cmd = NewCommand()
	if err := cmd.ParseFlags([]string{"--config-file", configFile, "--name", "ignored"}); err != nil {
		t.Fatal(err)
	}
	if cfg, err = serveConfig(cmd, viper.New()); err != nil {
		t.Fatal(err)
	}
	wantClient = servertls.Files{CertFile: "c.pem", KeyFile: "k.pem", CRLFile: "crl.pem"}
	wantPeer = servertls.Files{CertFile: "peer.pem", KeyFile: "peer-key.pem", ClientCertAuth: true, VerifyClientSAN: true}
	if !reflect.DeepEqual(cfg.ClientTLS, wantClient) || !reflect.DeepEqual(cfg.PeerTLS, wantPeer) || cfg.Name != "default" {
		t.Errorf("from the file: client TLS %+v, peer TLS %+v, name %q; want %+v, %+v and flags and variables ignored", cfg.ClientTLS, cfg.PeerTLS, cfg.Name, wantClient, wantPeer)
	}
	if v := cfg.TLS; v.Min != "TLS1.2" || v.Max != "TLS1.3" || len(v.CipherSuites) != 1 || v.CipherSuites[0] != "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256" {
		t.Errorf("versions %+v", v)
	}
}

// TestServeFlagsFromEtcdVariables: etcd's ETCD_<FLAG> variables set the
// flags (etcd's runbook for adding a member exports them), CAIRN_ ones win
// over them and the command line over both; an ETCD_ variable that names no
// flag is reported.
func TestServeFlagsFromEtcdVariables(t *testing.T) {
	t.Setenv("ETCD_NAME", "m9")
	t.Setenv("ETCD_INITIAL_CLUSTER_STATE", "existing")
	t.Setenv("ETCD_SNAPSHOT_COUNT", "88")
	t.Setenv("CAIRN_SNAPSHOT_COUNT", "77")
	t.Setenv("ETCD_INITIAL_CLUSTER_TOKEN", "from-env")
	t.Setenv("ETCD_WAL_DIR", "/wal")
	t.Setenv("ETCD_PEER_CRL_FILE", "peer.crl")
	t.Setenv("ETCD_MAX_LEARNERS", "2")
	cmd := NewCommand()
	if err := cmd.ParseFlags([]string{"--initial-cluster-token", "from-flag"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := serveConfig(cmd, viper.New())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "m9" || cfg.InitialClusterState != "existing" || cfg.SnapshotCount != 77 || cfg.InitialClusterToken != "from-flag" {
		t.Errorf("name %q, state %q, snapshot count %d, token %q", cfg.Name, cfg.InitialClusterState, cfg.SnapshotCount, cfg.InitialClusterToken)
	}
	if cfg.WALDir != "/wal" || cfg.PeerTLS.CRLFile != "peer.crl" || cfg.LearnerLimit() != 2 {
		t.Errorf("etcd's newer flags from ETCD_ variables: wal dir %q, peer CRL %q, learners %d", cfg.WALDir, cfg.PeerTLS.CRLFile, cfg.LearnerLimit())
	}
	_, unknown := bindServeEnv(NewCommand(), viper.New(), []string{"ETCD_NAME=x", "ETCD_NO_SUCH_FLAG=1", "ETCDCTL_API=3", "CAIRN_OTHER=1"})
	if len(unknown) != 1 || unknown[0] != "ETCD_NO_SUCH_FLAG=1" {
		t.Errorf("unrecognized variables %q", unknown)
	}
}
