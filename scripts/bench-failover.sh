#!/usr/bin/env bash
# Failover, etcd 3.7.3 and cairn side by side: in each round and for each
# signal of SIGNALS, a fresh 3-member cluster of each (etcd first in odd
# rounds, cairn first in even ones), the same election timeout for both
# (their defaults, 100 ms heartbeat, 1 s election), WRITERS writers putting
# keys of their own through one client of all three endpoints, the leader
# sent the signal (KILL: kill -9; TERM: a graceful stop), and measured: the
# time from the signal to the first put sent after it that succeeds
# (`etcd-client-bench failover`). Every acknowledged put is read back from
# the survivors afterwards: none may be missing or applied twice.
#
#   bash scripts/bench-failover.sh             # ROUNDS=3 SIGNALS="KILL TERM" WRITERS=20
#   KEEP=1 bash scripts/bench-failover.sh      # keep the work directory (logs, JSON results)
#
# Servers, ports and data directories as in scripts/bench-side-by-side.sh,
# whose functions this script uses. The output ends with a Markdown table:
# medians over the rounds, and the median (lowest–highest) of the cairn/etcd
# ratios taken within each round.
set -euo pipefail
# shellcheck source=bench-side-by-side.sh
source "$(dirname "$0")/bench-side-by-side.sh"

ROUNDS=${ROUNDS:-3}
SIGNALS=${SIGNALS:-KILL TERM}
WRITERS=${WRITERS:-20}

setup_run
cut -d' ' -f1-3 /proc/loadavg >"$RESULTS/loadavg-before"
for ((round = 1; round <= ROUNDS; round++)); do
  for sig in $SIGNALS; do
    order=(etcd cairn)
    if ((round % 2 == 0)); then order=(cairn etcd); fi
    for kind in "${order[@]}"; do
      log "round $round, $sig: $kind"
      start_cluster "$kind" 3
      "$ETCDCLIENT" failover --endpoints "$ENDPOINTS" --pids "$(
        IFS=,
        echo "${PIDS[*]}"
      )" --signal "$sig" --writers "$WRITERS" >"$RESULTS/$kind-$sig.$round.json"
      jq -r '"#   leader \(.leader): writes again after \(.recovery_ms) ms, longest gap \(.gap_ms) ms, slowest put \(.slowest_ms) ms; \(.acked) acknowledged, \(.failed) failed, \(.lost) lost, \(.duplicated) applied twice"' \
        "$RESULTS/$kind-$sig.$round.json" >&2
      stop_servers
    done
  done
done
cut -d' ' -f1-3 /proc/loadavg >"$RESULTS/loadavg-after"

# ---- summary -----------------------------------------------------------------

# med NAME PATH: the median over the rounds of a jq path of NAME.*.json.
med() { jq -s "[.[] | $2] | sort | .[(length - 1) / 2 | floor]" "$RESULTS/$1".*.json; }
# ratio A B PATH: median (lowest–highest) of A/B over the rounds.
ratio() {
  local r
  for ((r = 1; r <= ROUNDS; r++)); do
    jq -n --argjson a "$(jq "$3" "$RESULTS/$1.$r.json")" --argjson b "$(jq "$3" "$RESULTS/$2.$r.json")" '$a / $b'
  done | sort -g | awk '{ v[NR] = $1 } END { printf "%.2f (%.2f–%.2f)", v[int((NR + 1) / 2)], v[1], v[NR] }'
}
total() { jq -s "[.[] | $2] | add" "$RESULTS/$1".*.json; }
echo
echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores; $ROUNDS rounds; 3 members of each, default heartbeat and election timeout;"
echo "$WRITERS writers through one client of the three endpoints; the leader signalled after 2 s of writes."
echo "Load average (1, 5, 15 min) before: $(cat "$RESULTS/loadavg-before"); after: $(cat "$RESULTS/loadavg-after")."
echo
echo "| leader stopped by: measurement | etcd 3.7.3 | cairn | cairn/etcd |"
echo "|---|---|---|---|"
for sig in $SIGNALS; do
  for m in "recovery_ms:a put sent after the signal first succeeds after" "gap_ms:longest time without a successful put" "slowest_ms:slowest put"; do
    path=.${m%%:*}
    echo "| $sig: ${m#*:} | $(med "etcd-$sig" "$path") ms | $(med "cairn-$sig" "$path") ms | $(ratio "cairn-$sig" "etcd-$sig" "$path") |"
  done
  echo "| $sig: puts that failed, all rounds | $(total "etcd-$sig" .failed) | $(total "cairn-$sig" .failed) | |"
  echo "| $sig: puts lost or applied twice | $(total "etcd-$sig" '.lost + .duplicated') | $(total "cairn-$sig" '.lost + .duplicated') | |"
done
echo
echo "Every round (ms: recovery, longest gap, slowest put):"
for f in "$RESULTS"/*.json; do
  printf '  %-16s %10s %10s %10s\n' "$(basename "$f" .json)" "$(jq .recovery_ms "$f")" "$(jq .gap_ms "$f")" "$(jq .slowest_ms "$f")"
done
