package robustness

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/cairnkv/cairn/pkg/walfmt"
)

// memberLog is the final part of the raft log a member's WAL holds once
// the member has stopped: the entries at or below its last hard state's
// commit index, an entry written later at the same index replacing the
// earlier one.
type memberLog struct {
	name    string
	commit  uint64
	entries map[uint64]*raftpb.Entry
	damage  []string // what the decoder reported, frame by frame
}

// walDir is where etcd, and cairn, keep a member's WAL.
func walDir(dataDir string) string { return filepath.Join(dataDir, "member", "wal") }

// readMemberLog reads the WAL in dir record by record. An entry truncates
// the log after its own index (raft's rule, as walfmt.ReadAll applies it);
// a snapshot record drops the entries above the commit index known at that
// point, which the snapshot may have replaced without the WAL rewriting
// them. Damage is recorded and the decoder goes on past it.
func readMemberLog(name, dir string) (*memberLog, error) {
	d, err := walfmt.OpenDecoder(dir, walfmt.DecoderOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer d.Close()
	l := &memberLog{name: name, entries: map[uint64]*raftpb.Entry{}}
	var last uint64 // the highest index held
	dropAbove := func(i uint64) {
		for ; last > i; last-- {
			delete(l.entries, last)
		}
	}
	for {
		it, err := d.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var we *walfmt.Error
			if !errors.As(err, &we) {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			l.damage = append(l.damage, we.Error())
			continue
		}
		switch {
		case it.Entry != nil:
			i := it.Entry.GetIndex()
			dropAbove(i)
			l.entries[i], last = it.Entry, i
		case it.HardState != nil:
			l.commit = max(l.commit, it.HardState.GetCommit())
		case it.Snapshot != nil:
			dropAbove(l.commit)
		}
	}
	for i := range l.entries {
		if i > l.commit {
			delete(l.entries, i)
		}
	}
	return l, nil
}

// compareLogs lists the indexes at which two members hold different final
// entries (term, type or data), at most max of them, each with both entries
// decoded.
func compareLogs(logs []*memberLog, max int) []string {
	indexes := map[uint64]bool{}
	for _, l := range logs {
		for i := range l.entries {
			indexes[i] = true
		}
	}
	var bad []string
	for _, i := range slices.Sorted(maps.Keys(indexes)) {
		var ref *memberLog
		for _, l := range logs {
			e, ok := l.entries[i]
			if !ok {
				continue
			}
			if ref == nil {
				ref = l
				continue
			}
			r := ref.entries[i]
			if r.GetTerm() != e.GetTerm() || r.GetType() != e.GetType() || !bytes.Equal(r.GetData(), e.GetData()) {
				bad = append(bad, fmt.Sprintf("mismatching entries on raft index %d: %s has %s; %s has %s",
					i, ref.name, describeEntry(r), l.name, describeEntry(e)))
				break
			}
		}
		if len(bad) == max {
			break
		}
	}
	return bad
}

// describeEntry is an entry's term, type and decoded data, cut to a length
// a failure line can hold.
func describeEntry(e *raftpb.Entry) string {
	var what string
	switch req, err := walfmt.DecodeEntryRequest(e); {
	case err != nil:
		what = fmt.Sprintf("undecodable data %x (%v)", e.GetData(), err)
	case req.Request != nil:
		what = req.Request.String()
	case req.ConfChange != nil:
		what = req.ConfChange.String()
	case req.ConfChangeV2 != nil:
		what = req.ConfChangeV2.String()
	default:
		what = "no data"
	}
	what = strings.Join(strings.Fields(what), " ") // protobuf's text varies its spaces
	if len(what) > 300 {
		what = what[:300] + "..."
	}
	return fmt.Sprintf("{term %d %s %s}", e.GetTerm(), e.GetType(), what)
}

// checkWALs reads the WAL of every member ever started (stopped by now)
// and returns what disagrees: damage, and final entries that differ.
func checkWALs(ms []*member) (damage, mismatches []string) {
	var logs []*memberLog
	for _, m := range ms {
		l, err := readMemberLog(m.name, walDir(m.dataDir))
		if err != nil {
			damage = append(damage, err.Error())
			continue
		}
		for _, s := range l.damage {
			damage = append(damage, fmt.Sprintf("%s: %s", m.name, s))
		}
		logs = append(logs, l)
	}
	return damage, compareLogs(logs, 10)
}
