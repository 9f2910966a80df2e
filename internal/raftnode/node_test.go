package raftnode

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func config(id uint64, st *raft.MemoryStorage) *raft.Config {
	return &raft.Config{ID: id, ElectionTick: 10, HeartbeatTick: 1, Storage: st,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256}
}

// driven is a single-member cluster whose Readies a goroutine takes as a
// member's raft loop does (storage for the WAL): every committed entry's
// data goes on committed, every applied conf change on confChanges, every
// read state on reads.
type driven struct {
	n           *Node
	committed   chan string
	confChanges chan string
	reads       chan raft.ReadState
}

// startDriven starts member 1 alone and waits until it leads.
func startDriven(t testing.TB) *driven {
	t.Helper()
	st := raft.NewMemoryStorage()
	n, err := Start(config(1, st), []raft.Peer{{ID: 1}})
	if err != nil {
		t.Fatal(err)
	}
	d := &driven{n: n, committed: make(chan string, 1024), confChanges: make(chan string, 16),
		reads: make(chan raft.ReadState, 16)}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); d.drive(t, st, stop) }()
	t.Cleanup(func() { close(stop); <-done })
	// raft campaigns only once the bootstrap's conf changes are applied.
	deadline := time.Now().Add(10 * time.Second)
	for n.Status().RaftState != raft.StateLeader {
		if time.Now().After(deadline) {
			t.Fatal("a single member did not become leader")
		}
		if err := n.Campaign(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	return d
}

// drive takes the Readies until stop is closed.
func (d *driven) drive(t testing.TB, st *raft.MemoryStorage, stop <-chan struct{}) {
	for {
		rd, ok := d.n.Ready()
		if !ok {
			select {
			case <-stop:
				return
			case <-d.n.Wake():
				continue
			}
		}
		if err := st.Append(rd.Entries); err != nil {
			t.Error(err)
			return
		}
		if rd.HardState != nil && !raft.IsEmptyHardState(rd.HardState) {
			if err := st.SetHardState(rd.HardState); err != nil {
				t.Error(err)
				return
			}
		}
		for _, e := range rd.CommittedEntries {
			if e.GetType() == pb.EntryType_EntryConfChange {
				var cc pb.ConfChange
				if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
					t.Error(err)
					return
				}
				d.n.ApplyConfChange(&cc)
				d.confChanges <- cc.String()
			} else if len(e.GetData()) > 0 {
				d.committed <- string(e.GetData())
			}
		}
		for _, rs := range rd.ReadStates {
			d.reads <- rs
		}
		d.n.Advance()
	}
}

