package serve

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// securitySections are the nested sections of etcd's YAML and the flags
// their keys stand for.
var securitySections = map[string]map[string]string{
	"client-transport-security": {
		"cert-file": "cert-file", "key-file": "key-file", "client-cert-file": "client-cert-file", "client-key-file": "client-key-file",
		"client-cert-auth": "client-cert-auth", "trusted-ca-file": "trusted-ca-file", "auto-tls": "auto-tls",
		"allowed-hostname": "client-cert-allowed-hostname", "crl-file": "client-crl-file",
	},
	"peer-transport-security": {
		"cert-file": "peer-cert-file", "key-file": "peer-key-file", "client-cert-file": "peer-client-cert-file", "client-key-file": "peer-client-key-file",
		"client-cert-auth": "peer-client-cert-auth", "trusted-ca-file": "peer-trusted-ca-file", "auto-tls": "peer-auto-tls",
		"allowed-cn": "peer-cert-allowed-cn", "allowed-hostname": "peer-cert-allowed-hostname", "crl-file": "peer-crl-file",
		"skip-client-san-verification": "peer-skip-client-san-verification",
	},
}

// v2ProxyKeys are keys of etcd's sample configuration for the v2 proxy,
// which etcd 3 ignores: so does cairn, with a warning.
var v2ProxyKeys = []string{"proxy", "proxy-failure-wait", "proxy-refresh-interval", "proxy-dial-timeout", "proxy-write-timeout", "proxy-read-timeout"}

// readConfigFile reads an etcd configuration file: its keys are the flags'
// names, the TLS ones may also be in etcd's client-transport-security and
// peer-transport-security sections, lists are YAML lists or
// comma-separated strings and durations are nanoseconds or Go durations.
// As in etcd, the file is the whole configuration: flags and environment
// variables are ignored. The result has flags' defaults for what the file
// does not set (and IsSet only for what it sets); ignored are the keys of
// the file that have no effect. A key that names nothing is an error.
func readConfigFile(path string, flags *pflag.FlagSet) (v *viper.Viper, ignored []string, err error) {
	file := viper.New()
	file.SetConfigFile(path)
	file.SetConfigType("yaml")
	if err := file.ReadInConfig(); err != nil {
		return nil, nil, fmt.Errorf("read --config-file %s: %w", path, err)
	}
	v = viper.New()
	if err := v.BindPFlags(flags); err != nil {
		return nil, nil, err
	}
	for _, key := range file.AllKeys() {
		name := key
		section, sub, nested := strings.Cut(key, ".")
		switch {
		case nested && securitySections[section] != nil:
			name = securitySections[section][sub]
		case securitySections[key] != nil: // an empty section
			continue
		case slices.Contains(v2ProxyKeys, key):
			ignored = append(ignored, key)
			continue
		case flags.Lookup(key) == nil || key == "config-file":
			name = ""
		}
		if name == "" {
			return nil, nil, fmt.Errorf("--config-file %s: unknown key %q", path, key)
		}
		value := file.Get(key)
		if list, ok := value.([]any); ok {
			parts := make([]string, len(list))
			for i, p := range list {
				parts[i] = fmt.Sprint(p)
			}
			value = strings.Join(parts, ",")
		}
		if value != nil {
			v.Set(name, value)
		}
	}
	return v, ignored, nil
}
