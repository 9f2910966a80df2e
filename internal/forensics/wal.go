package forensics

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairnkv/cairn/internal/cliutil/printer"
	"github.com/cairnkv/cairn/internal/cliutil/progress"
	"github.com/cairnkv/cairn/pkg/boltfile"
	"github.com/cairnkv/cairn/pkg/walfmt"
)

// newWALCommand builds `wal verify` and `wal repair`.
func newWALCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "wal <subcommand>",
		Short: "Verifies or repairs the WAL of a data directory offline",
	}
	cmd.AddCommand(newWALVerifyCommand(), newWALRepairCommand())
	return cmd
}

func newWALVerifyCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "verify <data dir>",
		Short: "Checks the frames, the CRC chain and the raft log of a WAL",
		Long: `verify reads the whole WAL of a data directory, read-only, and reports its segments,
records, entry range, commit index and CRC state. The exit status is 0 when the WAL is
healthy and non-zero when it is damaged; every problem found is listed with its file
and offset.`,
		Example: "  cairn wal verify /var/lib/etcd",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(cmd, printer.FormatSimple, printer.FormatSimple, printer.FormatTable, printer.FormatJSON)
			if err != nil {
				return err
			}
			dir, err := resolveWALDir(args[0])
			if err != nil {
				return err
			}
			prog := progress.ForCommand(cmd, "wal verify", 0, false)
			scan, err := scanWAL(dir, prog.UpdateOf)
			prog.Finish()
			if err != nil {
				return err
			}
			snaps := checkSnapFiles(filepath.Join(filepath.Dir(dir), snapDirName), scan)
			if format == printer.FormatJSON {
				err = printer.New(cmd.OutOrStdout(), printer.FormatJSON, false).PrintJSON(newWALReport(scan, snaps))
			} else {
				writeWALReport(cmd.OutOrStdout(), scan, snaps)
			}
			if err != nil {
				return err
			}
			if !scan.healthy() {
				return fmt.Errorf("wal %s is damaged: %s", dir, scan.problem())
			}
			if !snaps.healthy() {
				return fmt.Errorf("snap files of %s are damaged: %s", snaps.dir, snaps.problems[0])
			}
			return nil
		},
	}
}

// writeWALReport writes the human-readable verification report.
func writeWALReport(w io.Writer, s *walScan, snaps *snapCheck) {
	names := make([]string, len(s.segments))
	for i, sg := range s.segments {
		names[i] = sg.Name()
	}
	fmt.Fprintf(w, "wal: %s\n", s.dir)
	fmt.Fprintf(w, "segments: %d (%s), %d bytes\n", len(s.segments), strings.Join(names, ", "), s.bytes)
	fmt.Fprintln(w, recordCountsText(s))
	if s.metadata != nil {
		fmt.Fprintf(w, "metadata: node %x, cluster %x\n", s.metadata.GetNodeID(), s.metadata.GetClusterID())
	}
	fmt.Fprintln(w, entriesText(s))
	if s.lastSnapshot != nil {
		fmt.Fprintf(w, "last snapshot record: index %d, term %d\n", s.lastSnapshot.Index, s.lastSnapshot.Term)
	}
	fmt.Fprintf(w, "snap files: %s\n", snaps.text())
	fmt.Fprintln(w, healthText(s))
	for _, d := range s.damage {
		fmt.Fprintf(w, "problem: %v\n", d)
	}
	for _, g := range s.gaps {
		fmt.Fprintf(w, "problem: %v: %s\n", walfmt.ErrEntryGap, g)
	}
	for _, p := range snaps.problems {
		fmt.Fprintf(w, "problem: %s\n", p)
	}
	if s.healthy() && snaps.healthy() {
		fmt.Fprintln(w, "status: healthy")
		return
	}
	fmt.Fprintln(w, "status: DAMAGED")
	if tornTailOnly(s) {
		fmt.Fprintln(w, "hint: the only damage is at the end of the last segment, as a crash mid-write leaves it; `cairn wal repair` can cut it off")
	}
}

// tornTailOnly reports whether the only damage found is a torn tail that
// `cairn wal repair` would cut: in the last segment, of the kind a crash
// leaves, with no good record after it.
func tornTailOnly(s *walScan) bool {
	if len(s.damage) == 0 || len(s.gaps) > 0 {
		return false
	}
	damage, err := walfmt.CheckRepair(s.dir)
	return err == nil && damage != nil
}

// walReportJSON is `wal verify -w json`.
type walReportJSON struct {
	Dir           string         `json:"dir"`
	Healthy       bool           `json:"healthy"`
	Segments      []string       `json:"segments"`
	Bytes         int64          `json:"bytes"`
	Records       int            `json:"records"`
	RecordCounts  map[string]int `json:"recordCounts"`
	NodeID        string         `json:"nodeID,omitempty"`
	ClusterID     string         `json:"clusterID,omitempty"`
	Entries       int            `json:"entries"`
	FirstIndex    uint64         `json:"firstIndex"`
	LastIndex     uint64         `json:"lastIndex"`
	CommitIndex   uint64         `json:"commitIndex"`
	Superseded    int            `json:"superseded"`
	SnapshotIndex *uint64        `json:"snapshotIndex,omitempty"`
	SnapshotTerm  *uint64        `json:"snapshotTerm,omitempty"`
	LastCRC       string         `json:"lastCRC"`
	SnapFiles     string         `json:"snapFiles"`
	Problems      []string       `json:"problems,omitempty"`
}

