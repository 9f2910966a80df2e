package leaderwatch

import "testing"

// TestForwardedLoss: proposals forwarded to a leader reported gone are
// told they are lost once an entry of a later term is applied, not before;
// those forwarded to another leader are not.
func TestForwardedLoss(t *testing.T) {
	var f Forwarded
	closed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	toA := f.Lost(0xa, 2)
	if f.Lost(0xa, 2) != toA {
		t.Fatal("two proposals to the same leader and term got different channels")
	}
	f.LeaderGone(0xb) // not the leader proposals went to
	f.Applied(3)
	if closed(toA) {
		t.Fatal("lost after another leader was reported gone")
	}
	f.LeaderGone(0xa)
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
	f.LeaderGone(0xa) // reported while this member is already at term 3
	f.Applied(3)
	select {
	case <-toA:
	default:
		t.Fatal("a proposal forwarded to the gone leader was not told it is lost")
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
