// Package raftnode drives a raft.RawNode from many goroutines: a mutex
// around it, and a wake-up for the one loop that takes its Readies.
//
// raft's own Node runs the RawNode in a goroutine of its own and reaches it
// over channels: every proposal is two goroutine switches and a select on
// eight channels, and each Ready goes through two more switches between that
// goroutine and the loop that writes it. Here a proposal is a lock, raft's
// own step and an unlock, and the loop that writes a Ready takes it itself.
package raftnode

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
)

// Node is a raft.RawNode safe for concurrent use. One loop takes its
// Readies (Ready, then Advance) and waits on Wake between them; any
// goroutine may step, propose, tick and ask for its status.
type Node struct {
	mu sync.Mutex
	rn *raft.RawNode
	// wakec has a token when something changed since the loop last looked.
	wakec chan struct{}
	// appliedc, made when asked for, is closed when raft's applied index
	// next moves (at Advance only).
	appliedc chan struct{}
}

// Start is raft.StartNode: a new member of a new cluster of peers.
func Start(c *raft.Config, peers []raft.Peer) (*Node, error) {
	if len(peers) == 0 {
		return nil, errors.New("raftnode: no peers to start a cluster with")
	}
	n, err := Restart(c)
	if err != nil {
		return nil, err
	}
	if err := n.rn.Bootstrap(peers); err != nil {
		return nil, err
	}
	return n, nil
}

// Restart is raft.RestartNode: the membership and log come from c.Storage.
func Restart(c *raft.Config) (*Node, error) {
	rn, err := raft.NewRawNode(c)
	if err != nil {
		return nil, err
	}
	return &Node{rn: rn, wakec: make(chan struct{}, 1)}, nil
}

// do runs f on the RawNode under the lock and wakes the loop.
func (n *Node) do(f func(rn *raft.RawNode)) {
	n.mu.Lock()
	defer exitOnPanic()
	f(n.rn)
	n.mu.Unlock()
	n.wake()
}

// exitOnPanic ends the process when raft panics, as a panic in raft's own
// Node goroutine does. raft panics when it cannot go on: a follower whose
// log lost entries it had acknowledged, a log that contradicts itself. Here
// raft runs in its caller's goroutine, which may recover panics (net/http
// recovers each handler's), and the member would serve on with its raft
// half-way through a step and its lock held: alive, never again a leader or
// a follower. Deferred right after taking the lock.
func exitOnPanic() {
	if r := recover(); r != nil {
		fmt.Fprintf(os.Stderr, "panic: %v\n\n%s", r, debug.Stack())
		os.Exit(2)
	}
}

func (n *Node) wake() {
	select {
	case n.wakec <- struct{}{}:
	default:
	}
}

// Wake is ready to receive when the node may have a Ready.
func (n *Node) Wake() <-chan struct{} { return n.wakec }

// Ready returns the node's Ready, if it has one. The caller handles it and
// calls Advance before asking for the next.
func (n *Node) Ready() (raft.Ready, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	defer exitOnPanic()
	if !n.rn.HasReady() {
		return raft.Ready{}, false
	}
	return n.rn.Ready(), true
}

// Advance tells raft the last Ready was handled: its committed entries
// applied (or being applied), its snapshot installed.
func (n *Node) Advance() {
	n.do(func(rn *raft.RawNode) {
		if n.appliedc == nil { // nobody waits for the applied index
			rn.Advance(raft.Ready{})
			return
		}
		applied := rn.BasicStatus().Applied
		rn.Advance(raft.Ready{})
		if rn.BasicStatus().Applied != applied {
			close(n.appliedc)
			n.appliedc = nil
		}
	})
}

// Applied returns raft's applied index, which tells how far raft knows the
// log is applied (a leader's raft empties a conf change proposed before it
// has reached the last one), and a channel closed when it next moves.
func (n *Node) Applied() (uint64, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.appliedc == nil {
		n.appliedc = make(chan struct{})
	}
	return n.rn.BasicStatus().Applied, n.appliedc
}

// Tick advances raft's logical clock by one heartbeat interval.
func (n *Node) Tick() { n.do(func(rn *raft.RawNode) { rn.Tick() }) }

// Campaign makes this member a candidate.
func (n *Node) Campaign() (err error) {
	n.do(func(rn *raft.RawNode) { err = rn.Campaign() })
	return err
}

