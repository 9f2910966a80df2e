package robustness

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/envdefault"
	"github.com/cairnkv/cairn/internal/etcdref"
	"github.com/cairnkv/cairn/pkg/failpoint"
)

// The flags, each also read from an environment variable (a flag given on
// the command line wins). The defaults are the short run of CI.
var (
	flagSeed     = flag.Int64("seed", envdefault.Int("ROBUSTNESS_SEED", 0), "seed of the fault schedules and the load (0: random, printed); run i uses seed+i")
	flagRuns     = flag.Int("runs", int(envdefault.Int("ROBUSTNESS_RUNS", 2)), "runs per server")
	flagDuration = flag.Duration("duration", envdefault.Duration("ROBUSTNESS_DURATION", 25*time.Second), "load duration of a run")
	flagFaults   = flag.String("faults", envdefault.String("ROBUSTNESS_FAULTS", "all"), "fault kinds, comma-separated: kill,pause,isolate,leader-restart,drop,delay (or all), membership, fsync-stall,disk-eio,disk-full,power-loss (or disk: they need FUSE and root); crashpoint,watchdelay with -tags failpoints")
	flagServer   = flag.String("server", envdefault.String("ROBUSTNESS_SERVER", "both"), "server under test: cairn, etcd or both")
	flagOut      = flag.String("out", envdefault.String("ROBUSTNESS_OUT", ""), "append one JSON line per run to this file")
	flagCompact  = flag.Duration("compact-every", envdefault.Duration("ROBUSTNESS_COMPACT_EVERY", 0), "compact the store at this interval during the load (0: not, unless a fault kind needs it)")
	flagCheckFor = flag.Duration("check-timeout", envdefault.Duration("ROBUSTNESS_CHECK_TIMEOUT", time.Minute), "time limit of the linearizability checker per run")
)

