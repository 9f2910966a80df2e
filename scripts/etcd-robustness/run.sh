#!/bin/bash
# etcd v3.7.3's robustness suite (go.etcd.io/etcd/tests/v3/robustness) against
# real etcd 3.7.3 (control) and cairn started as `etcd`. See README.md.
#
#   CAIRN_BIN=/path/to/cairn bash scripts/etcd-robustness/run.sh   # everything (~1 h on 2 cores)
#
# Env: E2E_WS (/tmp/etcd-robust), CAIRN_BIN (else setup builds ./cmd/cairn of
# this repository), ETCD_REF_DIR (default: scripts/reference-etcd.sh),
# RUNS (3: rounds per target), DIAG_RUNS (RUNS: rounds of cairn-diag, 0 = none),
# RETRY_ETCD (1: rerun each failed etcd scenario once, load check),
# TESTS ("TestRobustnessRegression TestRobustnessNoGofail"),
# EXPLORATORY (1: TestRobustnessExploratory once per target in round 1),
# SKIP_SETUP (0), PORT_ETCD/PORT_CAIRN/PORT_DIAG (17100/17300/17500: below the
# ephemeral range 32768+ and outside 20000-32xxx that other checks use).
# Last line: etcd-robustness: cairn P/N runs pass, etcd Q/M
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
export E2E_WS="${E2E_WS:-/tmp/etcd-robust}"; WS="$E2E_WS"
RUNS="${RUNS:-3}"; DIAG_RUNS="${DIAG_RUNS:-$RUNS}"; RETRY_ETCD="${RETRY_ETCD:-1}"
TESTS="${TESTS:-TestRobustnessRegression TestRobustnessNoGofail}"
EXPLORATORY="${EXPLORATORY:-1}"
TEST_TIMEOUT="${TEST_TIMEOUT:-45m}"

if [ "${SKIP_SETUP:-0}" != 1 ]; then
  E2E_SHIM=symlink bash "$HERE/../etcd-e2e/setup.sh" > "$WS.setup.log" 2>&1 || { tail -20 "$WS.setup.log"; echo "etcd-robustness: setup failed"; exit 1; }
  bash "$HERE/prepare.sh" >> "$WS.setup.log" 2>&1 || { tail -20 "$WS.setup.log"; echo "etcd-robustness: build failed"; exit 1; }
fi
OUT="$WS/results/robustness"
[ -d "$OUT" ] && mv "$OUT" "$OUT.$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"
{ echo "cairn: $(readlink -f "$WS/bin-cairn/etcd")"; "$WS/bin-cairn/etcd" --version 2>&1 | head -2
  echo "etcd:  $(readlink -f "$WS/bin-etcd/etcd")"; "$WS/bin-etcd/etcd" --version 2>&1 | head -1
  nproc; uptime; } > "$OUT/env.txt"

cleanup() { # kill, by PID, what an invocation left behind (cmdline or cwd under its TMPDIR)
  local tmp=$1 pid
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    [ "$pid" = $$ ] && continue
    if { tr "\0" " " < /proc/$pid/cmdline; } 2>/dev/null | grep -qF -- "$tmp" || \
       [[ "$(readlink /proc/$pid/cwd 2>/dev/null)" == "$tmp"* ]]; then
      echo "cleanup: killing leftover pid $pid: $({ tr "\0" " " < /proc/$pid/cmdline; } 2>/dev/null | cut -c1-200)" >> "$OUT/cleanup.log"
      kill -9 "$pid" 2>/dev/null
    fi
  done
}

# invoke MODE ROUND TEST RUNPATTERN [SUFFIX]
invoke() {
  local mode=$1 rnd=$2 test=$3 pat=$4 sfx=${5:-} bin tb port
  case "$mode" in
    etcd) bin="$WS/bin-etcd"; tb="$WS/robustness.test"; port="${PORT_ETCD:-17100}" ;;
    cairn) bin="$WS/bin-cairn"; tb="$WS/robustness.test"; port="${PORT_CAIRN:-17300}" ;;
    cairn-diag) bin="$WS/bin-cairn"; tb="$WS/robustness-diag.test"; port="${PORT_DIAG:-17500}" ;;
  esac
  mkdir -p "$OUT/$mode"
  local base="$OUT/$mode/r$rnd-$test$sfx" tmp="$WS/t/$mode"
  rm -rf "$tmp"; mkdir -p "$tmp"
  uptime > "$base.uptime"
  local s=$(date +%s)
  ( cd "$WS/tests/robustness" && env TMPDIR="$tmp" E2E_BASE_PORT="$port" RESULTS_DIR="$OUT/$mode/r$rnd-reports$sfx" \
      timeout -k 10 "$TEST_TIMEOUT" "$tb" -test.run "$pat" -test.count=1 -test.timeout="$TEST_TIMEOUT" \
      -test.v -bin-dir="$bin" ) > "$base.log" 2>&1 < /dev/null
  local rc=$?
  cleanup "$tmp"; rm -rf "$tmp"
  uptime >> "$base.uptime"
  printf '%s r%s %s%s rc=%s %ss pass=%s fail=%s skip=%s\n' "$mode" "$rnd" "$test" "$sfx" "$rc" "$(( $(date +%s) - s ))" \
    "$(grep -cE '^ +--- PASS' "$base.log")" "$(grep -cE '^ +--- FAIL' "$base.log")" "$(grep -cE '^ +--- SKIP' "$base.log")" | tee -a "$OUT/progress.txt"
}

for rnd in $(seq 1 "$RUNS"); do
  for mode in etcd cairn; do
    if [ "$rnd" = 1 ] && [ "$EXPLORATORY" = 1 ]; then invoke "$mode" "$rnd" TestRobustnessExploratory '^TestRobustnessExploratory$'; fi
    for t in $TESTS; do invoke "$mode" "$rnd" "$t" "^$t\$"; done
  done
done
for rnd in $(seq 1 "$DIAG_RUNS"); do
  for t in $TESTS; do invoke cairn-diag "$rnd" "$t" "^$t\$"; done
done
# control sanity: each failed etcd scenario once more, alone (load check)
if [ "$RETRY_ETCD" = 1 ]; then
  python3 "$HERE/summarize.py" "$OUT" > /dev/null
  awk -F'\t' 'NR>1 && $1=="etcd" && $3=="0" && ($6=="FAIL"||$6=="TIMEOUT"||$6=="NORESULT") {print $2"\t"$4"\t"$5}' "$OUT/summary.tsv" |
  { k=0; while IFS=$'\t' read -r rnd test scen; do
    k=$((k+1)); pat=$(printf '%s' "$scen" | awk -F/ '{for(i=1;i<=NF;i++) printf "%s^%s$", (i>1?"/":""), $i}')
    invoke etcd "$rnd" "$test" "$pat" "-retry$k"
  done; }
fi
# analysis (NOT a measurement): the validation of every saved report once more,
# as saved and without the watches that asked for a negative start revision
ls -d "$OUT"/*/r*-reports*/*/* > "$OUT/reports.txt" 2>/dev/null
if [ -s "$OUT/reports.txt" ]; then
  ( cd "$WS/tests/robustness" && REVALIDATE_REPORTS_FILE="$OUT/reports.txt" timeout 30m "$WS/robustness.test" \
      -test.run '^TestRevalidateReports$' -test.v -test.timeout 30m ) 2>&1 | grep -E '^revalidate' > "$OUT/revalidate.tsv"
fi
python3 "$HERE/summarize.py" "$OUT" | tee "$OUT/summary.txt"