func newWALReport(s *walScan, snaps *snapCheck) *walReportJSON {
	r := &walReportJSON{Dir: s.dir, Healthy: s.healthy() && snaps.healthy(), SnapFiles: snaps.text(), Bytes: s.bytes, Records: s.records, RecordCounts: map[string]int{},
		Entries: s.entries, FirstIndex: s.firstIndex, LastIndex: s.lastIndex, CommitIndex: s.commit(),
		Superseded: s.superseded, LastCRC: fmt.Sprintf("%08x", s.lastCRC)}
	for _, sg := range s.segments {
		r.Segments = append(r.Segments, sg.Name())
	}
	for t, n := range s.counts {
		r.RecordCounts[t.String()] = n
	}
	if s.metadata != nil {
		r.NodeID, r.ClusterID = fmt.Sprintf("%x", s.metadata.GetNodeID()), fmt.Sprintf("%x", s.metadata.GetClusterID())
	}
	if s.lastSnapshot != nil {
		r.SnapshotIndex, r.SnapshotTerm = ptr(s.lastSnapshot.Index), ptr(s.lastSnapshot.Term)
	}
	for _, d := range s.damage {
		r.Problems = append(r.Problems, d.Error())
	}
	for _, g := range s.gaps {
		r.Problems = append(r.Problems, fmt.Sprintf("%v: %s", walfmt.ErrEntryGap, g))
	}
	r.Problems = append(r.Problems, snaps.problems...)
	return r
}

func newWALRepairCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "repair <data dir>",
		Short: "Cuts a torn tail off the last WAL segment, keeping the cut bytes in a .broken file",
		Long: `repair fixes the one kind of damage a crash leaves in a WAL: a torn or partly written
frame at the end of the last segment. It saves the bytes from the damage to the end of
the file in SEGMENT.broken and truncates the segment there, as etcd does when it opens
such a WAL. Any other damage is refused, with the reason: cutting there could drop
acknowledged writes. The member must not be running: repair refuses a WAL whose last
segment, or the db of whose data dir, another process holds locked, as a member does.`,
		Example: "  cairn wal repair /var/lib/etcd   # truncates a torn last record; stop the member first",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := resolveWALDir(args[0])
			if err != nil {
				return err
			}
			release, err := lockDB(dir)
			if err != nil {
				return fmt.Errorf("wal %s not repaired, nothing changed: %s: %w", dir, memberRunning, err)
			}
			defer release()
			res, err := walfmt.Repair(dir)
			if err != nil {
				if errors.Is(err, walfmt.ErrNotRepairable) {
					return fmt.Errorf("wal %s not repaired, nothing changed: %w", dir, err)
				}
				if errors.Is(err, walfmt.ErrLocked) {
					return fmt.Errorf("wal %s not repaired, nothing changed: %s: %w", dir, memberRunning, err)
				}
				return fmt.Errorf("repair wal %s: %w", dir, err)
			}
			out := cmd.OutOrStdout()
			if res == nil {
				fmt.Fprintf(out, "wal %s: nothing to repair\n", dir)
				return nil
			}
			fmt.Fprintf(out, "repaired wal %s: truncated %s at offset %d, cutting %d bytes (%v); the cut bytes are saved in %s\n",
				dir, filepath.Base(res.Segment), res.Offset, res.CutBytes, res.Damage, res.BrokenPath)
			scan, err := scanWAL(dir, nil)
			if err != nil {
				return err
			}
			if !scan.healthy() {
				return fmt.Errorf("wal %s is still damaged after the repair: %s", dir, scan.problem())
			}
			fmt.Fprintf(out, "wal %s is now healthy: %s\n", dir, entriesText(scan))
			return nil
		},
	}
}

// memberRunning is why the kit refuses to change what a process holds.
const memberRunning = "a member (cairn serve or etcd) is running on this data dir; stop it first"

// lockDB takes, for the repair of the WAL in walDir, a shared lock on the
// db of its data dir, which a running member holds exclusively; it fails
// with boltfile.ErrLocked if another process holds it. The WAL's own lock,
// which Repair takes, is a flock that etcd's fcntl lock does not conflict
// with: the db's, a flock in both, sees an etcd member too. With no
// readable db beside the WAL (a --wal-dir elsewhere, a damaged db) there is
// nothing to lock. It returns the function that releases the lock.
func lockDB(walDir string) (release func(), err error) {
	p := filepath.Join(filepath.Dir(walDir), snapDirName, dbFileName)
	if _, err := os.Stat(p); err != nil {
		return func() {}, nil
	}
	db, err := boltfile.Open(p, dbLockTimeout)
	switch {
	case errors.Is(err, boltfile.ErrLocked):
		return nil, err
	case err != nil:
		return func() {}, nil
	}
	return func() { db.Close() }, nil
}
