package lease

import (
	"slices"
	"testing"
	"time"
)

func TestExpiryOnlyOnPrimary(t *testing.T) {
	e := newEnv(t, Config{})
	e.grant(1, 10)
	e.clock.Advance(time.Hour)
	if got := e.l.Tick(); got != nil {
		t.Fatalf("a lessor that is not primary offered %v", got)
	}
	if !e.lookup(1).Expiry.IsZero() {
		t.Error("lease has an expiry on a lessor that is not primary")
	}

	e.l.Promote(0)
	start := e.clock.Now()
	if got := e.lookup(1).Expiry; !got.Equal(start.Add(10 * time.Second)) {
		t.Errorf("expiry %v after Promote, want now+10s", got)
	}
	e.clock.Advance(10*time.Second - time.Nanosecond)
	if got := e.tickIDs(); len(got) != 0 {
		t.Fatalf("offered %v before expiry", got)
	}
	e.clock.Advance(time.Nanosecond)
	if got := e.tickIDs(); !slices.Equal(got, []int64{1}) {
		t.Fatalf("offered %v at expiry, want [1]", got)
	}
}

func TestGrantOnPrimaryStartsClock(t *testing.T) {
	e := newEnv(t, Config{})
	e.l.Promote(0)
	e.clock.Advance(time.Minute)
	got := e.grant(1, 5)
	if want := e.clock.Now().Add(5 * time.Second); !got.Expiry.Equal(want) {
		t.Errorf("expiry %v, want %v", got.Expiry, want)
	}
	e.clock.Advance(5 * time.Second)
	if ids := e.tickIDs(); !slices.Equal(ids, []int64{1}) {
		t.Errorf("offered %v, want [1]", ids)
	}
}

func TestTickRetryInterval(t *testing.T) {
	e := newEnv(t, Config{RetryInterval: 3 * time.Second})
	e.l.Promote(0)
	e.grant(1, 5)
	e.grant(2, 100)
	e.clock.Advance(5 * time.Second)
	if got := e.tickIDs(); !slices.Equal(got, []int64{1}) {
		t.Fatalf("offered %v, want [1]", got)
	}
	if got := e.tickIDs(); len(got) != 0 {
		t.Fatalf("offered %v again at once", got)
	}
	e.clock.Advance(3*time.Second - time.Nanosecond)
	if got := e.tickIDs(); len(got) != 0 {
		t.Fatalf("offered %v again before the retry interval", got)
	}
	e.clock.Advance(time.Nanosecond)
	if got := e.tickIDs(); !slices.Equal(got, []int64{1}) {
		t.Fatalf("offered %v after the retry interval, want [1]", got)
	}
	if err := e.revoke(1); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	if got := e.tickIDs(); len(got) != 0 {
		t.Fatalf("offered %v after the revoke", got)
	}
}

func TestTickBudgetAndOrder(t *testing.T) {
	e := newEnv(t, Config{RevokeRate: 10}) // 5 per tick
	e.l.Promote(0)
	// IDs in an order unlike expiry order.
	for i := int64(1); i <= 12; i++ {
		e.grant(100-i, 10+i)
	}
	e.clock.Advance(time.Minute)
	var all []int64
	for _, want := range []int{5, 5, 2, 0} {
		got := e.tickIDs()
		if len(got) != want {
			t.Fatalf("tick offered %d leases, want %d", len(got), want)
		}
		all = append(all, got...)
	}
	for i, id := range all {
		if id != 99-int64(i) {
			t.Fatalf("offered %v, want earliest expiry first (99, 98, ...)", all)
		}
	}
}

func TestPromoteExtends(t *testing.T) {
	e := newEnv(t, Config{})
	e.grant(1, 10)
	e.grant(2, 60)
	e.checkpoint(2, 4) // a previous leader recorded 4 s left
	e.l.Promote(3 * time.Second)
	now := e.clock.Now()
	if got := e.lookup(1).Expiry; !got.Equal(now.Add(13 * time.Second)) {
		t.Errorf("lease 1 expires %v after now, want 13s", got.Sub(now))
	}
	if got := e.lookup(2).Expiry; !got.Equal(now.Add(7 * time.Second)) {
		t.Errorf("lease 2 expires %v after now, want 7s (checkpointed 4s + 3s)", got.Sub(now))
	}
	e.clock.Advance(7 * time.Second)
	if got := e.tickIDs(); !slices.Equal(got, []int64{2}) {
		t.Errorf("offered %v at +7s, want [2]", got)
	}
	if err := e.revoke(2); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(6 * time.Second)
	if got := e.tickIDs(); !slices.Equal(got, []int64{1}) {
		t.Errorf("offered %v at +13s, want [1]", got)
	}
}

