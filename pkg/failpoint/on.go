//go:build failpoints

package failpoint

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// Enabled reports whether this binary was built with the failpoints tag.
const Enabled = true

// point is an armed crash point: it fires at hit number at.
type point struct {
	at   int64
	hits atomic.Int64
}

var (
	parseOnce sync.Once
	armed     map[string]*point
)

// Hit counts a hit of the named point and, when CAIRN_FAILPOINTS arms it for
// this hit, kills the process.
func Hit(name string) {
	parseOnce.Do(load)
	p := armed[name]
	if p == nil {
		return
	}
	if p.hits.Add(1) != p.at {
		return
	}
	fmt.Fprintf(os.Stderr, "failpoint %s: crash (hit %d)\n", name, p.at)
	crash()
}

func load() {
	spec := os.Getenv(EnvVar)
	pts, err := Parse(spec)
	if err != nil {
		// A misspelt variable must not pass for a run without crashes.
		fmt.Fprintf(os.Stderr, "failpoint: %s=%q: %v\n", EnvVar, spec, err)
		os.Exit(2)
	}
	armed = make(map[string]*point, len(pts))
	for name, at := range pts {
		armed[name] = &point{at: at}
		fmt.Fprintf(os.Stderr, "failpoint %s: armed, crash at hit %d\n", name, at)
	}
}
