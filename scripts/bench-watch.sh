#!/usr/bin/env bash
# Measures watch fan-out of real etcd 3.7.3 and `cairn serve` side by side:
# in each round, a fresh single member of each (etcd first in odd rounds,
# cairn first in even ones) gets the same `cairn bench watch` load, twice:
#
#   slow   WATCHERS watchers (STREAMS streams of WATCHERS/STREAMS watchers,
#          over CONNS connections), all on one prefix, then SLOW_PUTS puts
#          under the prefix at SLOW_RATE a second: the delivery latency of
#          every event to every watcher (p99, max);
#   fast   the same watchers (created again), FAST_PUTS puts at FAST_RATE a
#          second: how long the puts took to issue (whether they kept their
#          rate), and the delivery p99.
#
# The output ends with a Markdown table: medians over the rounds, and the
# median (lowest–highest) of the cairn/etcd ratios taken within each round
# (lower is better for every row).
#
#   bash scripts/bench-watch.sh        # ROUNDS=3 STREAMS=100 WATCHERS=10000 CONNS=10
#                                      # SLOW_PUTS=200 SLOW_RATE=20 FAST_PUTS=1000 FAST_RATE=200
#   KEEP=1 bash scripts/bench-watch.sh # keep the work directory (logs, JSON results)
#   bash scripts/bench-watch.sh --summarize DIR/results   # the table again, from kept results
#
# Servers, ports and data directories as in scripts/bench-side-by-side.sh,
# whose functions this script uses.
set -euo pipefail
# shellcheck source=bench-side-by-side.sh
source "$(dirname "$0")/bench-side-by-side.sh"

ROUNDS=${ROUNDS:-3}
STREAMS=${STREAMS:-100}
WATCHERS=${WATCHERS:-10000}
CONNS=${CONNS:-10}
SLOW_PUTS=${SLOW_PUTS:-200}
SLOW_RATE=${SLOW_RATE:-20}
FAST_PUTS=${FAST_PUTS:-1000}
FAST_RATE=${FAST_RATE:-200}
PUT_CLIENTS=${PUT_CLIENTS:-10}
EVENT_TIMEOUT=${EVENT_TIMEOUT:-60s}
if [[ -z ${ETCD_BIN:-} && -x /root/.cache/etcd-reference/v3.7.3/etcd ]]; then
  ETCD_BIN=/root/.cache/etcd-reference/v3.7.3
fi

# watch_load NAME ROUND PUTS RATE: the watch benchmark on ENDPOINTS, kept as
# NAME.ROUND.json, with the member's CPU time as NAME.ROUND.cpu.
watch_load() {
  local name=$1 round=$2 puts=$3 rate=$4 ticks
  ticks=$(cpu_ticks)
  "$CAIRN" -w json --endpoints "$ENDPOINTS" bench --clients "$PUT_CLIENTS" --conns "$CONNS" \
    --total "$puts" --rate "$rate" watch --streams "$STREAMS" --watchers-per-stream $((WATCHERS / STREAMS)) \
    --watch-prefix /bench-watch/ --watched-key-total 100 --val-size 64 --event-timeout "$EVENT_TIMEOUT" \
    2>/dev/null >"$RESULTS/$name.$round.json"
  echo $(($(cpu_ticks) - ticks)) >"$RESULTS/$name.$round.cpu"
  jq -r '"#   puts in \(.puts.elapsed_seconds * 100 | round / 100) s; delivery p99 \(.events.latency_seconds.percentiles.p99 * 100000 | round / 100) ms, max \(.events.latency_seconds.slowest * 100000 | round / 100) ms; \(.events.requests) events, \(.missing_events) missing"' \
    "$RESULTS/$name.$round.json" >&2
}

if [[ ${1:-} == --summarize ]]; then
  RESULTS=${2:?--summarize needs the results directory of a kept run}
  ROUNDS=$(find "$RESULTS" -name 'etcd-slow.*.json' | wc -l)
