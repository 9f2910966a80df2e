#!/usr/bin/env bash
# Watch fan-out through gRPC proxies, etcd 3.7.3 and cairn side by side: in
# each round and for each count of WATCHER_COUNTS, a fresh single member of
# each (etcd first in odd rounds, cairn first in even ones) with two proxies
# of its own kind in front (`etcd grpc-proxy start`, `cairn grpc-proxy
# start`), and the same `cairn bench watch` load through the two proxies:
# the watchers (STREAMS streams over CONNS connections, half on each proxy),
# all on one prefix, then PUTS puts under the prefix at RATE a second
# (through the proxies too). Measured: the delivery latency of every event
# to every watcher (p99), events lost (the bench counts every event per
# watcher), the member's CPU time while the puts are delivered (from the end
# of the watchers' creation to the end of the run) and its peak RSS, and
# the proxies' CPU time over the whole run.
#
#   bash scripts/bench-proxy.sh                 # ROUNDS=3 WATCHER_COUNTS="1000 10000" STREAMS=100 CONNS=10 PUTS=200 RATE=20
#   WATCHER_COUNTS=100000 PUTS=100 bash scripts/bench-proxy.sh
#   KEEP=1 bash scripts/bench-proxy.sh          # keep the work directory (logs, JSON results)
#
# Servers, ports and data directories as in scripts/bench-side-by-side.sh,
# whose functions this script uses. The output ends with a Markdown table:
# medians over the rounds, and the median (lowest–highest) of the cairn/etcd
# ratios taken within each round (lower is better for every row).
set -euo pipefail
# shellcheck source=bench-side-by-side.sh
source "$(dirname "$0")/bench-side-by-side.sh"

ROUNDS=${ROUNDS:-3}
WATCHER_COUNTS=${WATCHER_COUNTS:-1000 10000}
STREAMS=${STREAMS:-100}
CONNS=${CONNS:-10}
PUTS=${PUTS:-200}
RATE=${RATE:-20}
EVENT_TIMEOUT=${EVENT_TIMEOUT:-120s}

PROXY_PIDS=()
PROXIES=""

# start_proxies KIND: two proxies of KIND in front of ENDPOINTS; sets
# PROXIES to their addresses, comma-separated.
start_proxies() {
  local kind=$1 i port cmd
  PROXIES=""
  for i in 0 1; do
    port=$("$ETCDCLIENT" free-ports 1)
    if [[ $kind == etcd ]]; then cmd=("$ETCD_BIN/etcd" grpc-proxy start); else cmd=("$CAIRN" grpc-proxy start); fi
    "${cmd[@]}" --endpoints "$ENDPOINTS" --listen-addr "127.0.0.1:$port" --data-dir "$CLUSTER_DIR/proxy$i" \
      >>"$CLUSTER_DIR/proxy$i.log" 2>&1 &
    PROXY_PIDS+=($!)
    PROXIES+="${PROXIES:+,}127.0.0.1:$port"
  done
  local deadline=$((SECONDS + 30))
  until "$CAIRN" --endpoints "$PROXIES" get proxy-ready >/dev/null 2>&1; do
    if ((SECONDS > deadline)); then
      echo "$kind proxies did not answer; logs in $CLUSTER_DIR" >&2
      tail -n 20 "$CLUSTER_DIR"/proxy*.log >&2
      exit 1
    fi
    sleep 0.2
  done
  log "$kind proxies up: $PROXIES"
}

stop_proxies() {
  local pid
  for pid in "${PROXY_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PROXY_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  PROXY_PIDS=()
}

# ticks PID...: the CPU time (user and system, clock ticks) of the processes.
ticks() {
  local pid total=0
  for pid in "$@"; do total=$((total + $(awk '{ print $14 + $15 }' "/proc/$pid/stat"))); done
  echo "$total"
}

