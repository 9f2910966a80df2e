package reqid

import (
	"sync"
	"testing"
	"time"
)

// TestIDsAreUniqueAndCarryTheMember: concurrent callers get distinct IDs,
// each with the member's low 16 bits on top.
func TestIDsAreUniqueAndCarryTheMember(t *testing.T) {
	const member = 0x8e9e05c52164694d
	g := New(member)
	seen := make(map[uint64]bool)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				id := g.Next()
				mu.Lock()
				if seen[id] {
					t.Errorf("ID %x handed out twice", id)
				}
				seen[id] = true
				mu.Unlock()
				if id>>48 != member&0xffff {
					t.Errorf("ID %x does not start with the member's low 16 bits %x", id, member&0xffff)
				}
			}
		})
	}
	wg.Wait()
}

// TestRestartStartsAbove: a generator started a few milliseconds after
// another that handed out fewer IDs than its counter holds (256 a
// millisecond) starts above them.
func TestRestartStartsAbove(t *testing.T) {
	g := New(1)
	var last uint64
	for range 200 {
		last = g.Next()
	}
	time.Sleep(2 * time.Millisecond) // a restart a few milliseconds later: the later timestamp is the point
	if first := New(1).Next(); first <= last {
		t.Errorf("a generator started later hands out %x, not above the earlier one's %x", first, last)
	}
}