// cairnBin is `cairn`, built once for the package unless CAIRN_BIN names one.
var cairnBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if *flagServer == "etcd" {
		os.Exit(m.Run())
	}
	if bin := os.Getenv("CAIRN_BIN"); bin != "" {
		cairnBin = bin
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "cairn-robustness-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cairnBin = filepath.Join(dir, "cairn")
	// Without the race detector: three members and the load share two cores.
	// A test built with the failpoints tag builds cairn with it too.
	args := []string{"build", "-o", cairnBin}
	if failpoint.Enabled {
		args = append(args, "-tags", "failpoints")
	}
	build := exec.Command("go", append(args, "../../cmd/cairn")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build cairn:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// tagsArg is the build tags argument of the go test that built this test.
func tagsArg() string {
	if failpoint.Enabled {
		return " -tags failpoints"
	}
	return ""
}

func TestRobustness(t *testing.T) {
	kinds, err := parseFaults(*flagFaults)
	if err != nil {
		t.Fatal(err)
	}
	// The disk faults need faultfs (FUSE and root); where it cannot be
	// mounted they are left out, and every run records that.
	var skipped []string
	if hasDiskFault(kinds) {
		if err := fuseUsable(); err != nil {
			kinds = slices.DeleteFunc(kinds, func(k faultKind) bool {
				if slices.Contains(diskFaults, k) {
					skipped = append(skipped, string(k))
					return true
				}
				return false
			})
			if len(kinds) == 0 {
				t.Skipf("disk faults %v skipped: faultfs cannot be mounted here (%v); they need /dev/fuse and root", skipped, err)
			}
			t.Logf("disk faults %v skipped: faultfs cannot be mounted here (%v); they need /dev/fuse and root", skipped, err)
		}
	}
	seed := *flagSeed
	if seed == 0 {
		seed = rand.Int64N(1 << 40)
	}
	compactEvery := *flagCompact
	for _, k := range kinds {
		if tf, ok := taggedFaults[k]; ok && tf.compactEvery != 0 && (compactEvery == 0 || compactEvery > tf.compactEvery) {
			compactEvery = tf.compactEvery
		}
	}
	t.Logf("seed %d (again: go test%s ./e2e/robustness/ -seed %d); %d runs of %v per server, faults %v, compaction every %v",
		seed, tagsArg(), seed, *flagRuns, *flagDuration, kinds, compactEvery)
	var servers []string
	switch *flagServer {
	case "both":
		servers = []string{"cairn", "etcd"}
	case "cairn", "etcd":
		servers = []string{*flagServer}
	default:
		t.Fatalf("-server %q: want cairn, etcd or both", *flagServer)
	}
	for _, server := range servers {
		t.Run(server, func(t *testing.T) {
			argv := []string{cairnBin, "serve"}
			for _, k := range kinds {
				if _, tagged := taggedFaults[k]; tagged && server == "etcd" {
					t.Skipf("fault %s arms cairn's failpoints; etcd 3.7.3's release binary has no failpoints", k)
				}
			}
			if server == "etcd" {
				// Skips, saying why, when the reference etcd cannot be built
				// (CAIRN_REFERENCE_ETCD_DIR names a folder that has it).
				argv = []string{etcdref.Bin(t, "etcd")}
			}
			// Each run's schedule follows from the seed alone: the fault kinds
			// that the schedules of the earlier runs leave out come first.
			window := *flagDuration - 3*time.Second
			var schedules [][]fault
			var planned []faultKind
			for i := range *flagRuns {
				var first []faultKind
				for _, k := range kinds {
					if !slices.Contains(planned, k) {
						first = append(first, k)
					}
				}
				sch := schedule(seed+int64(i), kinds, first, window)
				for _, f := range sch {
					if !slices.Contains(planned, f.Kind) {
						planned = append(planned, f.Kind)
					}
				}
				schedules = append(schedules, sch)
			}
			var covered []faultKind
			for i := range *flagRuns {
				cfg := runConfig{server: server, argv: argv, seed: seed + int64(i), run: i, duration: *flagDuration,
					faults: schedules[i], window: window, workers: 12, checkFor: *flagCheckFor, compactEvery: compactEvery,
					disks: hasDiskFault(kinds)}
				name := fmt.Sprintf("run%d-seed%d", i, cfg.seed)
				t.Run(name, func(t *testing.T) {
					r := runOnce(t, cfg)
					r.SkippedFaults = skipped
					for k := range r.Faults {
						if !slices.Contains(covered, faultKind(k)) {
							covered = append(covered, faultKind(k))
						}
					}
					t.Logf("%s seed %d: %d ops (%d unknown), final revision %d, raft term %d, compactions %d, faults %v, linearizable %s (checked in %s), lost writes %d, watch anomalies %d (cancelled as compacted %d), unhealthy after the last heal %d (after any heal %d), no-leader cancellations %d (isolations %d, missed %d), mismatching WAL entries %d, kept leases %d (lost %d, wrongly revoked %d)%s",
						server, cfg.seed, r.Ops, r.UnknownOps, r.FinalRev, r.Term, r.Compactions, r.Faults, r.Linearizable, r.CheckTime, r.LostWrites,
						r.WatchAnomalies, r.WatchCompacted, r.Unhealthy, r.UnhealthyAnyHeal, r.NoLeaderCancels, r.NoLeaderExpected, r.NoLeaderMissed, r.WALMismatches,
						r.KeptLeases, r.KeptLeasesLost, r.WronglyRevokedLeases, diskSummary(r.DiskOutcomes))
					if err := appendResult(*flagOut, r); err != nil {
						t.Errorf("writing %s: %v", *flagOut, err)
					}
					for _, d := range r.KnownDefects {
						t.Logf("%s run %d (seed %d), a defect etcd 3.7.3 is known to have, not failed; history and member logs in %s\n  %s",
							server, i, cfg.seed, r.Artifacts, d)
					}
					if len(r.Failures) > 0 {
						t.Errorf("%s run %d (seed %d) failed; history and member logs in %s\n"+
							"  again: go test%s ./e2e/robustness/ -run 'TestRobustness/%s/%s$' -seed %d -runs %d -duration %v -faults %s -server %s\n  %s",
							server, i, cfg.seed, r.Artifacts, tagsArg(), server, name, seed, *flagRuns, *flagDuration, *flagFaults, server,
							strings.Join(r.Failures, "\n  "))
					}
				})
			}
			var missing []faultKind
			for _, k := range kinds {
				if !slices.Contains(covered, k) {
					missing = append(missing, k)
				}
			}
			if len(missing) > 0 {
				t.Logf("fault kinds not injected in %d runs of %v: %v", *flagRuns, *flagDuration, missing)
			}
		})
	}
}
