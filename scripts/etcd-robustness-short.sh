#!/usr/bin/env bash
# A short run of etcd 3.7.3's own robustness suite (go.etcd.io/etcd/tests/v3/
# robustness: traffic, one injected failure, then linearizability, the watch
# guarantees and a cross-member check of the persisted logs) with cairn as the
# etcd binary: each scenario of LIST once, cairn only. Fails if any does not
# pass. The full comparison with etcd 3.7.3 as the control, three rounds of
# every scenario that needs no gofail build, is scripts/etcd-robustness/run.sh.
#
#   LIST=scripts/etcd-robustness-short.txt scripts/etcd-robustness-short.sh
#
# LIST has one scenario a line, as a -test.run pattern of the suite's test
# binary ('#' starts a comment). Each scenario's go test -v log and, for a
# failure, the suite's report (histories, member data dirs) are kept under
# $E2E_WS/results/robustness-short/.
set -uo pipefail
cd "$(dirname "$0")/.."
LIST=${LIST:-scripts/etcd-robustness-short.txt}
# PORT is the first of the 15 ports the suite's members take (below the
# ephemeral range, as scripts/etcd-robustness/run.sh chooses them).
PORT=${PORT:-17300}
export E2E_WS=${E2E_WS:-${TMPDIR:-/tmp}/etcd-e2e}
mkdir -p "$E2E_WS"
go build -o "$E2E_WS/cairn" ./cmd/cairn || exit 1
if [ ! -d "$E2E_WS/tests/robustness" ] || [ "$(readlink -f "$E2E_WS/bin-cairn/etcd")" != "$(readlink -f "$E2E_WS/cairn")" ]; then
  E2E_SHIM=symlink CAIRN_BIN="$E2E_WS/cairn" bash scripts/etcd-e2e/setup.sh >"$E2E_WS/setup.log" 2>&1 ||
    { tail -20 "$E2E_WS/setup.log"; exit 1; }
fi
bash scripts/etcd-robustness/prepare.sh >"$E2E_WS/robustness-prepare.log" 2>&1 ||
  { tail -20 "$E2E_WS/robustness-prepare.log"; exit 1; }

out="$E2E_WS/results/robustness-short"
rm -rf "$out"; mkdir -p "$out"
# leftovers kills, by PID, every process whose command line names the run's
# temporary folder (a member the suite left behind on a timeout).
leftovers() {
  local pid
  for pid in $(pgrep -f -- "$1"); do
    [ "$pid" = $$ ] || kill -9 "$pid" 2>/dev/null
  done
}
passed=0 failed=0 n=0
while read -r pattern; do
  case "$pattern" in ''|'#'*) continue ;; esac
  n=$((n + 1))
  tmp="$E2E_WS/t/short-$n"
  rm -rf "$tmp"; mkdir -p "$tmp"
  log="$out/$n.log"
  start=$(date +%s)
  ( cd "$E2E_WS/tests/robustness" && env TMPDIR="$tmp" E2E_BASE_PORT="$PORT" RESULTS_DIR="$out/$n-report" \
      timeout -k 10 15m "$E2E_WS/robustness.test" -test.run "$pattern" -test.count=1 -test.timeout=15m \
      -test.v -bin-dir="$E2E_WS/bin-cairn" ) >"$log" 2>&1 </dev/null
  rc=$?
  leftovers "$tmp"; rm -rf "$tmp"
  # the leaves: subtests that passed or failed (skips are neither)
  p=$(grep -cE '^ +--- PASS' "$log")
  f=$(grep -cE '^ +--- FAIL' "$log")
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
    echo "etcd-robustness: $pattern ran no scenario (log: $log)"; f=1
  fi
  passed=$((passed + p)); failed=$((failed + f))
  echo "etcd-robustness: $pattern: $p passed, $f failed in $(( $(date +%s) - start ))s (log: $log)"
  if [ "$f" -gt 0 ]; then
    grep -E 'Failure|failed|mismatch|broke|Error' "$log" | grep -v '^=== ' | head -20
  fi
done <"$LIST"
echo "etcd-robustness: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
