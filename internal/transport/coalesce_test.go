package transport

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func entry(index, term uint64, data string) *raftpb.Entry {
	return &raftpb.Entry{Index: proto.Uint64(index), Term: proto.Uint64(term), Data: []byte(data)}
}

// app is an append from 1 to 2 at term 3: after (index, logTerm), the
// entries, commit.
func app(index, logTerm, commit uint64, ents ...*raftpb.Entry) *raftpb.Message {
	m := msg(2, raftpb.MessageType_MsgApp)
	m.Index, m.LogTerm, m.Commit, m.Entries = proto.Uint64(index), proto.Uint64(logTerm), proto.Uint64(commit), ents
	return m
}

func appResp(index uint64) *raftpb.Message {
	m := msg(1, raftpb.MessageType_MsgAppResp)
	m.From, m.Index = proto.Uint64(2), proto.Uint64(index)
	return m
}

func describe(msgs []*raftpb.Message) []string {
	var out []string
	for _, m := range msgs {
		s := fmt.Sprintf("%s %d->%d i%d c%d", m.GetType(), m.GetFrom(), m.GetTo(), m.GetIndex(), m.GetCommit())
		for _, e := range m.GetEntries() {
			s += fmt.Sprintf(" %d:%s", e.GetIndex(), e.GetData())
		}
		if m.GetReject() {
			s += " reject"
		}
		out = append(out, s)
	}
	return out
}

