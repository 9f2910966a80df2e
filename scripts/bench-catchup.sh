#!/usr/bin/env bash
# A reconnect storm, etcd 3.7.3 and cairn side by side, as after a restart of
# kube-apiserver: in each round, a fresh single member of each (etcd first in
# odd rounds, cairn first in even ones) gets PUTS puts under one prefix
# (values of 256 bytes, over KEYS keys), then WATCHERS watchers on the prefix
# (STREAMS streams over CONNS connections) are created together, each at the
# revision of the first put, and catch up on the whole history
# (`cairn bench watch --catch-up`, which counts every event of every
# watcher). Measured: the time from the first creation until every watcher
# is current (its last event), the time until every creation was
# acknowledged, the member's peak RSS over the run (VmHWM; the puts alone
# leave it below the catch-up's) and its CPU time over the run (the puts
# included).
#
#   bash scripts/bench-catchup.sh          # ROUNDS=3 PUTS=100000 KEYS=1000 WATCHERS=1000 STREAMS=10 CONNS=10
#   KEEP=1 bash scripts/bench-catchup.sh   # keep the work directory (logs, JSON results)
#
# Servers, ports and data directories as in scripts/bench-side-by-side.sh,
# whose functions this script uses. The output ends with a Markdown table:
# medians over the rounds, and the median (lowest–highest) of the cairn/etcd
# ratios taken within each round (lower is better for every row).
set -euo pipefail
# shellcheck source=bench-side-by-side.sh
source "$(dirname "$0")/bench-side-by-side.sh"

ROUNDS=${ROUNDS:-3}
PUTS=${PUTS:-100000}
KEYS=${KEYS:-1000}
WATCHERS=${WATCHERS:-1000}
STREAMS=${STREAMS:-10}
CONNS=${CONNS:-10}
EVENT_TIMEOUT=${EVENT_TIMEOUT:-1800s}

# storm NAME ROUND: the load on ENDPOINTS, kept as NAME.ROUND.json, with the
# member's CPU ticks over the run, puts included (.cpu), and its peak RSS in
# kB (.rss).
storm() {
  local name=$1 round=$2 member_start
  member_start=$(cpu_ticks)
  "$CAIRN" -w json --endpoints "$ENDPOINTS" bench --clients 100 --conns "$CONNS" --total "$PUTS" \
    watch --catch-up --streams "$STREAMS" --watchers-per-stream $((WATCHERS / STREAMS)) \
    --watch-prefix /bench-catchup/ --watched-key-total "$KEYS" --val-size 256 \
    --event-timeout "$EVENT_TIMEOUT" 2>/dev/null >"$RESULTS/$name.$round.json"
  echo $(($(cpu_ticks) - member_start)) >"$RESULTS/$name.$round.cpu"
  awk '/^VmHWM/ { print $2 }' "/proc/${PIDS[0]}/status" >"$RESULTS/$name.$round.rss"
  jq '.events.elapsed_seconds' "$RESULTS/$name.$round.json" >"$RESULTS/$name.$round.current"
  jq '.creation.elapsed_seconds' "$RESULTS/$name.$round.json" >"$RESULTS/$name.$round.created"
  jq .missing_events "$RESULTS/$name.$round.json" >"$RESULTS/$name.$round.missing"
  log "  all current after $(cat "$RESULTS/$name.$round.current") s; creations acknowledged in $(cat "$RESULTS/$name.$round.created") s;" \
    "peak RSS $(($(cat "$RESULTS/$name.$round.rss") / 1024)) MiB; $(jq .events.requests "$RESULTS/$name.$round.json") events, $(cat "$RESULTS/$name.$round.missing") missing"
}

setup_run
cut -d' ' -f1-3 /proc/loadavg >"$RESULTS/loadavg-before"
for ((round = 1; round <= ROUNDS; round++)); do
  order=(etcd cairn)
  if ((round % 2 == 0)); then order=(cairn etcd); fi
  for kind in "${order[@]}"; do
    log "round $round: $kind"
    start_cluster "$kind" 1
    storm "$kind" "$round"
    stop_servers
  done
done
cut -d' ' -f1-3 /proc/loadavg >"$RESULTS/loadavg-after"

# ---- summary -----------------------------------------------------------------

REPEAT=$ROUNDS # for med and ratio
HZ=$(getconf CLK_TCK)
s() { awk -v v="$1" 'BEGIN { printf "%.1f s", v }'; }
echo
echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores; $ROUNDS rounds; one member of each;"
echo "$PUTS puts of 256 bytes over $KEYS keys under one prefix, then $WATCHERS watchers of the prefix ($STREAMS streams over $CONNS connections)"
echo "created at the first put's revision, \`cairn bench watch --catch-up\` as the load."
echo "Load average (1, 5, 15 min) before: $(cat "$RESULTS/loadavg-before"); after: $(cat "$RESULTS/loadavg-after")."
echo
echo "| measurement | etcd 3.7.3 | cairn | cairn/etcd |"
echo "|---|---|---|---|"
echo "| time from the first creation until every watcher is current | $(s "$(med etcd current)") | $(s "$(med cairn current)") | $(ratio cairn etcd current) |"
echo "| time until every creation is acknowledged | $(s "$(med etcd created)") | $(s "$(med cairn created)") | $(ratio cairn etcd created) |"
echo "| member peak RSS | $(($(med etcd rss) / 1024)) MiB | $(($(med cairn rss) / 1024)) MiB | $(ratio cairn etcd rss) |"
echo "| member CPU over the run (the puts included) | $(awk -v t="$(med etcd cpu)" -v hz="$HZ" 'BEGIN { printf "%.1f s", t / hz }') | $(awk -v t="$(med cairn cpu)" -v hz="$HZ" 'BEGIN { printf "%.1f s", t / hz }') | $(ratio cairn etcd cpu) |"
echo
sum() { awk '{ s += $1 } END { print s + 0 }' "$@"; }
echo "Events lost (every round, every watcher): etcd $(sum "$RESULTS"/etcd.*.missing), cairn $(sum "$RESULTS"/cairn.*.missing)."
