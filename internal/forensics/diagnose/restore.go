package diagnose

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cairnkv/cairn/pkg/cluster"
)

// plan is the rebuild of the cluster from the best member: a snapshot
// taken from its dir, then one `snapshot restore` per member.
type plan struct {
	// snapshot is the snapshot file the restores read.
	snapshot string
	// steps are the shell commands, in order; comments start with #.
	steps []string
	// restores are the restore commands alone, one per member, by ID.
	restores []restoreStep
}

type restoreStep struct {
	Name    string `json:"name"`
	DataDir string `json:"data_dir"`
	Command string `json:"command"`
}

// planOptions are the choices diagnose leaves to the operator.
type planOptions struct {
	token   string // --initial-cluster-token of the new cluster
	dataDir string // data dir of each restored member; {name} is replaced
	binary  string // the command that restores (cairn; etcdutl takes the same flags)
}

// makePlan writes the commands that rebuild the cluster from best, with
// the membership of best's members bucket.
func makePlan(best *member, o planOptions) *plan {
	members := slices.Clone(best.db.members)
	slices.SortFunc(members, func(a, b cluster.Member) int { return strings.Compare(nameOf(a), nameOf(b)) })
	if len(members) == 0 {
		// A db without members (never published): the member alone.
		members = []cluster.Member{{ID: best.memberID(), Name: best.name()}}
	}
	p := &plan{snapshot: fmt.Sprintf("%s.restore.db", memberName(members, best))}
	var initial []string
	for _, m := range members {
		for _, u := range peerURLs(m) {
			initial = append(initial, nameOf(m)+"="+u)
		}
	}
	u := best.unapplied
	skipHash := " --skip-hash-check"
	if u != nil && u.found > 0 {
		// A copy of the db lacks the committed entries the WAL holds
		// beyond it. A member started alone on a copy of the dir applies
		// them (a restart replays the WAL up to its commit index); its
		// snapshot then has them, with a sha256 trailer to check.
		apply := best.dir + ".apply"
		p.steps = append(p.steps,
			fmt.Sprintf("# the db of %s lacks committed entries its WAL holds (%s): a member started alone on a copy applies them", label(best), u.text()),
			fmt.Sprintf("cp -a %s %s", shellQuote(best.dir), shellQuote(apply)),
			fmt.Sprintf("%s serve --data-dir %s --force-new-cluster --name %s --listen-client-urls http://127.0.0.1:12379 --advertise-client-urls http://127.0.0.1:12379 --listen-peer-urls http://127.0.0.1:12380 --initial-advertise-peer-urls http://127.0.0.1:12380 & pid=$!",
				o.binary, shellQuote(apply), shellQuote(memberName(members, best))),
			fmt.Sprintf("until %s --endpoints 127.0.0.1:12379 endpoint health; do sleep 1; done", o.binary),
			fmt.Sprintf("%s --endpoints 127.0.0.1:12379 snapshot save %s", o.binary, shellQuote(p.snapshot)),
			"kill $pid; wait $pid",
			fmt.Sprintf("# (or, losing those entries: cp %s %s, and restore with --skip-hash-check)", shellQuote(best.db.path), shellQuote(p.snapshot)))
		skipHash = ""
	} else {
		p.steps = append(p.steps,
			fmt.Sprintf("# the snapshot: a copy of the db of %s (no sha256 trailer, hence --skip-hash-check)", label(best)),
			fmt.Sprintf("cp %s %s", shellQuote(best.db.path), shellQuote(p.snapshot)))
	}
	p.steps = append(p.steps, "# on each member's machine, with the old member stopped and its dir moved away:")
	for _, m := range members {
		urls := peerURLs(m)
		dir := strings.ReplaceAll(o.dataDir, "{name}", nameOf(m))
		cmd := fmt.Sprintf("%s snapshot restore %s%s --name %s --initial-cluster %s --initial-cluster-token %s --initial-advertise-peer-urls %s --data-dir %s",
			o.binary, shellQuote(p.snapshot), skipHash, shellQuote(nameOf(m)), shellQuote(strings.Join(initial, ",")),
			shellQuote(o.token), shellQuote(strings.Join(urls, ",")), shellQuote(dir))
		p.restores = append(p.restores, restoreStep{Name: nameOf(m), DataDir: dir, Command: cmd})
		p.steps = append(p.steps, cmd)
	}
	p.steps = append(p.steps, fmt.Sprintf("# then start every member on its restored dir with the same --initial-cluster and --initial-cluster-token %s", o.token))
	return p
}

// nameOf is a member's name, or its ID in hex when it never published one
// (restore needs a name).
func nameOf(m cluster.Member) string {
	if m.Name != "" {
		return m.Name
	}
	return fmt.Sprintf("%x", m.ID)
}

// memberName is the name of best among members.
func memberName(members []cluster.Member, best *member) string {
	for _, m := range members {
		if m.ID == best.memberID() {
			return nameOf(m)
		}
	}
	return filepath.Base(best.dir)
}

// peerURLs are a member's peer URLs, or a placeholder to fill in.
func peerURLs(m cluster.Member) []string {
	if len(m.PeerURLs) > 0 {
		return m.PeerURLs
	}
	return []string{"http://" + nameOf(m) + ":2380"}
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@%+{}") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