func TestPromoteSpreadsExpiries(t *testing.T) {
	const rate = 10
	e := newEnv(t, Config{RevokeRate: rate})
	for i := int64(1); i <= 3*rate; i++ {
		e.grant(i, 10)
	}
	e.l.Promote(0)
	want := e.clock.Now().Add(10 * time.Second)
	var exps []time.Time
	for _, id := range e.l.Leases() {
		exps = append(exps, e.lookup(id).Expiry)
	}
	slices.SortFunc(exps, time.Time.Compare)
	if !exps[0].Equal(want) {
		t.Errorf("first expiry %v, want now+10s", exps[0].Sub(e.clock.Now()))
	}
	for i := 1; i < len(exps); i++ {
		if gap := exps[i].Sub(exps[i-1]); gap < time.Second/rate {
			t.Fatalf("expiries %d and %d are %v apart, want at least %v", i-1, i, gap, time.Second/rate)
		}
	}
	if last := exps[len(exps)-1].Sub(want); last > 3*time.Second {
		t.Errorf("last expiry delayed by %v, want at most 3s", last)
	}

	// Fewer leases than the rate: no spreading.
	e2 := newEnv(t, Config{RevokeRate: 100})
	e2.grant(1, 10)
	e2.grant(2, 10)
	e2.l.Promote(0)
	if a, b := e2.lookup(1).Expiry, e2.lookup(2).Expiry; !a.Equal(b) {
		t.Errorf("two leases spread: %v, %v", a, b)
	}
}

func TestDemoteStopsExpiry(t *testing.T) {
	e := newEnv(t, Config{})
	e.l.Promote(0)
	e.grant(1, 10)
	e.clock.Advance(5 * time.Second)
	e.l.Demote()
	if e.l.IsPrimary() {
		t.Fatal("primary after Demote")
	}
	if !e.lookup(1).Expiry.IsZero() {
		t.Error("lease keeps an expiry after Demote")
	}
	e.clock.Advance(time.Hour)
	if got := e.l.Tick(); got != nil {
		t.Errorf("offered %v after Demote", got)
	}
	wantErr(t, func() error { _, err := e.renew(1); return err }(), ErrNotPrimary)
	wantErr(t, func() error { _, err := e.l.TimeToLive(1, false); return err }(), ErrNotPrimary)
	e.grant(2, 10) // grants still apply
	if !e.lookup(2).Expiry.IsZero() {
		t.Error("lease granted after Demote has an expiry")
	}

	// Promoted again: clocks restart from now.
	e.l.Promote(0)
	if !e.l.IsPrimary() {
		t.Fatal("not primary after Promote")
	}
	if got := e.lookup(1).Expiry; !got.Equal(e.clock.Now().Add(10 * time.Second)) {
		t.Errorf("expiry %v after re-promotion, want now+10s", got.Sub(e.clock.Now()))
	}
	if got := e.tickIDs(); len(got) != 0 {
		t.Errorf("offered %v right after re-promotion", got)
	}
}

func TestPromoteResetsOffered(t *testing.T) {
	e := newEnv(t, Config{})
	e.l.Promote(0)
	e.grant(1, 10)
	e.clock.Advance(10 * time.Second)
	if got := e.tickIDs(); !slices.Equal(got, []int64{1}) {
		t.Fatalf("offered %v, want [1]", got)
	}
	// Leadership lost and regained before the revoke was applied.
	e.l.Demote()
	e.l.Promote(0)
	if ttl, err := e.renew(1); err != nil || ttl != 10 {
		t.Fatalf("renew after re-promotion: %d, %v", ttl, err)
	}
	e.clock.Advance(10 * time.Second)
	if got := e.tickIDs(); !slices.Equal(got, []int64{1}) {
		t.Fatalf("offered %v, want [1]", got)
	}
}
