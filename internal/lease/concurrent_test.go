package lease

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// The API-side calls run concurrently with the apply loop and the server's
// ticks; the race detector checks the locking.
func TestConcurrentUse(t *testing.T) {
	e := newEnv(t, Config{CheckpointInterval: time.Second})
	e.l.Promote(0)
	const n = 50
	for i := int64(1); i <= n; i++ {
		e.grant(i, 20)
		e.put(fmt.Sprintf("k%03d", i), i)
	}
	var wg sync.WaitGroup
	fail := make(chan error, 8)
	report := func(err error) {
		select {
		case fail <- err:
		default:
		}
	}
	wg.Go(func() { // apply loop
		for i := int64(1); i <= n; i++ {
			w := e.s.Write()
			err := e.l.Revoke(w, i)
			if err == nil {
				err = e.l.Checkpoint(w, i+1, 5)
			}
			if endErr := w.End(); err == nil {
				err = endErr
			}
			if err != nil {
				report(err)
			}
			w = e.s.Write()
			_, err = e.l.Grant(w, 1000+i, 30)
			w.End()
			if err != nil {
				report(err)
			}
		}
	})
	wg.Go(func() { // keepalives and queries
		for range 20 {
			for i := int64(1); i <= n; i++ {
				// The server loop demotes and promotes the lessor once, so a
				// renewal may fall into the window where it is not primary,
				// or where the new term has no confirmation yet.
				_, err := e.renew(i)
				if err != nil && !errors.Is(err, ErrLeaseNotFound) && !errors.Is(err, ErrNotPrimary) && !errors.Is(err, ErrNotConfirmed) {
					report(err)
				}
				e.l.TimeToLive(i, true)
				e.l.Lookup(i)
			}
			e.l.Leases()
		}
	})
	wg.Go(func() { // server loop
		for range 200 {
			e.clock.Advance(100 * time.Millisecond)
			e.l.Tick()
			e.l.CheckpointsDue()
		}
		e.l.Demote()
		e.l.Promote(time.Second)
	})
	wg.Wait()
	close(fail)
	if err := <-fail; err != nil {
		t.Fatal(err)
	}
	if got := len(e.l.Leases()); got != n {
		t.Errorf("%d leases at the end, want %d", got, n)
	}
}
