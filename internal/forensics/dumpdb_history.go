package forensics

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/cairnkv/cairn/internal/cliutil/printer"
	"github.com/cairnkv/cairn/pkg/boltfile"
	"github.com/cairnkv/cairn/pkg/kvcodec"
	"github.com/cairnkv/cairn/pkg/store"
)

func newHistoryCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "history <data dir or db file> <key>",
		Short: "Prints every stored revision of one key, grouped in generations",
		Long: `history prints every revision of one key that the db still holds, oldest first,
grouped in generations (from the put that created the key to the tombstone that deleted
it), and says what compaction removed. -w json prints one JSON object per revision.`,
		Example: "  cairn dump-db history /var/lib/etcd /registry/pods/default/web-0",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := outputFormat(cmd, printer.FormatTable, printer.FormatTable, printer.FormatSimple, printer.FormatJSON)
			if err != nil {
				return err
			}
			path, key := pathAndOperand(args)
			return withOfflineDB(path, func(db *boltfile.DB) error {
				h, err := readKeyHistory(db, []byte(key))
				if err != nil {
					return err
				}
				if len(h.generations) == 0 {
					return fmt.Errorf("key %q has no revision in %s (never written, or removed by the compaction at revision %d)", key, db.Path(), h.compactRev)
				}
				w := bufio.NewWriter(cmd.OutOrStdout())
				if format == printer.FormatJSON {
					h.writeJSON(w)
				} else {
					h.writeText(w)
				}
				return w.Flush()
			})
		},
	}
}

// keyHistory is what the db holds of one key.
type keyHistory struct {
	key         []byte
	currentRev  int64
	compactRev  int64 // scheduled
	finishedRev int64
	generations []*generationHistory
}

// generationHistory is one life of the key, oldest revision first.
type generationHistory struct {
	created int64 // 0 when only a tombstone survives
	revs    []historyRev
	deleted bool
}

type historyRev struct {
	rev       store.Revision
	tombstone bool
	kv        *mvccpb.KeyValue
}

// readKeyHistory scans the key bucket for the revisions of key.
func readKeyHistory(db *boltfile.DB, key []byte) (*keyHistory, error) {
	h := &keyHistory{key: key}
	err := db.View(func(tx *bolt.Tx) error {
		if mb := tx.Bucket(store.BucketMeta); mb != nil {
			h.compactRev = metaRevision(mb, store.MetaScheduledCompactRev)
			h.finishedRev = metaRevision(mb, store.MetaFinishedCompactRev)
		}
		kb := tx.Bucket(store.BucketKey)
		if kb == nil {
			return fmt.Errorf("db %s has no %q bucket", db.Path(), store.BucketKey)
		}
		var cur *generationHistory
		return kb.ForEach(func(k, v []byte) error {
			rev, tomb, err := store.ParseRevisionKey(k)
			if err != nil {
				return err
			}
			h.currentRev = max(h.currentRev, rev.Main)
			kv := new(mvccpb.KeyValue)
			if err := kvcodec.Unmarshal(v, kv); err != nil {
				return fmt.Errorf("revision %s: %w", rev, err)
			}
			if !bytes.Equal(kv.Key, key) {
				return nil
			}
			r := historyRev{rev: rev, tombstone: tomb, kv: kv}
			switch {
			case tomb && cur != nil && !cur.deleted:
				cur.revs = append(cur.revs, r)
				cur.deleted = true
			case tomb:
				cur = &generationHistory{revs: []historyRev{r}, deleted: true}
				h.generations = append(h.generations, cur)
			case cur == nil || cur.deleted || cur.created != kv.CreateRevision:
				cur = &generationHistory{created: kv.CreateRevision, revs: []historyRev{r}}
				h.generations = append(h.generations, cur)
			default:
				cur.revs = append(cur.revs, r)
			}
			return nil
		})
	})
	return h, err
}

// metaRevision reads a compaction revision of the meta bucket (0 if absent
// or malformed).
func metaRevision(mb *bolt.Bucket, key []byte) int64 {
	v := mb.Get(key)
	if v == nil {
		return 0
	}
	rev, _, err := store.ParseRevisionKey(v)
	if err != nil {
		return 0
	}
	return rev.Main
}

func (h *keyHistory) writeText(w io.Writer) {
	fmt.Fprintf(w, "key %q: %d generation(s), db at revision %d", h.key, len(h.generations), h.currentRev)
	if h.compactRev > 0 {
		fmt.Fprintf(w, ", compacted at revision %d", h.compactRev)
		if h.finishedRev != h.compactRev {
			fmt.Fprintf(w, " (compaction unfinished: done up to %d)", h.finishedRev)
		}
	}
	fmt.Fprintln(w)
	for i, gen := range h.generations {
		fmt.Fprintf(w, "generation %d: %s\n", i+1, gen.describe(h.compactRev, i == len(h.generations)-1))
		fmt.Fprintf(w, "  %-12s %-6s %7s %8s %8s %16s  %s\n", "REVISION", "EVENT", "VERSION", "CREATED", "MOD", "LEASE", "VALUE")
		for _, r := range gen.revs {
			event, version, created, mod, lease := "put", fmt.Sprint(r.kv.Version), fmt.Sprint(r.kv.CreateRevision), fmt.Sprint(r.kv.ModRevision), fmt.Sprintf("%x", r.kv.Lease)
			value := textProtoString(r.kv.Value)
			if r.tombstone {
				event, version, created, mod, lease, value = "delete", "-", "-", "-", "-", "-"
			}
			fmt.Fprintf(w, "  %-12s %-6s %7s %8s %8s %16s  %s\n", r.rev, event, version, created, mod, lease, value)
		}
	}
}

// describe says where a generation starts and ends and what compaction
// removed from it.
func (g *generationHistory) describe(compactRev int64, last bool) string {
	var s string
	if g.created > 0 {
		s = fmt.Sprintf("created at revision %d", g.created)
	} else {
		s = "created before the compaction"
	}
	switch {
	case g.deleted:
		s += fmt.Sprintf(", deleted at revision %d", g.revs[len(g.revs)-1].rev.Main)
	case last:
		s += ", live"
	}
	if first := g.revs[0]; !first.tombstone && first.kv.Version > 1 {
		s += fmt.Sprintf("; versions 1-%d removed by the compaction at revision %d", first.kv.Version-1, compactRev)
	} else if first.tombstone {
		s += fmt.Sprintf("; its puts were removed by the compaction at revision %d", compactRev)
	}
	return s
}

// historyJSON is one revision in `history -w json`.
type historyJSON struct {
	Generation     int    `json:"generation"`
	Main           int64  `json:"revision"`
	Sub            int64  `json:"sub"`
	Tombstone      bool   `json:"tombstone"`
	Key            []byte `json:"key"`
	Value          []byte `json:"value,omitempty"`
	CreateRevision int64  `json:"create_revision,omitempty"`
	ModRevision    int64  `json:"mod_revision,omitempty"`
	Version        int64  `json:"version,omitempty"`
	Lease          int64  `json:"lease,omitempty"`
}

func (h *keyHistory) writeJSON(w io.Writer) {
	enc := json.NewEncoder(w)
	for i, gen := range h.generations {
		for _, r := range gen.revs {
			enc.Encode(historyJSON{
				Generation: i + 1, Main: r.rev.Main, Sub: r.rev.Sub, Tombstone: r.tombstone,
				Key: h.key, Value: r.kv.Value, CreateRevision: r.kv.CreateRevision,
				ModRevision: r.kv.ModRevision, Version: r.kv.Version, Lease: r.kv.Lease,
			})
		}
	}
}