func TestCoalesce(t *testing.T) {
	heartbeat := msg(2, raftpb.MessageType_MsgHeartbeat)
	reject := appResp(4)
	reject.Reject, reject.RejectHint = proto.Bool(true), proto.Uint64(2)
	otherTerm := app(6, 3, 5, entry(7, 4, "g"))
	otherTerm.Term = proto.Uint64(4)
	prop := func(data string) *raftpb.Message {
		m := msg(1, raftpb.MessageType_MsgProp)
		m.From, m.Term, m.Entries = proto.Uint64(2), nil, []*raftpb.Entry{{Data: []byte(data)}}
		return m
	}
	for _, tc := range []struct {
		name string
		in   []*raftpb.Message
		want []string
	}{
		{"contiguous appends become one, with the highest commit",
			[]*raftpb.Message{app(4, 3, 3, entry(5, 3, "a")), app(5, 3, 4, entry(6, 3, "b"), entry(7, 3, "c")), app(7, 3, 5, entry(8, 3, "d"))},
			[]string{"MsgApp 1->2 i4 c5 5:a 6:b 7:c 8:d"}},
		{"a commit-only append joins the one before",
			[]*raftpb.Message{app(4, 3, 3, entry(5, 3, "a")), app(5, 3, 5)},
			[]string{"MsgApp 1->2 i4 c5 5:a"}},
		{"a gap, another term or a heartbeat between keep appends apart",
			[]*raftpb.Message{app(4, 3, 3, entry(5, 3, "a")), app(6, 3, 3, entry(7, 3, "c")), heartbeat, app(7, 3, 3, entry(8, 3, "d")), otherTerm},
			[]string{"MsgApp 1->2 i4 c3 5:a", "MsgApp 1->2 i6 c3 7:c", "MsgHeartbeat 1->2 i0 c0", "MsgApp 1->2 i7 c3 8:d", "MsgApp 1->2 i6 c5 7:g"}},
		{"append responses keep the last; a rejection stays",
			[]*raftpb.Message{appResp(5), appResp(6), appResp(8), reject, appResp(9), appResp(10)},
			[]string{"MsgAppResp 2->1 i8 c0", "MsgAppResp 2->1 i4 c0 reject", "MsgAppResp 2->1 i10 c0"}},
		{"forwarded proposals become one, in order",
			[]*raftpb.Message{prop("x"), prop("y"), prop("z")},
			[]string{"MsgProp 2->1 i0 c0 0:x 0:y 0:z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describe(coalesce(slices.Clone(tc.in))); !slices.Equal(got, tc.want) {
				t.Errorf("coalesce:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestCoalesceLeavesRaftsMessagesAlone(t *testing.T) {
	// raft's entries slices may have room after them: merging must not
	// write into it.
	backing := []*raftpb.Entry{entry(5, 3, "a"), entry(99, 9, "raft's own")}
	first := app(4, 3, 3, backing[:1]...)
	second := app(5, 3, 4, entry(6, 3, "b"))
	before := describe([]*raftpb.Message{first, second})
	coalesce([]*raftpb.Message{first, second})
	if after := describe([]*raftpb.Message{first, second}); !slices.Equal(before, after) {
		t.Errorf("the messages changed:\n%q\n%q", before, after)
	}
	if backing[1].GetIndex() != 99 {
		t.Errorf("the entry after the message's entries was overwritten: %v", backing[1])
	}
}

func TestCoalesceBoundsTheMessageSize(t *testing.T) {
	big := string(make([]byte, maxCoalescedEntryBytes/2+1))
	got := coalesce([]*raftpb.Message{app(4, 3, 3, entry(5, 3, big)), app(5, 3, 3, entry(6, 3, big))})
	if len(got) != 2 {
		t.Errorf("two appends of more than half the limit each were merged into %d messages", len(got))
	}
}

// TestCoalescedRaftClusterAgrees runs three raft nodes in memory, delivering
// each Ready's messages to a peer coalesced (as the transport does), with
// proposals on the leader and forwarded from followers: every node must end
// with the same log, holding each proposal once, all of it committed, with
// far fewer messages stepped than raft sent.
func TestCoalescedRaftClusterAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := newMemCluster(t, 3)
	proposed := map[string]bool{}
	for round := 0; round < 200; round++ {
		for range 1 + rng.IntN(30) {
			data := fmt.Sprintf("p%d", len(proposed))
			proposed[data] = true
			on := c.nodes[1]
			if rng.IntN(3) == 0 {
				on = c.nodes[uint64(2+rng.IntN(2))] // forwarded to the leader
			}
			if err := on.Propose([]byte(data)); err != nil {
				t.Fatalf("propose %s: %v", data, err)
			}
		}
		c.settle(t)
	}
	logs := map[uint64][]string{}
	for id, s := range c.storage {
		first, _ := s.FirstIndex()
		last, _ := s.LastIndex()
		ents, err := s.Entries(first, last+1, 1<<62)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if len(e.GetData()) > 0 {
				logs[id] = append(logs[id], string(e.GetData()))
			}
		}
		if commit := c.nodes[id].Status().GetCommit(); commit != last {
			t.Errorf("node %d committed %d of %d entries", id, commit, last)
		}
	}
	if !slices.Equal(logs[1], logs[2]) || !slices.Equal(logs[1], logs[3]) {
		t.Fatalf("the logs differ:\n1: %v\n2: %v\n3: %v", logs[1], logs[2], logs[3])
	}
	seen := map[string]bool{}
	for _, d := range logs[1] {
		if seen[d] {
			t.Errorf("%s is in the log twice", d)
		}
		seen[d] = true
	}
	if len(seen) != len(proposed) {
		t.Errorf("%d of %d proposals are in the log", len(seen), len(proposed))
	}
	t.Logf("raft sent %d messages; %d were stepped after coalescing", c.sent, c.stepped)
	if c.stepped*2 > c.sent {
		t.Errorf("coalescing stepped %d of %d messages, expected under half", c.stepped, c.sent)
	}
}

// memCluster is a raft cluster in memory, its network the coalescing of
// each Ready's messages to each peer.
type memCluster struct {
	nodes         map[uint64]*raft.RawNode
	storage       map[uint64]*raft.MemoryStorage
	sent, stepped int
}

func newMemCluster(t *testing.T, size uint64) *memCluster {
	t.Helper()
	c := &memCluster{nodes: map[uint64]*raft.RawNode{}, storage: map[uint64]*raft.MemoryStorage{}}
	voters := []uint64{}
	for id := uint64(1); id <= size; id++ {
		voters = append(voters, id)
	}
	for _, id := range voters {
		s := raft.NewMemoryStorage()
		if err := s.ApplySnapshot(&raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{
			Index: proto.Uint64(1), Term: proto.Uint64(1), ConfState: &raftpb.ConfState{Voters: voters}}}); err != nil {
			t.Fatal(err)
		}
		rn, err := raft.NewRawNode(&raft.Config{ID: id, ElectionTick: 10, HeartbeatTick: 1, Storage: s,
			MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 512, Logger: discardRaftLogger{}})
		if err != nil {
			t.Fatal(err)
		}
		c.nodes[id], c.storage[id] = rn, s
	}
	if err := c.nodes[1].Campaign(); err != nil {
		t.Fatal(err)
	}
	c.settle(t)
	if st := c.nodes[1].Status(); st.RaftState != raft.StateLeader {
		t.Fatalf("node 1 did not become leader: %v", st.RaftState)
	}
	return c
}

// settle handles Readies and delivers messages until there are none.
func (c *memCluster) settle(t *testing.T) {
	t.Helper()
	for busy := true; busy; {
		busy = false
		for id, rn := range c.nodes {
			if !rn.HasReady() {
				continue
			}
			busy = true
			rd := rn.Ready()
			if rd.HardState != nil && !raft.IsEmptyHardState(rd.HardState) {
				c.storage[id].SetHardState(rd.HardState)
			}
			if err := c.storage[id].Append(rd.Entries); err != nil {
				t.Fatal(err)
			}
			rn.Advance(rd)
			c.sent += len(rd.Messages)
			for to := range c.nodes {
				var batch []*raftpb.Message
				for _, m := range rd.Messages {
					if m.GetTo() == to {
						batch = append(batch, m)
					}
				}
				for _, m := range coalesce(batch) {
					c.stepped++
					if err := c.nodes[to].Step(m); err != nil {
						t.Fatalf("step %s on %d: %v", m.GetType(), to, err)
					}
				}
			}
		}
	}
}

type discardRaftLogger struct{}

func (discardRaftLogger) Debug(...any)            {}
func (discardRaftLogger) Debugf(string, ...any)   {}
func (discardRaftLogger) Error(...any)            {}
func (discardRaftLogger) Errorf(string, ...any)   {}
func (discardRaftLogger) Info(...any)             {}
func (discardRaftLogger) Infof(string, ...any)    {}
func (discardRaftLogger) Warning(...any)          {}
func (discardRaftLogger) Warningf(string, ...any) {}
func (discardRaftLogger) Fatal(v ...any)          { panic(fmt.Sprint(v...)) }
func (discardRaftLogger) Fatalf(f string, v ...any) {
	panic(fmt.Sprintf(f, v...))
}
func (discardRaftLogger) Panic(v ...any)            { panic(fmt.Sprint(v...)) }
func (discardRaftLogger) Panicf(f string, v ...any) { panic(fmt.Sprintf(f, v...)) }

// BenchmarkCoalesce: what a leader's Ready holds for one follower under
// many clients, 100 single-entry appends, framed for the wire as one
// coalesced message or as they are.
func BenchmarkCoalesce(b *testing.B) {
	msgs := make([]*raftpb.Message, 100)
	for i := range msgs {
		index := uint64(100 + i)
		msgs[i] = app(index, 3, index, entry(index+1, 3, string(make([]byte, 300))))
	}
	for _, merge := range []bool{true, false} {
		name := "coalesced"
		if !merge {
			name = "one-by-one"
		}
		b.Run(name, func(b *testing.B) {
			batch := make([]*raftpb.Message, len(msgs))
			var buf bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				copy(batch, msgs)
				out := batch
				if merge {
					out = coalesce(batch)
				}
				buf.Reset()
				for _, m := range out {
					if err := appendFrame(&buf, m); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
