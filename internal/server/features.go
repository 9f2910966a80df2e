package server

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Features are the server's feature gates (--feature-gates
// "Name=true,Other=false"), with etcd 3.7.3's names, defaults and errors,
// and cairn's own gates beside them.
type Features map[string]bool

// Feature gate names.
const (
	FeatureInitialCorruptCheck = "InitialCorruptCheck"
	FeatureCompactHashCheck    = "CompactHashCheck"
	FeatureSetMemberLocalAddr  = "SetMemberLocalAddr"
	// cairn's own (cairnFeatures): see DESIGN.md, section 6.
	FeatureAutoPromoteLearners      = "AutoPromoteLearners"
	FeatureLearnerLinearizableReads = "LearnerLinearizableReads"
)

// featureDefaults lists every gate a member knows, with its default.
var featureDefaults = map[string]bool{
	"AllAlpha":                      false,
	"AllBeta":                       false,
	FeatureAutoPromoteLearners:      false,
	FeatureLearnerLinearizableReads: false,
	FeatureCompactHashCheck:         false,
	"FastLeaseKeepAlive":            true,
	FeatureInitialCorruptCheck:      false,
	"LeaseCheckpoint":               false,
	"LeaseCheckpointPersist":        false,
	"PriorityRequest":               false,
	FeatureSetMemberLocalAddr:       false,
	"StopGRPCServiceOnDefrag":       false,
	"TxnModeWriteWithSharedBuffer":  true,
}

// ParseFeatures reads a --feature-gates value; unset gates keep their
// defaults.
func ParseFeatures(s string) (Features, error) {
	f := Features{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		name, value, ok := strings.Cut(kv, "=")
		name = strings.TrimSpace(name)
		if _, known := featureDefaults[name]; !known {
			return nil, fmt.Errorf("unrecognized feature gate: %s", name)
		}
		if !ok {
			return nil, fmt.Errorf("missing bool value for %s", name)
		}
		on, err := strconv.ParseBool(strings.TrimSpace(value))
		if err != nil {
			return nil, fmt.Errorf("invalid value of %s=%s, err: %v", name, value, err)
		}
		f[name] = on
	}
	return f, nil
}

// Enabled reports whether a gate is on.
func (f Features) Enabled(name string) bool {
	if on, set := f[name]; set {
		return on
	}
	return featureDefaults[name]
}

// betaFeatures are the gates etcd 3.7.3 has at the beta stage; the others
// are alpha.
var betaFeatures = map[string]bool{"AllBeta": true, "FastLeaseKeepAlive": true, "TxnModeWriteWithSharedBuffer": true}

// cairnFeatures are the gates etcd has not: --help says so.
var cairnFeatures = map[string]bool{FeatureAutoPromoteLearners: true, FeatureLearnerLinearizableReads: true}

// FeatureNames lists every gate, sorted.
func FeatureNames() []string {
	names := make([]string, 0, len(featureDefaults))
	for n := range featureDefaults {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// FeatureStage is a gate's stage, as etcd's metrics label it: ALPHA or BETA.
func FeatureStage(name string) string {
	if betaFeatures[name] {
		return "BETA"
	}
	return "ALPHA"
}

// FeatureHelp lists the gates for --help, as etcd's does.
func FeatureHelp() string {
	var b strings.Builder
	b.WriteString("A set of key=value pairs that describe server level feature gates for alpha/experimental features. Options are:")
	for _, n := range FeatureNames() {
		fmt.Fprintf(&b, "\n%s=true|false (default=%v)", n, featureDefaults[n])
		if cairnFeatures[n] {
			b.WriteString(" (cairn's own, not in etcd)")
		}
	}
	return b.String()
}
