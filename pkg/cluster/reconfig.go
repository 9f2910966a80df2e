package cluster

import (
	"errors"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// The strict reconfiguration check (etcd's --strict-reconfig-check, on by
// default) refuses a membership change that would leave the cluster
// without a quorum of started, connected voters: a member is started once
// it has published its name, and connected when the member checking has
// had a message stream from it for HealthInterval. The checks are pure
// functions of the voters as the checking member sees them.

// The refusals of a membership change, with etcd's texts.
var (
	ErrUnhealthy        = errors.New("etcdserver: unhealthy cluster")
	ErrNotEnoughStarted = errors.New("etcdserver: re-configuration failed due to not enough started members")
)

// HealthInterval is how long a peer must have been connected to count, as
// etcd's.
const HealthInterval = 5 * time.Second

// Voter is a voting member as the member checking a change sees it (for
// itself: active and connected).
type Voter struct {
	ID uint64
	// Started: it has published its name.
	Started bool
	// Active: the checking member has a message stream from it.
	Active bool
	// Connected: active since HealthInterval ago at least.
	Connected bool
}

// quorum is the majority of n voters.
func quorum(n int) int { return n/2 + 1 }

// started counts the voters of vs that have started, but for the one with
// ID except (0: none).
func started(vs []Voter, except uint64) int {
	n := 0
	for _, v := range vs {
		if v.ID != except && v.Started {
			n++
		}
	}
	return n
}

func connected(vs []Voter) int {
	n := 0
	for _, v := range vs {
		if v.Connected {
			n++
		}
	}
	return n
}

// CheckAdd: a new voter must not leave the started voters short of a
// quorum of the larger cluster (a one-member cluster may always grow to
// two: that is how a cluster is restored), and the checking member must be
// connected to a quorum of the cluster with the new member counted,
// learner or not, or the change may break the active quorum: with one of
// three members down an addition is refused, with one of four it is not
// (as in etcd's TestCtlV3MemberAddAsLearnerWithOneMemberDown). So a
// cluster also refuses additions for HealthInterval after it starts, as
// etcd's does.
func CheckAdd(vs []Voter, isLearner bool) error {
	if !isLearner {
		n, up := len(vs)+1, started(vs, 0)
		if !(up == 1 && n == 2) && up < quorum(n) {
			return ErrNotEnoughStarted
		}
	}
	if len(vs) > 1 && connected(vs) < quorum(len(vs)+1) {
		return ErrUnhealthy
	}
	return nil
}

// CheckRemove checks the removal of the voter id. The last voter is never
// removed, strict or not: raft cannot run without one, and the data dir
// could not start again. With strict, the voters that stay must hold a
// quorum of started members, and, unless the member removed is down
// already, enough of them must be connected.
func CheckRemove(vs []Voter, id uint64, strict bool) error {
	if len(vs) <= 1 {
		return ErrNotEnoughStarted
	}
	if !strict {
		return nil
	}
	if started(vs, id) < quorum(len(vs)-1) {
		return ErrNotEnoughStarted
	}
	active := false
	for _, v := range vs {
		active = active || (v.ID == id && v.Active)
	}
	if !active {
		return nil // not part of the active quorum
	}
	if connected(vs)-1 < quorum(len(vs)-1) {
		return ErrUnhealthy
	}
	return nil
}

// CheckPromote: the voters and the learner promoted, started, must hold a
// quorum of the larger cluster.
func CheckPromote(vs []Voter) error {
	if started(vs, 0)+1 < quorum(len(vs)+1) { // the learner counts as started
		return ErrNotEnoughStarted
	}
	return nil
}

// RemovesLastVoter reports whether cc would leave raft with no voter, which
// raft refuses with a panic. Such a change is refused at apply too, for
// logs written before the check existed (it depends on the raft
// configuration alone, so every member decides the same).
func RemovesLastVoter(cs *raftpb.ConfState, cc *raftpb.ConfChange) bool {
	if cc.GetType() != raftpb.ConfChangeType_ConfChangeRemoveNode {
		return false
	}
	voters := cs.GetVoters()
	return len(voters) == 1 && voters[0] == cc.GetNodeId() && len(cs.GetVotersOutgoing()) == 0
}
