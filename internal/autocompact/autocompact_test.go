package autocompact

import (
	"testing"
	"time"
)

// TestParse: etcd's forms of the retention, and the refusals.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		mode, retention string
		want            Policy
		ok              bool
	}{
		{"periodic", "", Policy{}, true},
		{"periodic", "0", Policy{}, true},
		{"periodic", "2", Policy{period: 2 * time.Hour}, true},
		{"", "30m", Policy{period: 30 * time.Minute}, true},
		{"revision", "1000", Policy{revisions: 1000}, true},
		{"revision", "1h", Policy{}, false},
		{"periodic", "soon", Policy{}, false},
		{"daily", "1", Policy{}, false},
	} {
		got, err := Parse(c.mode, c.retention)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("Parse(%q, %q) = %+v, %v; want %+v, ok %v", c.mode, c.retention, got, err, c.want, c.ok)
		}
	}
	if p, _ := Parse("periodic", "1h"); p.Interval() != 6*time.Minute || !p.Enabled() {
		t.Errorf("1h: interval %v, enabled %v; want 6m, true", p.Interval(), p.Enabled())
	}
}

// TestTarget: revision mode keeps the last N revisions; periodic mode
// compacts to the revision sampled a whole period ago.
func TestTarget(t *testing.T) {
	r := NewRetention(Policy{revisions: 10})
	if got := r.Target(time.Now(), 25); got != 15 {
		t.Errorf("revision mode at 25: %d, want 15", got)
	}
	start := time.Unix(1000, 0)
	r = NewRetention(Policy{period: time.Hour})
	for i, want := range []int64{0, 0, 0, 100, 110, 140} {
		rev := int64(100 + 10*i*i)
		if i == 5 {
			rev = 500
		}
		if got := r.Target(start.Add(time.Duration(i)*20*time.Minute), rev); got != want {
			t.Errorf("tick %d (revision %d): %d, want %d", i, rev, got, want)
		}
	}
}