// CampaignAsTransferee makes this follower a candidate at once, as if its
// leader gone had handed leadership over to it: without pre-vote, and with
// a vote request that peers grant within gone's lease, which a plain
// Campaign's is not. Nothing happens unless the member is a follower of gone
// or of no one.
func (n *Node) CampaignAsTransferee(gone uint64) {
	n.do(func(rn *raft.RawNode) {
		st := rn.BasicStatus()
		if st.RaftState != raft.StateFollower || st.Lead != gone && st.Lead != raft.None {
			return
		}
		term := st.GetTerm()
		rn.Step(&pb.Message{Type: pb.MessageType_MsgTimeoutNow.Enum(), From: &gone, To: &st.ID, Term: &term})
	})
}

// Propose appends data to the log; raft.ErrProposalDropped when raft
// refuses it (no leader, a leadership transfer under way).
func (n *Node) Propose(data []byte) (err error) {
	n.do(func(rn *raft.RawNode) { err = rn.Propose(data) })
	return err
}

// ProposeConfChange proposes a membership change.
func (n *Node) ProposeConfChange(cc pb.ConfChangeI) (err error) {
	n.do(func(rn *raft.RawNode) { err = rn.ProposeConfChange(cc) })
	return err
}

// ApplyConfChange applies a committed membership change to raft.
func (n *Node) ApplyConfChange(cc pb.ConfChangeI) (cs *pb.ConfState) {
	n.do(func(rn *raft.RawNode) { cs = rn.ApplyConfChange(cc) })
	return cs
}

// Step hands raft a message from a peer. As raft's Node does, it ignores
// local message types and answers from peers that are not members.
func (n *Node) Step(m *pb.Message) (err error) {
	n.do(func(rn *raft.RawNode) { err = rn.Step(m) })
	if errors.Is(err, raft.ErrStepLocalMsg) || errors.Is(err, raft.ErrStepPeerNotFound) {
		return nil
	}
	return err
}

// ReadIndex asks for a read index; the answer comes in a Ready's ReadStates.
func (n *Node) ReadIndex(rctx []byte) { n.do(func(rn *raft.RawNode) { rn.ReadIndex(rctx) }) }

// SoleVoterReadIndex is the read index raft would answer a ReadIndex with,
// without the round through a Ready, where raft answers it at once: on a
// leader that is its cluster's only voter, whose commit index no other
// member can be ahead of. ok is false on any other member; ask with
// ReadIndex there. The voters are those of the configuration raft has
// applied, as for raft's own answer.
func (n *Node) SoleVoterReadIndex() (index uint64, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	defer exitOnPanic()
	st := n.rn.BasicStatus()
	if st.RaftState != raft.StateLeader {
		return 0, false
	}
	voters, selfVotes := 0, false
	n.rn.WithProgress(func(id uint64, typ raft.ProgressType, _ tracker.Progress) {
		if typ == raft.ProgressTypePeer {
			voters++
			selfVotes = selfVotes || id == st.ID
		}
	})
	if voters != 1 || !selfVotes {
		return 0, false
	}
	return st.GetCommit(), true
}

// TransferLeadership asks the leader to hand leadership to transferee.
func (n *Node) TransferLeadership(transferee uint64) {
	n.do(func(rn *raft.RawNode) { rn.TransferLeader(transferee) })
}

// Transferring reports whether this leader is handing leadership over (it
// drops proposals meanwhile).
func (n *Node) Transferring() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rn.BasicStatus().LeadTransferee != raft.None
}

// Leading reports whether this member leads, and is not handing leadership
// over, and in which raft term.
func (n *Node) Leading() (term uint64, leading bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	st := n.rn.BasicStatus()
	return st.GetTerm(), st.RaftState == raft.StateLeader && st.LeadTransferee == raft.None
}

// ReportUnreachable tells raft that a message to peer id was not delivered.
func (n *Node) ReportUnreachable(id uint64) {
	n.do(func(rn *raft.RawNode) { rn.ReportUnreachable(id) })
}

// ReportSnapshot tells raft how sending a snapshot to peer id went.
func (n *Node) ReportSnapshot(id uint64, status raft.SnapshotStatus) {
	n.do(func(rn *raft.RawNode) { rn.ReportSnapshot(id, status) })
}

// Status is raft's view of this member and, on a leader, of its peers.
func (n *Node) Status() raft.Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	defer exitOnPanic()
	return n.rn.Status()
}