# fanout NAME ROUND WATCHERS: the load through PROXIES, kept as NAME.ROUND.json,
# with the member's CPU ticks during the puts (.cpu), its peak RSS in kB
# (.rss) and the proxies' CPU ticks (.proxycpu).
fanout() {
  local name=$1 round=$2 watchers=$3 created=$WORK/created.$$ member_start proxy_start pid
  rm -f "$created"
  proxy_start=$(ticks "${PROXY_PIDS[@]}")
  "$CAIRN" -w json --endpoints "$PROXIES" bench --clients 10 --conns "$CONNS" --total "$PUTS" --rate "$RATE" \
    watch --streams "$STREAMS" --watchers-per-stream $((watchers / STREAMS)) --watch-prefix /bench-watch/ \
    --watched-key-total 100 --val-size 64 --event-timeout "$EVENT_TIMEOUT" --created-file "$created" \
    2>/dev/null >"$RESULTS/$name.$round.json" &
  pid=$!
  while [[ ! -e $created ]] && kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  member_start=$(cpu_ticks)
  wait "$pid"
  echo $(($(cpu_ticks) - member_start)) >"$RESULTS/$name.$round.cpu"
  echo $(($(ticks "${PROXY_PIDS[@]}") - proxy_start)) >"$RESULTS/$name.$round.proxycpu"
  awk '/^VmHWM/ { print $2 }' "/proc/${PIDS[0]}/status" >"$RESULTS/$name.$round.rss"
  jq -r '"#   delivery p99 \(.events.latency_seconds.percentiles.p99 * 100000 | round / 100) ms; \(.events.requests) events, \(.missing_events) missing"' \
    "$RESULTS/$name.$round.json" >&2
}

setup_run
trap 'stop_proxies; stop_servers; if [[ -n ${KEEP:-} ]]; then echo "work directory kept: $WORK" >&2; else rm -rf "$WORK"; fi' EXIT
cut -d' ' -f1-3 /proc/loadavg >"$RESULTS/loadavg-before"
for ((round = 1; round <= ROUNDS; round++)); do
  for watchers in $WATCHER_COUNTS; do
    order=(etcd cairn)
    if ((round % 2 == 0)); then order=(cairn etcd); fi
    for kind in "${order[@]}"; do
      log "round $round, $watchers watchers: $kind"
      start_cluster "$kind" 1
      start_proxies "$kind"
      fanout "$kind-$watchers" "$round" "$watchers"
      stop_proxies
      stop_servers
    done
  done
done
cut -d' ' -f1-3 /proc/loadavg >"$RESULTS/loadavg-after"

# ---- summary -----------------------------------------------------------------

REPEAT=$ROUNDS # for med and ratio
HZ=$(getconf CLK_TCK)
P99=.events.latency_seconds.percentiles.p99
for f in "$RESULTS"/*.json; do
  jq "$P99 * 1000" "$f" >"${f%.json}.p99"
  jq .missing_events "$f" >"${f%.json}.missing"
done
echo
echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores; $ROUNDS rounds; one member of each behind two proxies of its kind;"
echo "watchers on one prefix ($STREAMS streams over $CONNS connections, half on each proxy), $PUTS puts at $RATE/s, \`cairn bench watch\` as the load."
echo "Load average (1, 5, 15 min) before: $(cat "$RESULTS/loadavg-before"); after: $(cat "$RESULTS/loadavg-after")."
echo
echo "| measurement | etcd 3.7.3 | cairn | cairn/etcd |"
echo "|---|---|---|---|"
for watchers in $WATCHER_COUNTS; do
  e=etcd-$watchers c=cairn-$watchers
  echo "| $watchers watchers: delivery p99 | $(med "$e" p99) ms | $(med "$c" p99) ms | $(ratio "$c" "$e" p99) |"
  echo "| $watchers watchers: member CPU while the puts are delivered | $(awk -v t="$(med "$e" cpu)" -v hz="$HZ" 'BEGIN { printf "%.2f s", t / hz }') | $(awk -v t="$(med "$c" cpu)" -v hz="$HZ" 'BEGIN { printf "%.2f s", t / hz }') | $(ratio "$c" "$e" cpu) |"
  echo "| $watchers watchers: member peak RSS | $(($(med "$e" rss) / 1024)) MiB | $(($(med "$c" rss) / 1024)) MiB | $(ratio "$c" "$e" rss) |"
  echo "| $watchers watchers: the two proxies' CPU (creation and puts) | $(awk -v t="$(med "$e" proxycpu)" -v hz="$HZ" 'BEGIN { printf "%.1f s", t / hz }') | $(awk -v t="$(med "$c" proxycpu)" -v hz="$HZ" 'BEGIN { printf "%.1f s", t / hz }') | $(ratio "$c" "$e" proxycpu) |"
done
echo
sum() { awk '{ s += $1 } END { print s + 0 }' "$@"; }
echo "Events lost (every round, every watcher): etcd $(sum "$RESULTS"/etcd-*.missing), cairn $(sum "$RESULTS"/cairn-*.missing)."
