//go:build failpoints

package failpoint

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Enabled reports whether this binary was built with the failpoints tag.
const Enabled = true

// point is an armed point and the hits it has counted.
type point struct {
	Action
	hits atomic.Int64
}

var (
	parseOnce sync.Once
	armed     map[string]*point
)

// Hit counts a hit of the named point and does what CAIRN_FAILPOINTS arms
// it to do at this hit: kill the process, or sleep.
func Hit(name string) {
	parseOnce.Do(load)
	p := armed[name]
	if p == nil {
		return
	}
	n := p.hits.Add(1)
	if !p.acts(n) {
		return
	}
	if p.Sleep != 0 {
		time.Sleep(p.Sleep)
		return
	}
	fmt.Fprintf(os.Stderr, "failpoint %s: crash (hit %d)\n", name, n)
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
	for name, a := range pts {
		armed[name] = &point{Action: a}
		fmt.Fprintf(os.Stderr, "failpoint %s: armed, %v\n", name, a)
	}
}
