// Package featuregate reads --feature-gates: etcd 3.7.3's gates, with its
// names, defaults, stages and errors, and cairn's own beside them. Pure
// logic: it imports nothing of the module.
package featuregate

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Gates are a member's feature gates (--feature-gates
// "Name=true,Other=false"); a gate not in the map has its default.
type Gates map[string]bool

// Feature gate names.
const (
	InitialCorruptCheck = "InitialCorruptCheck"
	CompactHashCheck    = "CompactHashCheck"
	SetMemberLocalAddr  = "SetMemberLocalAddr"
	// StopGRPCServiceOnDefrag: the gRPC health service says NOT_SERVING
	// while a defragmentation runs.
	StopGRPCServiceOnDefrag = "StopGRPCServiceOnDefrag"
	// cairn's own (cairnFeatures), not in etcd.
	AutoPromoteLearners      = "AutoPromoteLearners"
	LearnerLinearizableReads = "LearnerLinearizableReads"
)

// featureDefaults lists every gate a member knows, with its default.
var featureDefaults = map[string]bool{
	"AllAlpha":                     false,
	"AllBeta":                      false,
	AutoPromoteLearners:            false,
	LearnerLinearizableReads:       false,
	CompactHashCheck:               false,
	"FastLeaseKeepAlive":           true,
	InitialCorruptCheck:            false,
	"LeaseCheckpoint":              false,
	"LeaseCheckpointPersist":       false,
	"PriorityRequest":              false,
	SetMemberLocalAddr:             false,
	StopGRPCServiceOnDefrag:        false,
	"TxnModeWriteWithSharedBuffer": true,
}

// Parse reads a --feature-gates value; unset gates keep their
// defaults.
func Parse(s string) (Gates, error) {
	f := Gates{}
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
func (f Gates) Enabled(name string) bool {
	if on, set := f[name]; set {
		return on
	}
	return featureDefaults[name]
}

// Known reports whether name is a gate a member knows.
func Known(name string) bool {
	_, ok := featureDefaults[name]
	return ok
}

// Default is a gate's default.
func Default(name string) bool { return featureDefaults[name] }

// betaFeatures are the gates etcd 3.7.3 has at the beta stage; the others
// are alpha.
var betaFeatures = map[string]bool{"AllBeta": true, "FastLeaseKeepAlive": true, "TxnModeWriteWithSharedBuffer": true}

// cairnFeatures are the gates etcd has not: --help says so.
var cairnFeatures = map[string]bool{AutoPromoteLearners: true, LearnerLinearizableReads: true}

// Names lists every gate, sorted.
func Names() []string {
	names := make([]string, 0, len(featureDefaults))
	for n := range featureDefaults {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Stage is a gate's stage, as etcd's metrics label it: ALPHA or BETA.
func Stage(name string) string {
	if betaFeatures[name] {
		return "BETA"
	}
	return "ALPHA"
}

// Help lists the gates for --help, as etcd's does.
func Help() string {
	var b strings.Builder
	b.WriteString("A set of key=value pairs that describe server level feature gates for alpha/experimental features. Options are:")
	for _, n := range Names() {
		fmt.Fprintf(&b, "\n%s=true|false (default=%v)", n, featureDefaults[n])
		if cairnFeatures[n] {
			b.WriteString(" (cairn's own, not in etcd)")
		}
	}
	return b.String()
}
