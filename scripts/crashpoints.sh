#!/usr/bin/env bash
# Runs the crash-point suite (e2e/crashpoints, build tag failpoints): three
# real members under a write load; each crash point of pkg/failpoint crashes
# one member ROUNDS times, then the member restarts and every member must
# hold every acknowledged put, with equal HashKV. Then torn WAL tails.
# Prints the summary table and how long it took.
#
#   ROUNDS=5 RATE=150 SEED=0 RUN=. KEEP=0 scripts/crashpoints.sh
#
# SEED=0 picks a random seed (printed in the summary). RUN selects points
# (a -run pattern below TestCrashPoints, e.g. RUN=walBeforeFsync). RACE=1
# builds cairn with the race detector. The go test log, the summary and,
# for each failed point (every point with KEEP=1), the members' data
# directories and logs stay in $OUT_DIR (default: a new temporary folder).
set -uo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
RATE=${RATE:-150}
SEED=${SEED:-0}
RUN=${RUN:-.}
KEEP=${KEEP:-0}
OUT_DIR=${OUT_DIR:-$(mktemp -d -t crashpoints-XXXXXX)}
mkdir -p "$OUT_DIR"
log="$OUT_DIR/go-test.log"

echo "crashpoints: $ROUNDS rounds per point, $RATE puts/s; log $log" >&2
start=$(date +%s)
CAIRN_CRASHPOINTS_ROUNDS="$ROUNDS" CAIRN_CRASHPOINTS_RATE="$RATE" CAIRN_CRASHPOINTS_SEED="$SEED" \
  CAIRN_CRASHPOINTS_DIR="$OUT_DIR" CAIRN_CRASHPOINTS_RACE="${RACE:-0}" CAIRN_CRASHPOINTS_KEEP="$KEEP" \
  go test -tags failpoints ./e2e/crashpoints/ -run "^TestCrashPoints\$/$RUN" -count=1 -v -timeout 30m >"$log" 2>&1
status=$?
took=$(($(date +%s) - start))

summary=$(ls -t "$OUT_DIR"/run-*/summary.md 2>/dev/null | head -1)
if [ -n "$summary" ]; then
  cp "$summary" "$OUT_DIR/summary.md"
  cat "$OUT_DIR/summary.md"
fi
grep -E -- '^\s*--- FAIL' "$log" >&2
if [ "$status" -ne 0 ]; then
  # What each failure said, with what the log it quotes has of panics,
  # errors and warnings, and its last lines: a CI log shows why a member
  # died without the folder.
  awk '
    function flush(  i, k) {
      if (head != "") {
        print head
        for (i = 1; i <= n; i++) if (i > n - 4 || (k < 8 && body[i] ~ /panic|fatal|"level":"(error|warn)"/)) { print body[i]; if (i <= n - 4) k++ }
      }
      head = ""; n = 0
    }
    /^ +crashpoints_test\.go:[0-9]+: / {
      flush()
      if ($0 !~ /: (seed |data directories|round [0-9]+: (m[0-9]+ (crashed at|back;|refused by raft)|killed )|m[0-9]+ log \(|summary:)/) head = $0
      next
    }
    /^        / { if (head != "") body[++n] = $0; next }
    { flush() }
    END { flush() }
  ' "$log" | cut -c1-300 >&2
fi
echo "crashpoints: took ${took}s (go test exit $status)" >&2
if [ "$status" -eq 0 ] && [ "$KEEP" != 1 ]; then
  rm -rf "$OUT_DIR"/run-*
else
  echo "crashpoints: data directories and member logs in $(dirname "${summary:-$OUT_DIR/x}")" >&2
fi
exit "$status"
