package lease

import (
	"slices"
	"testing"
	"time"
)

func TestTimeToLive(t *testing.T) {
	e := newEnv(t, Config{})
	e.grant(1, 10)
	e.put("b", 1)
	e.put("a", 1)
	e.put("c", 0)
	_, err := e.l.TimeToLive(1, true)
	wantErr(t, err, ErrNotPrimary)

	e.l.Promote(0)
	e.clock.Advance(2500 * time.Millisecond)
	info, err := e.l.TimeToLive(1, true)
	if err != nil {
		t.Fatal(err)
	}
	if info.ID != 1 || info.GrantedTTL != 10 || info.TTL != 7 {
		t.Errorf("TimeToLive = %+v, want granted 10, TTL 7 (7.5s truncated)", info)
	}
	var keys []string
	for _, k := range info.Keys {
		keys = append(keys, string(k))
	}
	if !slices.Equal(keys, []string{"a", "b"}) {
		t.Errorf("keys %q, want [a b]", keys)
	}
	if info, _ := e.l.TimeToLive(1, false); info.Keys != nil {
		t.Errorf("keys %q without asking", info.Keys)
	}
	e.clock.Advance(time.Minute)
	if info, _ := e.l.TimeToLive(1, false); info.TTL != 0 {
		t.Errorf("TTL %d of an expired lease, want 0", info.TTL)
	}
	_, err = e.l.TimeToLive(2, false)
	wantErr(t, err, ErrLeaseNotFound)
}

func TestLeasesAndLookup(t *testing.T) {
	e := newEnv(t, Config{})
	if got := e.l.Leases(); len(got) != 0 {
		t.Fatalf("Leases() = %v on a new store", got)
	}
	for _, id := range []int64{30, -5, 10} { // clients may pick any non-zero ID
		e.grant(id, 10)
	}
	if got := e.l.Leases(); !slices.Equal(got, []int64{-5, 10, 30}) {
		t.Errorf("Leases() = %v", got)
	}
	ls := e.lookup(-5)
	if ls.ID != -5 || ls.TTL != 10 {
		t.Errorf("lookup = %+v", ls)
	}
}