else
  setup_run
  cut -d' ' -f1-3 /proc/loadavg >"$RESULTS/loadavg-before"
  for ((round = 1; round <= ROUNDS; round++)); do
    order=(etcd cairn)
    if ((round % 2 == 0)); then order=(cairn etcd); fi
    for kind in "${order[@]}"; do
      log "round $round: $kind"
      start_cluster "$kind" 1
      watch_load "$kind-slow" "$round" "$SLOW_PUTS" "$SLOW_RATE"
      watch_load "$kind-fast" "$round" "$FAST_PUTS" "$FAST_RATE"
      stop_servers
    done
  done
  cut -d' ' -f1-3 /proc/loadavg >"$RESULTS/loadavg-after"
fi

# ---- summary -----------------------------------------------------------------

REPEAT=$ROUNDS # for median, paired and ratio
ms() { awk -v s="$1" 'BEGIN { printf "%.0f ms", s * 1000 }'; }
sec() { awk -v s="$1" 'BEGIN { printf "%.1f s", s }'; }
# cpu NAME: the member's CPU time over the run NAME (creation and puts), the
# median over the rounds.
cpu() {
  cat "$RESULTS"/"$1".*.cpu | sort -g | awk -v hz="$(getconf CLK_TCK)" '{ v[NR] = $1 } END { printf "%.1f s", v[int((NR + 1) / 2)] / hz }'
}
P99=.events.latency_seconds.percentiles.p99
MAX=.events.latency_seconds.slowest
PUTS=.puts.elapsed_seconds
echo
echo "Measured $(date -u -r "$RESULTS/loadavg-after" '+%Y-%m-%d %H:%M UTC') on $(nproc) cores; $ROUNDS rounds; one member of each;"
echo "$WATCHERS watchers on one prefix ($STREAMS streams over $CONNS connections), \`cairn bench watch\` as the load."
echo "Load average (1, 5, 15 min) before: $(cat "$RESULTS/loadavg-before"); after: $(cat "$RESULTS/loadavg-after")."
echo "Figures: medians over the rounds. Ratios (lower is better): median (lowest–highest) of cairn/etcd within each round."
echo
echo "| measurement | etcd 3.7.3 | cairn serve | cairn/etcd |"
echo "|---|---|---|---|"
echo "| $SLOW_PUTS puts at $SLOW_RATE/s: delivery p99 | $(ms "$(median etcd-slow $P99)") | $(ms "$(median cairn-slow $P99)") | $(paired cairn-slow etcd-slow $P99) |"
echo "| $SLOW_PUTS puts at $SLOW_RATE/s: delivery max | $(ms "$(median etcd-slow $MAX)") | $(ms "$(median cairn-slow $MAX)") | $(paired cairn-slow etcd-slow $MAX) |"
echo "| $FAST_PUTS puts at $FAST_RATE/s: time to issue them | $(sec "$(median etcd-fast $PUTS)") | $(sec "$(median cairn-fast $PUTS)") | $(paired cairn-fast etcd-fast $PUTS) |"
echo "| $FAST_PUTS puts at $FAST_RATE/s: delivery p99 | $(ms "$(median etcd-fast $P99)") | $(ms "$(median cairn-fast $P99)") | $(paired cairn-fast etcd-fast $P99) |"
echo "| member CPU, $SLOW_PUTS puts at $SLOW_RATE/s (with the watchers' creation) | $(cpu etcd-slow) | $(cpu cairn-slow) | $(ratio cairn-slow etcd-slow cpu) |"
echo "| member CPU, $FAST_PUTS puts at $FAST_RATE/s (with the watchers' creation) | $(cpu etcd-fast) | $(cpu cairn-fast) | $(ratio cairn-fast etcd-fast cpu) |"
echo
echo "Every measurement (puts s, delivery p99 ms, max ms, events, missing, member CPU s):"
for f in "$RESULTS"/*.json; do
  printf '  %-16s %6.1f %8.0f %8.0f %9d %6d %6.1f\n' "$(basename "$f" .json)" "$(jq $PUTS "$f")" \
    "$(jq "$P99 * 1000" "$f")" "$(jq "$MAX * 1000" "$f")" "$(jq .events.requests "$f")" "$(jq .missing_events "$f")" \
    "$(awk -v t="$(cat "${f%.json}.cpu")" -v hz="$(getconf CLK_TCK)" 'BEGIN { print t / hz }')"
done
