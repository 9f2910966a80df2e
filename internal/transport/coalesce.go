package transport

import "go.etcd.io/raft/v3/raftpb"

// maxCoalescedEntryBytes bounds the entry data of one coalesced message, so
// that merging never builds a message much larger than raft's own
// (MaxSizePerMsg, 1 MiB in cairn).
const maxCoalescedEntryBytes = 1 << 20

// coalesce merges runs of messages to one peer that raft would process
// exactly as one message, so that the peer decodes, steps and answers one
// message where raft produced many: with many clients, a leader sends each
// follower one append per proposal, and the follower answers each.
//
//   - Appends whose entries continue one another (each starts where the
//     previous ends, at the same term) become one append carrying all the
//     entries and the highest commit index. Its follower appends them as it
//     would have appended them one after the other.
//   - Successful append responses keep only the last, highest one: the
//     leader only uses the index it acknowledges.
//   - Proposals forwarded to the leader become one proposal of all their
//     entries, in order. (A forwarded proposal gets no answer either way.)
//
// Anything else, and anything a run does not match, is kept as it is and in
// order. The messages given are not modified; msgs is reused for the result.
func coalesce(msgs []*raftpb.Message) []*raftpb.Message {
	out := msgs[:0]
	var last *raftpb.Message // out's last message if coalesce built it
	lastBytes := 0           // entry bytes of out's last message
	for _, m := range msgs {
		size := entryBytes(m)
		if n := len(out); n > 0 && lastBytes+size <= maxCoalescedEntryBytes && mergeable(out[n-1], m) {
			if out[n-1] != last && m.GetType() != raftpb.MessageType_MsgAppResp {
				last = startMerge(out[n-1])
				out[n-1] = last
			}
			switch m.GetType() {
			case raftpb.MessageType_MsgAppResp:
				out[n-1] = m
			default:
				last.Entries = append(last.Entries, m.GetEntries()...)
				if m.GetCommit() > last.GetCommit() {
					last.Commit = m.Commit
				}
			}
			lastBytes += size
			continue
		}
		out = append(out, m)
		lastBytes = size
	}
	return out
}

// mergeable reports whether b can be merged into a (see coalesce).
func mergeable(a, b *raftpb.Message) bool {
	if a.GetType() != b.GetType() || a.GetTo() != b.GetTo() || a.GetFrom() != b.GetFrom() ||
		a.GetTerm() != b.GetTerm() || !plain(a) || !plain(b) {
		return false
	}
	switch a.GetType() {
	case raftpb.MessageType_MsgApp:
		lastIndex, lastTerm := a.GetIndex(), a.GetLogTerm()
		if n := len(a.GetEntries()); n > 0 {
			lastIndex, lastTerm = a.GetEntries()[n-1].GetIndex(), a.GetEntries()[n-1].GetTerm()
		}
		return b.GetIndex() == lastIndex && b.GetLogTerm() == lastTerm
	case raftpb.MessageType_MsgAppResp:
		return b.GetIndex() >= a.GetIndex()
	case raftpb.MessageType_MsgProp:
		return true
	}
	return false
}

// startMerge returns a copy of m that coalesce may add entries to: the
// entries of a message raft made belong to raft's log and must not be
// appended to in place.
func startMerge(m *raftpb.Message) *raftpb.Message {
	return &raftpb.Message{
		Type: m.Type, To: m.To, From: m.From, Term: m.Term,
		LogTerm: m.LogTerm, Index: m.Index, Commit: m.Commit,
		Entries: append([]*raftpb.Entry(nil), m.GetEntries()...),
	}
}

// plain reports whether m has none of the fields a merged message would
// drop.
func plain(m *raftpb.Message) bool {
	return m.Snapshot == nil && m.Reject == nil && m.RejectHint == nil &&
		len(m.Context) == 0 && m.Vote == nil && len(m.Responses) == 0
}

func entryBytes(m *raftpb.Message) int {
	n := 0
	for _, e := range m.GetEntries() {
		n += len(e.GetData())
	}
	return n
}
