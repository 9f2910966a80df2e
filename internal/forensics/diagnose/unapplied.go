package diagnose

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/cairnkv/cairn/pkg/walfmt"
)

// unapplied are the entries a WAL holds as committed (index ≤ its
// HardState commit) that the db has not applied (index > its consistent
// index): a restart of the member would apply them, a copy of its db
// lacks them.
type unapplied struct {
	first, last uint64         // the range (consistent index, commit]
	kinds       map[string]int // request kind → count, of the entries found
	found       int            // entries of the range the WAL holds
}

// count is the number of entries in the range.
func (u *unapplied) count() uint64 { return u.last - u.first + 1 }

// missing is how many entries of the range the WAL does not hold.
func (u *unapplied) missing() uint64 { return u.count() - uint64(u.found) }

// findUnapplied reads the WAL in walDir once more for the entries in
// (applied, commit]. A later entry with the same index supersedes an
// earlier one, so the kinds are counted once the whole WAL is read.
// Damage is skipped: what wal verify reports is reported already.
func findUnapplied(walDir string, applied, commit uint64) *unapplied {
	u := &unapplied{first: applied + 1, last: commit, kinds: map[string]int{}}
	d, err := walfmt.OpenDecoder(walDir, walfmt.DecoderOptions{})
	if err != nil {
		return u
	}
	defer d.Close()
	byIndex := map[uint64]string{}
	for {
		it, err := d.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var we *walfmt.Error
			if errors.As(err, &we) {
				continue
			}
			break
		}
		if e := it.Entry; e != nil && e.GetIndex() >= u.first && e.GetIndex() <= u.last {
			byIndex[e.GetIndex()] = entryKind(e)
		}
	}
	u.found = len(byIndex)
	for _, k := range byIndex {
		u.kinds[k]++
	}
	return u
}

// entryKind names what an entry does: the request kind of a normal entry,
// conf_change for membership changes, empty for a new leader's empty entry.
func entryKind(e *raftpb.Entry) string {
	req, err := walfmt.DecodeEntryRequest(e)
	switch {
	case err != nil:
		return "undecodable"
	case req.ConfChange != nil || req.ConfChangeV2 != nil:
		return "conf_change"
	case req.Request != nil:
		if k := walfmt.RequestKind(req.Request); k != "" {
			return k
		}
	}
	return "empty"
}

// text describes the entries on one line.
func (u *unapplied) text() string {
	names := make([]string, 0, len(u.kinds))
	for k := range u.kinds {
		names = append(names, k)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%d %s", u.kinds[k], k)
	}
	s := fmt.Sprintf("entry %d", u.first)
	if u.count() > 1 {
		s = fmt.Sprintf("%d entries, %d-%d", u.count(), u.first, u.last)
	}
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	if m := u.missing(); m > 0 {
		s += fmt.Sprintf(", %d of them not in the WAL", m)
	}
	return s
}
