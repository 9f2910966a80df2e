// Package diagnose is `cairn diagnose DIR...`: from the data directories
// of some or all members of one cluster (cairn's or etcd's, dead or
// copied), read offline, which member to restore from, whether any db
// diverged, what each choice loses, and the commands that rebuild the
// cluster. It reads the dirs with internal/forensics and pkg/ and never
// writes to them.
package diagnose

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
)

// NewCommand builds `diagnose`.
func NewCommand() *cobra.Command {
	o := planOptions{binary: "cairn"}
	cmd := &cobra.Command{
		Use:   "diagnose <data dir>...",
		Short: "Says, offline, which member of a dead cluster to restore from, and how",
		Long: `diagnose reads the data directories of some or all members of one cluster (cairn's
or etcd's; dead, or copies), read-only, and reports for each its member and cluster
IDs, its WAL (last index and term, hard state, damage as wal verify finds it), its
latest snapshot, its db (consistent index and term, revisions, and the HashKV at the
highest revision all the dbs have), and the entries its WAL has committed that its db
has not applied.

The verdict names the member to restore from: of those with an undamaged WAL and a db
that agrees with the others, the one with the most committed data (the higher of its
WAL's commit index and its db's consistent index), ties going to less damage. It says
whether a db diverges from the others at the common revision, what restoring from
each member would lose, and prints the commands that rebuild the cluster from the
chosen one with snapshot restore.

A dir whose db a running member holds is reported as such; damage never stops the
report. The exit status is 0 when a member to restore from was found.`,
		Example: `  cairn diagnose /backup/m1 /backup/m2 /backup/m3
  cairn diagnose -w json /var/lib/etcd /mnt/m2/var/lib/etcd
  cairn diagnose --initial-cluster-token new-token --restore-data-dir '/var/lib/cairn/{name}' m1.etcd m2.etcd m3.etcd`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			return run(cmd.OutOrStdout(), args, format, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.token, "initial-cluster-token", "etcd-cluster", "the --initial-cluster-token of the restored cluster, in the commands printed")
	fs.StringVar(&o.dataDir, "restore-data-dir", "{name}.cairn", "the --data-dir of each restored member in the commands printed; {name} is the member's name")
	return cmd
}

// run diagnoses dirs and writes the report.
func run(out io.Writer, dirs []string, format string, o planOptions) error {
	ms := make([]*member, len(dirs))
	for i, d := range dirs {
		ms[i] = readMember(d)
	}
	namePeers(ms)
	defer func() {
		for _, m := range ms {
			m.close()
		}
	}()
	v := judge(ms)
	var p *plan
	if v.best != nil {
		p = makePlan(v.best, o)
	}
	r := newReport(ms, v, p)
	var err error
	if format == printer.FormatJSON {
		err = printer.New(out, printer.FormatJSON, false).PrintJSON(r)
	} else {
		err = writeHuman(out, r)
	}
	if err != nil {
		return err
	}
	if v.best == nil {
		return fmt.Errorf("diagnose: %s", v.bestWhy)
	}
	return nil
}

// outputFormat is --write-out: simple (the human report, the default) or
// json.
func outputFormat(cmd *cobra.Command) (string, error) {
	format := printer.FormatSimple
	if f := cmd.Flags().Lookup("write-out"); f != nil && f.Changed {
		format = f.Value.String()
	}
	if format != printer.FormatSimple && format != printer.FormatJSON {
		return "", cmderr.WithCode(cmderr.ExitBadFeature, fmt.Errorf("%s not supported as output format by %s (use simple or json)", format, cmd.CommandPath()))
	}
	return format, nil
}
