package leaderwatch

import "testing"

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestForwardedLoss: proposals forwarded to a leader reported gone are
// told they are lost once an entry of a later term is applied, not before;
// those forwarded to another leader are not.
func TestForwardedLoss(t *testing.T) {
	var f Forwarded
	toA := f.Lost(0xa, 2)
	if f.Lost(0xa, 2) != toA {
		t.Fatal("two proposals to the same leader and term got different channels")
	}
	f.LeaderGone(0xb, 0) // not the leader proposals went to
	f.Applied(2)
	if closed(toA) {
		t.Fatal("lost after another leader was reported gone")
	}
	f.LeaderGone(0xa, 2)
	late := f.Lost(0xa, 2) // forwarded before the report, registered after it
	f.Applied(2)
	if closed(toA) || closed(late) {
		t.Fatal("lost before an entry of a later term was applied")
	}
	toC := f.Lost(0xc, 3)
	f.Applied(3)
	if !closed(toA) || !closed(late) {
		t.Fatal("not lost after an entry of a later term was applied")
	}
	if closed(toC) {
		t.Fatal("a proposal to the new leader was told it is lost")
	}
}

// TestForwardedLossAfterAnotherCampaign: a follower whose leader's
// process is gone may hear another voter's campaign, and move to its term,
// before it learns of the loss itself; the proposals it forwarded to the
// gone leader are lost all the same, once the new term's entry is applied.
func TestForwardedLossAfterAnotherCampaign(t *testing.T) {
	var f Forwarded
	toA := f.Lost(0xa, 2)
	f.LeaderGone(0xa, 0) // reported while this member is already at term 3
	f.Applied(3)
	if !closed(toA) {
		t.Fatal("a proposal forwarded to the gone leader was not told it is lost")
	}
}

// TestForwardedLossReportedFirst: the leader may be reported gone before
// any proposal was forwarded to it; one forwarded to it afterwards, while
// this member still follows it, is lost as well, and reported again it
// stays so, no sooner.
func TestForwardedLossReportedFirst(t *testing.T) {
	var f Forwarded
	f.LeaderGone(0xa, 2)
	toA := f.Lost(0xa, 2)
	f.LeaderGone(0xa, 2) // reported again
	if closed(toA) {
		t.Fatal("lost before an entry of a later term was applied")
	}
	f.Applied(3)
	if !closed(toA) {
		t.Fatal("a proposal forwarded after its leader was reported gone was not told it is lost")
	}
}

// TestForwardedLossReportedAfterTheNextLeader: the report of a gone leader
// may come after this member has forwarded proposals to the next one; those
// forwarded to the gone one are lost all the same, those to the next are
// not.
func TestForwardedLossReportedAfterTheNextLeader(t *testing.T) {
	var f Forwarded
	toA := f.Lost(0xa, 2)
	toB := f.Lost(0xb, 3)
	f.Applied(3)
	f.LeaderGone(0xa, 0)
	if !closed(toA) {
		t.Fatal("a proposal forwarded to the gone leader was not told it is lost")
	}
	if closed(toB) || f.Lost(0xb, 3) != toB {
		t.Fatal("the next leader's proposals were touched")
	}
}

// TestForwardedLossReportedLate: the report of a gone leader may come
// after the new leader's first entry was applied; what was forwarded to the
// gone one is lost at once.
func TestForwardedLossReportedLate(t *testing.T) {
	var f Forwarded
	toA := f.Lost(0xa, 2)
	f.Applied(2)
	f.Applied(3)
	f.LeaderGone(0xa, 0)
	if !closed(toA) {
		t.Fatal("a proposal forwarded to a leader reported gone after a later term's entry was applied was not told it is lost")
	}
}

// TestForwardedLossReportedWhileApplying: the report and the new leader's
// first entry may come at the same time; whichever comes first, the
// proposals forwarded to the gone leader are told they are lost once both
// have.
func TestForwardedLossReportedWhileApplying(t *testing.T) {
	for i := range 2000 {
		var f Forwarded
		toA := f.Lost(0xa, 2)
		f.Applied(2)
		done := make(chan struct{})
		go func() { f.Applied(3); close(done) }()
		f.LeaderGone(0xa, 0)
		<-done
		if !closed(toA) {
			t.Fatalf("round %d: not lost after the report and an entry of a later term", i)
		}
	}
}

func TestCampaignTurn(t *testing.T) {
	voters := []uint64{0x30, 0x10, 0x20}
	for _, tc := range []struct {
		gone, self uint64
		want       int
	}{
		{0x30, 0x10, 0}, {0x30, 0x20, 1}, {0x10, 0x20, 0}, {0x10, 0x30, 1}, {0x20, 0x30, 1}, {0x10, 0x40, -1},
	} {
		if got := CampaignTurn(voters, tc.gone, tc.self); got != tc.want {
			t.Errorf("CampaignTurn(%x, gone %x, self %x) = %d, want %d", voters, tc.gone, tc.self, got, tc.want)
		}
	}
	if voters[0] != 0x30 || voters[1] != 0x10 {
		t.Errorf("CampaignTurn changed its argument: %x", voters)
	}
}
