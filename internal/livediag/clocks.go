package livediag

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/cairnkv/cairn/internal/featuregate"
)

// judgeClocks warns of two members whose clocks are surely at least
// clockSkew apart: each member's clock is known to an interval (its HTTP
// Date header, whole seconds, read from here), so the skew between two is
// at least the gap between their intervals. Leases and TTLs count on each
// member's own clock; logs, certificates' validity and an operator's
// reading of them do not agree when clocks do not.
func judgeClocks(up []*Member, add func(Severity, string, string, ...any)) {
	for i, a := range up {
		for _, b := range up[i+1:] {
			if !a.Clock.Known || !b.Clock.Known {
				continue
			}
			ahead, behind := a, b
			gap := a.Clock.Low - b.Clock.High
			if g := b.Clock.Low - a.Clock.High; g > gap {
				ahead, behind, gap = b, a, g
			}
			if gap >= clockSkew {
				add(Warning, "the Date headers of their /metrics", "the clock of %s is at least %.1f s ahead of %s's: the members' clocks are not synchronized (NTP?)",
					ahead.Name, gap.Seconds(), behind.Name)
			}
		}
	}
}

// judgeFeatureGates warns of members that disagree on a feature gate (a
// gate that changes what a request does must be the same on every member)
// and says which gates every member has away from its default.
func judgeFeatureGates(up []*Member, add func(Severity, string, string, ...any)) {
	on := map[string][]string{} // gate -> members with it on
	reported := map[string][]string{}
	for _, m := range up {
		for _, s := range m.MetricsAfter[FeatureEnabled] {
			gate := s.Labels["name"]
			reported[gate] = append(reported[gate], m.Name)
			if s.Value == 1 {
				on[gate] = append(on[gate], m.Name)
			}
		}
	}
	var gates, changed []string
	for gate := range reported {
		gates = append(gates, gate)
	}
	sort.Strings(gates)
	for _, gate := range gates {
		if len(reported[gate]) < len(up) { // a member of another release, without the gate
			continue
		}
		enabled := len(on[gate]) == len(up)
		switch {
		case len(on[gate]) > 0 && !enabled:
			var off []string
			for _, m := range up {
				if !slices.Contains(on[gate], m.Name) {
					off = append(off, m.Name)
				}
			}
			add(Warning, fmt.Sprintf("on: %s; off: %s", strings.Join(on[gate], ", "), strings.Join(off, ", ")),
				"the members disagree on feature gate %s: set the same --feature-gates on every member", gate)
		case featuregate.Known(gate) && enabled != featuregate.Default(gate):
			changed = append(changed, fmt.Sprintf("%s=%v", gate, enabled))
		}
	}
	if len(changed) > 0 {
		add(Info, "", "feature gates away from their defaults on every member: %s", strings.Join(changed, ","))
	}
}
