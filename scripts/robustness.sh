#!/usr/bin/env bash
# Runs the long robustness suite (e2e/robustness) and prints a table of what
# it found, per server. Defaults: 20 runs of 60 s per server, faults
# kill,pause,isolate, both cairn and etcd 3.7.3 (the control).
#
#   RUNS=20 DURATION=60s FAULTS=kill,pause,isolate SERVER=both SEED=0 scripts/robustness.sh
#
# SEED=0 picks a random seed (printed). FAULTS takes any of
# kill,pause,isolate,leader-restart,drop,delay,membership or "all" (every
# kind but membership and the disk faults), and crashpoint,watchdelay:
# cairn's failpoints, armed on one member (a build with -tags failpoints,
# which this script then makes; cairn only, etcd's runs are skipped).
# The disk faults put each member's data dir on its own faultfs mount
# (internal/faultfs; they need /dev/fuse and root, and are skipped, saying
# so, without): fsync-stall (a member's fsyncs wait 2-10 s, the leader's in
# half the draws), disk-eio (its fsyncs fail with EIO for 1 s: it must
# stop; it is restarted), disk-full (its writes fail with ENOSPC for 2-5 s:
# it stops or refuses writes, both recorded, with any NOSPACE alarm, which
# the heal disarms), power-loss (SIGKILL one member, or all in a quarter of
# the draws, drop what their disk had not synced or keep a torn prefix of
# it, restart); FAULTS=disk is the four. etcd 3.7.3 gets the same schedule.
# In every run a client per member keeps a lease (TTL 5 s) alive through it:
# a lease lost while it should have lived is counted (wrongly_revoked_leases);
# etcd's known defect (a frozen leader's revoke, etcd-io/etcd#15247) is
# reported, not failed. COMPACT_EVERY=2s compacts the
# store during the load (the failpoint kinds set it). CAIRN_BIN tests a
# given binary; CAIRN_REFERENCE_ETCD_DIR names a folder with etcd 3.7.3.
# Failing runs save their history and member logs under ROBUSTNESS_ARTIFACTS
# (default: the system's temporary folder); the go test log, the results
# (one JSON line per run) and the table are kept in $OUT_DIR (default: a new
# temporary folder). `scripts/robustness.sh --table results.jsonl` prints
# the table of an earlier run.
set -uo pipefail
cd "$(dirname "$0")/.."
# table prints the markdown table of a results file (one JSON line per run).
table() {
  local tsv
  tsv=$(mktemp)
  jq -rs '
    group_by(.server)[] |
    . as $runs |
    ($runs | map(.faults // {} | to_entries[]) | group_by(.key) | map("\(.[0].key) \(map(.value) | add)") | join(", ")) as $faults |
    [ $runs[0].server,
      ($runs | length),
      ($runs | map(select((.failures // []) | length > 0)) | length),
      $faults,
      ($runs | map(.ops) | add),
      ($runs | map(.unknown_ops) | add),
      ($runs | map(.lin_violations) | add),
      ($runs | map(select(.linearizable == "Unknown")) | length),
      ($runs | map(.lost_writes) | add),
      "\($runs | map(.watch_anomalies) | add) (compactions \($runs | map(.compactions // 0) | add), watches cancelled as compacted \($runs | map(.watch_compacted // 0) | add))",
      ($runs | map(.unhealthy_after_last_heal) | add),
      ($runs | map(.unhealthy_after_any_heal) | add),
      "\($runs | map(.no_leader_cancels) | add) (isolations \($runs | map(.no_leader_expected) | add), missed \($runs | map(.no_leader_missed) | add))",
      ($runs | map(.wal_mismatches // 0) | add),
      ($runs | map(.term // 0) | sort | "\(.[length / 2 | floor]) (\(max))"),
      "\($runs | map(.wrongly_revoked_leases // 0) | add) (kept \($runs | map(.kept_leases // 0) | add), lost to faults \($runs | map((.kept_leases_lost // 0) - (.wrongly_revoked_leases // 0)) | add)\($runs | map(.known_defects // [] | length) | add | if . > 0 then ", etcd-io/etcd#15247: \(.)" else "" end))",
      ($runs | map(.disk_outcomes // [] | .[]) | group_by(.kind) | map(
        "\(.[0].kind): " + (group_by(.outcome) | map("\(.[0].outcome) \(length)") | join(", ")) +
        (map(select(.alarm_nospace)) | length | if . > 0 then ", NOSPACE alarm \(.)" else "" end)) |
        join("; ") | if . == "" then "-" else . end) +
      ($runs | map(.skipped_faults // [] | .[]) | unique | if length > 0 then " (skipped: \(join(",")))" else "" end)
    ] | @tsv' "$1" >"$tsv"

  {
    echo "| server | runs | failed runs | faults | operations | unknown outcome | linearizability violations | checker timeouts | lost acknowledged writes | watch anomalies | members unhealthy 5 s after the last heal | ... after any heal | require-leader cancellations seen | mismatching WAL entries | raft term at the end, median (highest) | leases revoked while kept alive | disk-eio / disk-full outcomes |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    awk -F'\t' '{ printf "|"; for (i = 1; i <= NF; i++) printf " %s |", $i; printf "\n" }' "$tsv"
  }
  rm -f "$tsv"
  # What the unknown outcomes were, per server: the most frequent errors.
  jq -rs '
    group_by(.server)[] |
    .[0].server as $server |
    (map(.unknown_errors // {} | to_entries[]) | group_by(.key) | map({k: .[0].key, n: (map(.value) | add)}) |
     sort_by(-.n) | .[0:6]) as $errs |
    select($errs | length > 0) |
    "\n\($server): unknown outcomes by error: " + ($errs | map("\(.n) `\(.k)`") | join("; "))' "$1"
}

if [ "${1:-}" = "--table" ]; then # scripts/robustness.sh --table results.jsonl
  table "$2"
  exit
fi

RUNS=${RUNS:-20}
DURATION=${DURATION:-60s}
FAULTS=${FAULTS:-kill,pause,isolate}
SERVER=${SERVER:-both}
SEED=${SEED:-0}
OUT_DIR=${OUT_DIR:-$(mktemp -d -t robustness-XXXXXX)}
mkdir -p "$OUT_DIR"
results="$OUT_DIR/results.jsonl"
log="$OUT_DIR/go-test.log"
: >"$results"

tags=()
case ",$FAULTS," in *,crashpoint,* | *,watchdelay,*) tags=(-tags failpoints) ;; esac

echo "robustness: $RUNS runs of $DURATION per server ($SERVER), faults $FAULTS; log $log" >&2
go test "${tags[@]}" ./e2e/robustness/ -run '^TestRobustness$' -count=1 -v -timeout 6h \
  -seed "$SEED" -runs "$RUNS" -duration "$DURATION" -faults "$FAULTS" -server "$SERVER" -out "$results" \
  -compact-every "${COMPACT_EVERY:-0}" >"$log" 2>&1
status=$?
grep -E '^\s+robustness_test.go:[0-9]+: seed|--- (FAIL|SKIP)|skipping|skipped:' "$log" | sed 's/^ *//' >&2

table "$results" | tee "$OUT_DIR/table.md"
if [ "$status" -ne 0 ]; then
  echo "robustness: some runs failed (go test exit $status); failures and artifact folders:" >&2
  jq -r 'select((.failures // []) | length > 0) | "\(.server) seed \(.seed): \(.artifacts)\n  \(.failures | .[0:5] | join("\n  "))"' "$results" >&2
fi
exit "$status"
