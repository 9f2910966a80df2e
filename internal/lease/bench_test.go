package lease

import (
	"testing"
	"time"

	"github.com/cairnkv/cairn/pkg/store"
)

const benchLeases = 100000

// benchLessor grants n leases of TTLs 10..1009 s (in one write transaction,
// to keep the setup short) and promotes the lessor.
func benchLessor(b *testing.B, n int, cfg Config) *testEnv {
	b.Helper()
	e := newEnv(b, cfg)
	err := e.apply(func(w *store.WriteTxn) error {
		for i := 1; i <= n; i++ {
			if _, err := e.l.Grant(w, int64(i), int64(10+i%1000)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	e.l.Promote(0)
	e.l.Confirmed(e.l.StartConfirmation())
	return e
}

// BenchmarkRenew renews leases among 100,000, on the primary.
func BenchmarkRenew(b *testing.B) {
	e := benchLessor(b, benchLeases, Config{})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := e.l.Renew(int64(1+i%benchLeases), time.Hour); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTickIdle is a tick among 100,000 leases none of which has
// expired: the cost of the server's 500 ms loop in the common case.
func BenchmarkTickIdle(b *testing.B) {
	e := benchLessor(b, benchLeases, Config{})
	b.ReportAllocs()
	for b.Loop() {
		if got := e.l.Tick(); len(got) != 0 {
			b.Fatal("expired lease")
		}
	}
}

// BenchmarkTickExpired is a tick among 100,000 leases that have all expired:
// each offers a full budget (500 leases) and reschedules them for a retry.
// The clock moves on by the retry interval whenever every lease has been
// offered, so each tick does the same work.
func BenchmarkTickExpired(b *testing.B) {
	e := benchLessor(b, benchLeases, Config{})
	e.clock.Advance(time.Hour)
	b.ReportAllocs()
	offered := 0
	for b.Loop() {
		got := e.l.Tick()
		if len(got) == 0 {
			e.clock.Advance(DefaultRetryInterval)
			got = e.l.Tick()
		}
		if len(got) != 500 {
			b.Fatalf("tick offered %d, want 500", len(got))
		}
		offered += len(got)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(offered), "ns/lease")
}

// BenchmarkPromote restarts the clocks of 100,000 leases, as after an
// election (they are spread, being more than RevokeRate).
func BenchmarkPromote(b *testing.B) {
	e := benchLessor(b, benchLeases, Config{})
	b.ReportAllocs()
	for b.Loop() {
		e.l.Promote(time.Second)
	}
}
