package forensics

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/cairnkv/cairn/internal/cliutil/printer"
	"github.com/cairnkv/cairn/internal/cliutil/progress"
	"github.com/cairnkv/cairn/pkg/walfmt"
)

// dumpLogsOptions are the flags of dump-logs.
type dumpLogsOptions struct {
	startIndex    uint64
	endIndex      uint64
	entryTypes    string
	streamDecoder string
	raw           bool
}

func newDumpLogsCommand() *cobra.Command {
	var opts dumpLogsOptions
	cmd := &cobra.Command{
		Use:   "dump-logs <data dir>",
		Short: "Prints the records of a data directory's WAL offline, entries decoded",
		Long: `dump-logs reads the WAL of a data directory (DATA_DIR/member/wal) with no member
running and prints every record: crc, metadata (node and cluster ID), snapshot, hard
state and entry records. Each entry shows its term, index, type, whether it is committed
(index at or below the last hard state's commit) and its decoded request. An entry that
a later entry with the same index replaced (a raft log truncation) is left out, or shown
as superseded with --raw.

The CRC chain and the frames are verified; damage is reported where it is found, with
the file and offset, and reading goes on with the next trustworthy record. The exit
status is non-zero if the WAL is damaged.

--entry-type takes a comma-separated list of: Normal, ConfigChange, ConfigChangeV2,
InternalRaftRequest, IRR<Request> (IRRPut, IRRDeleteRange, IRRTxn, IRRCompaction,
IRRLeaseGrant, IRRLeaseRevoke, IRRAuthUserAdd, ...), Entry, HardState, Snapshot,
Metadata, CRC.

--stream-decoder runs a program that receives each entry's data as a line of hex on
its stdin and answers with a line "STATUS|DECODED" on its stdout.`,
		Example: `  cairn dump-logs /var/lib/etcd
  cairn dump-logs /var/lib/etcd --start-index 1000 --end-index 1100
  cairn dump-logs /var/lib/etcd --entry-type IRRPut,IRRDeleteRange --raw`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(cmd, printer.FormatTable, printer.FormatTable, printer.FormatSimple, printer.FormatJSON)
			if err != nil {
				return err
			}
			filter, err := newRecordFilter(opts.startIndex, opts.endIndex, opts.entryTypes)
			if err != nil {
				return err
			}
			dir, err := resolveWALDir(args[0])
			if err != nil {
				return err
			}
			var out walRecordPrinter
			if format == printer.FormatJSON {
				out = newWALJSONPrinter(cmd.OutOrStdout())
			} else {
				out = newWALTablePrinter(cmd.OutOrStdout())
			}
			return dumpLogs(cmd, dir, filter, opts, out)
		},
	}
	fs := cmd.Flags()
	fs.Uint64Var(&opts.startIndex, "start-index", 0, "print entries from this index on")
	fs.Uint64Var(&opts.endIndex, "end-index", 0, "print entries up to this index (0: to the end)")
	fs.StringVar(&opts.entryTypes, "entry-type", "", "comma-separated kinds of entries and records to print (default: all)")
	fs.StringVar(&opts.streamDecoder, "stream-decoder", "", "program that decodes each entry's data (hex lines on stdin, STATUS|DECODED lines on stdout)")
	fs.BoolVar(&opts.raw, "raw", false, "also print superseded entries, as written")
	return cmd
}

// dumpLogs reads the WAL twice, in constant memory: once to learn the
// commit index and where the raft log was truncated, once to print.
func dumpLogs(cmd *cobra.Command, dir string, filter *recordFilter, opts dumpLogsOptions, out walRecordPrinter) error {
	prog := progress.ForCommand(cmd, "dump-logs: scanning", 0, true)
	scan, err := scanWAL(dir, prog.UpdateOf)
	prog.Finish()
	if err != nil {
		return err
	}
	var dec *streamDecoder
	if opts.streamDecoder != "" {
		if dec, err = startStreamDecoder(opts.streamDecoder); err != nil {
			return err
		}
	}
	prog = progress.ForCommand(cmd, "dump-logs: printing", scan.bytes, true)
	shown, err := printWAL(dir, scan, filter, opts.raw, dec, out, prog)
	prog.Finish()
	if cerr := dec.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := out.summary(scan, shown); err != nil {
		return err
	}
	if !scan.healthy() {
		return fmt.Errorf("wal %s is damaged: %s", dir, scan.problem())
	}
	return nil
}

// printWAL is the second pass: it prints the records the filter selects and
// returns the number of entries printed.
func printWAL(dir string, scan *walScan, filter *recordFilter, raw bool, dec *streamDecoder, out walRecordPrinter, prog *progress.Bytes) (int, error) {
	d, err := walfmt.OpenDecoder(dir, walfmt.DecoderOptions{VerifyTail: true})
	if err != nil {
		return 0, fmt.Errorf("wal %s: %w", dir, err)
	}
	defer d.Close()
	pos := newWALPosition(scan.segments)
	fate := &entryFate{scan: scan}
	commit := scan.commit()
	ordinal, shown := -1, 0
	for {
		it, err := d.Next()
		if errors.Is(err, io.EOF) {
			return shown, nil
		}
		if err != nil {
			var we *walfmt.Error
			if !errors.As(err, &we) {
				return shown, err
			}
			if err := out.damage(we); err != nil {
				return shown, err
			}
			continue
		}
		ordinal++
		prog.Update(pos.at(it.Segment, it.Offset+it.FrameSize))
		if it.Entry == nil {
			if filter.wantsRecord(it.Type) {
				if err := out.record(it, nil); err != nil {
					return shown, err
				}
			}
			continue
		}
		v := &entryView{state: entryUncommitted}
		switch {
		case fate.superseded(ordinal, it.Entry.GetIndex()):
			if !raw {
				continue
			}
			v.state = entrySuperseded
		case it.Entry.GetIndex() <= commit:
			v.state = entryCommitted
		}
		v.req, v.decodeErr = walfmt.DecodeEntryRequest(it.Entry)
		if !filter.wantsEntry(it.Entry, v.req) {
			continue
		}
		if dec != nil {
			if v.decoder, err = dec.decode(it.Entry.GetData()); err != nil {
				return shown, err
			}
		}
		if err := out.record(it, v); err != nil {
			return shown, err
		}
		shown++
	}
}