// TestConcurrentProposalsAllCommit: proposals from many goroutines, while
// one loop takes the Readies, all commit, each once; under -race this is
// also the check that the node may be used from several goroutines.
func TestConcurrentProposalsAllCommit(t *testing.T) {
	d := startDriven(t)
	const workers, each = 8, 50
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if err := d.n.Propose(fmt.Appendf(nil, "%d-%d", w, i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	seen := map[string]bool{}
	timeout := time.After(10 * time.Second)
	for len(seen) < workers*each {
		select {
		case c := <-d.committed:
			if seen[c] {
				t.Fatalf("%s committed twice", c)
			}
			seen[c] = true
		case <-timeout:
			t.Fatalf("%d of %d proposals committed", len(seen), workers*each)
		}
	}
	wg.Wait()
}

// TestSoleVoterReadIndexIsRaftsAnswer: a leader that is the only voter
// answers with the index raft's ReadIndex round answers with, also with a
// learner beside it; once a second voter is applied, or on a follower, it
// does not answer, and the read must go through raft.
func TestSoleVoterReadIndexIsRaftsAnswer(t *testing.T) {
	d := startDriven(t)
	if err := d.n.Propose([]byte("x")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, d.committed, "x")
	readIndexAgrees := func(when string) {
		t.Helper()
		index, ok := d.n.SoleVoterReadIndex()
		if !ok {
			t.Fatalf("%s: the sole voter gave no read index", when)
		}
		d.n.ReadIndex([]byte(when))
		select {
		case rs := <-d.reads:
			if string(rs.RequestCtx) != when || rs.Index != index {
				t.Fatalf("%s: raft answered %q at %d, the sole voter's read index is %d", when, rs.RequestCtx, rs.Index, index)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: raft did not answer the ReadIndex", when)
		}
	}
	readIndexAgrees("alone")

	addNode := func(cc *pb.ConfChange) {
		t.Helper()
		if err := d.n.ProposeConfChange(cc); err != nil {
			t.Fatal(err)
		}
		waitFor(t, d.confChanges, cc.String())
	}
	addNode(&pb.ConfChange{Type: pb.ConfChangeType_ConfChangeAddLearnerNode.Enum(), NodeId: proto.Uint64(2)})
	readIndexAgrees("with a learner")

	addNode(&pb.ConfChange{Type: pb.ConfChangeType_ConfChangeAddNode.Enum(), NodeId: proto.Uint64(3)})
	if index, ok := d.n.SoleVoterReadIndex(); ok {
		t.Fatalf("a leader of two voters gave read index %d without asking the other", index)
	}

	follower, err := Start(config(4, raft.NewMemoryStorage()), []raft.Peer{{ID: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if index, ok := follower.SoleVoterReadIndex(); ok {
		t.Fatalf("a member that does not lead gave read index %d", index)
	}
}

// waitFor waits until want comes on ch, what comes before it dropped.
func waitFor(t *testing.T, ch <-chan string, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case c := <-ch:
			if c == want {
				return
			}
		case <-timeout:
			t.Fatalf("%s did not come", want)
		}
	}
}

// BenchmarkSoleVoterReadIndex: the read index of a single member's
// linearizable read.
func BenchmarkSoleVoterReadIndex(b *testing.B) {
	d := startDriven(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := d.n.SoleVoterReadIndex(); !ok {
			b.Fatal("the sole voter gave no read index")
		}
	}
}

// TestProposalWithoutLeaderIsDroppedAtOnce: where raft's Node would block
// a proposal until there is a leader, this one refuses it at once.
func TestProposalWithoutLeaderIsDroppedAtOnce(t *testing.T) {
	n, err := Start(config(1, raft.NewMemoryStorage()), []raft.Peer{{ID: 1}, {ID: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Propose([]byte("x")); !errors.Is(err, raft.ErrProposalDropped) {
		t.Fatalf("propose without a leader: %v, want %v", err, raft.ErrProposalDropped)
	}
}

// TestStepIgnoresWhatRaftsNodeIgnores: a local message type from the
// network and an answer from a peer that is not a member are dropped
// without an error, as raft's Node drops them.
func TestStepIgnoresWhatRaftsNodeIgnores(t *testing.T) {
	n, err := Start(config(1, raft.NewMemoryStorage()), []raft.Peer{{ID: 1}, {ID: 2}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*pb.Message{
		{Type: pb.MessageType_MsgHup.Enum(), From: proto.Uint64(2), To: proto.Uint64(1)},
		{Type: pb.MessageType_MsgAppResp.Enum(), From: proto.Uint64(9), To: proto.Uint64(1)},
	} {
		if err := n.Step(m); err != nil {
			t.Errorf("step %v from %d: %v", m.GetType(), m.GetFrom(), err)
		}
	}
	if st := n.Status(); st.RaftState != raft.StateFollower || st.HardState.GetTerm() != 1 {
		t.Errorf("after the ignored messages: %v at term %d, want a follower at term 1", st.RaftState, st.HardState.GetTerm())
	}
}

// TestEveryChangeWakesTheLoop: a tick, a step or a proposal leaves a token
// on Wake, so the loop that waits on it looks for a Ready.
func TestEveryChangeWakesTheLoop(t *testing.T) {
	n, err := Start(config(1, raft.NewMemoryStorage()), []raft.Peer{{ID: 1}, {ID: 2}})
	if err != nil {
		t.Fatal(err)
	}
	drain := func() {
		select {
		case <-n.Wake():
		default:
		}
	}
	for name, change := range map[string]func(){
		"tick":    n.Tick,
		"propose": func() { _ = n.Propose([]byte("x")) },
		"step": func() {
			_ = n.Step(&pb.Message{Type: pb.MessageType_MsgHeartbeat.Enum(), From: proto.Uint64(2), To: proto.Uint64(1)})
		},
		"readindex": func() { n.ReadIndex([]byte("r")) },
	} {
		drain()
		change()
		select {
		case <-n.Wake():
		default:
			t.Errorf("%s left no token on Wake", name)
		}
	}
}

// TestStartNeedsPeers: a new cluster of no members is an error, not raft's
// panic.
func TestStartNeedsPeers(t *testing.T) {
	if _, err := Start(config(1, raft.NewMemoryStorage()), nil); err == nil {
		t.Fatal("Start with no peers: no error")
	}
}

// TestRaftPanicEndsTheProcess: raft panics on a heartbeat that commits past
// the follower's log (the log lost entries it had acknowledged). The step
// comes from a goroutine that recovers panics, as net/http's handlers do;
// the process must still end, with raft's message, and not serve on with
// the node's lock held. The test runs itself in a child process for that.
func TestRaftPanicEndsTheProcess(t *testing.T) {
	if os.Getenv("RAFTNODE_PANIC_CHILD") == "1" {
		n, err := Start(config(1, raft.NewMemoryStorage()), []raft.Peer{{ID: 1}, {ID: 2}})
		if err != nil {
			t.Fatal(err)
		}
		func() {
			defer func() { _ = recover() }()
			_ = n.Step(&pb.Message{Type: pb.MessageType_MsgHeartbeat.Enum(), From: proto.Uint64(2), To: proto.Uint64(1),
				Term: proto.Uint64(2), Commit: proto.Uint64(10)})
		}()
		fmt.Println("served on after raft's panic")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRaftPanicEndsTheProcess$")
	cmd.Env = append(os.Environ(), "RAFTNODE_PANIC_CHILD=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("child: %v, want exit status 2; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "is out of range [lastIndex(2)]") {
		t.Errorf("child's output has no raft panic message:\n%s", out)
	}
}

// TestAppliedMovesAtAdvance: raft's applied index, and the channel that
// tells it moved, change only at the Advance after the Ready that handed
// the entries to apply: until then raft empties a conf change proposed
// after one that the member has already applied.
func TestAppliedMovesAtAdvance(t *testing.T) {
	st := raft.NewMemoryStorage()
	n, err := Start(config(1, st), []raft.Peer{{ID: 1}})
	if err != nil {
		t.Fatal(err)
	}
	rd, _ := n.Ready()
	if len(rd.CommittedEntries) == 0 {
		t.Fatal("the bootstrap's Ready commits nothing")
	}
	before, moved := n.Applied()
	if err := st.Append(rd.Entries); err != nil {
		t.Fatal(err)
	}
	select {
	case <-moved:
		t.Fatal("the applied channel closed before Advance")
	default:
	}
	n.Advance()
	select {
	case <-moved:
	default:
		t.Fatal("the applied channel still open after Advance")
	}
	want := rd.CommittedEntries[len(rd.CommittedEntries)-1].GetIndex()
	if now, _ := n.Applied(); now != want {
		t.Fatalf("applied index %d after Advance (%d before), want the Ready's last committed index %d", now, before, want)
	}
}
