#!/usr/bin/env bash
# Measures real etcd 3.7.3 and `cairn serve` side by side over a large
# keyspace: in each round, a fresh single member of each (the order of the two
# reversed every other round) is loaded with KEYS keys of 256 bytes by the same
# load generator (`cairn bench txn-put`, TXN_OPS puts a transaction: 10, so
# that the raft log both keep in memory, up to 15,000 entries with the default
# snapshot count, holds some 40 MB rather than the 400 MB of transactions of
# 100), then measured:
#
#   count     count-only range of every key (all but the first, whose key is
#             zeros, which a command line cannot hold: 999,999 of 1,000,000)
#   keys      keys-only range of 10,000 keys
#   values    range of the same 10,000 keys with their values
#   RSS       of the member a second after the load, after 10 s at rest
#             (cairn gives the free heap back once it has been idle for 2 s),
#             and after the measurements
#   restart   the member stopped with kill -9, then with SIGTERM (a clean
#             stop), and started again each time: the time from its start to
#             the answer of its first linearizable read (etcd's client,
#             retrying every 5 ms); with ONLY=restart, RESTARTS (3) times
#             each on the one load, the i-th restarts of the two servers
#             paired in the ratios
#   full      FULL concurrent ranges of every key with its value (the
#             answer of each some 290 MB): the member's peak RSS while they
#             run (VmHWM, reset before them), and their mean latency
#   pages     every key listed in pages of PAGE_LIMIT (500) as kube-apiserver
#             lists a resource: each page starting after the last key of the
#             one before, all at the revision of the first page, each page's
#             count (the keys left) checked; LISTS (3) lists, one after the
#             other, while PAGE_WRITES (100) puts a second change keys of the
#             first page (the pages read an older revision than the member's):
#             each page's latency (p50, p99) and a whole list's time
#   quiet     puts at DEFRAG_RATE a second for 20 s with nothing else going
#             on: the slowest put, the control of the two rows that follow
#   snapshot  a snapshot of the db streamed to a file (`snapshot save`) while
#             puts go on at DEFRAG_RATE a second: how long it took, and the
#             slowest put of that load
#   defrag    half the keys deleted ([\x80, \xc0): the numbers whose low 7
#             bits are below 64) and compacted away while puts go on at
#             DEFRAG_RATE a second (how long the compaction took, waited
#             for, and the slowest put of that load), then a defrag while
#             puts go on at DEFRAG_RATE a second: how long the defrag took,
#             and the slowest put of that load (etcd holds every write for
#             the whole defrag)
#
# one request at a time (1 client), COUNTS counts and RANGES ranges, after one
# unmeasured request of each. Latencies are the mean per request. The output
# ends with a Markdown table for BENCHMARKS.md: medians over the rounds, and the
# median (lowest–highest) of the cairn/etcd ratios taken within each round.
#
#   bash scripts/bench-scale.sh                 # ROUNDS=3 KEYS=1000000 TXN_OPS=10 COUNTS=20 RANGES=50 DEFRAG_RATE=500
#   KEEP=1 bash scripts/bench-scale.sh          # keep the work directory (logs, JSON results)
#   ONLY=defrag KEYS=2500000 bash scripts/bench-scale.sh   # the load and the defrag only, of a 1 GB db
#   ONLY=pages KEYS=100000 bash scripts/bench-scale.sh      # the load and the pages only
#   ONLY=restart KEYS=10000000 ROUNDS=1 MEMBER_FLAGS="--quota-backend-bytes 17179869184" \
#     bash scripts/bench-scale.sh                           # the load and RESTARTS restarts of each kind
#   KEYS=10000000 ROUNDS=1 FULL=0 LISTS=0 COUNTS=5 DEFRAG_DELETE=0 MEMBER_FLAGS="--quota-backend-bytes 17179869184" \
#     bash scripts/bench-scale.sh                           # 10M keys (3 GB, past the default
#                                                           # 2 GB quota): no full ranges
#                                                           # (2.9 GB each), no pages
#   ONLY=pages KEYS=10000000 ROUNDS=1 CAIRN_ONLY=1 bash scripts/bench-scale.sh   # cairn alone (etcd
#                                                           # lists 10M keys in pages in hours)
#
# Servers, ports and data directories as in scripts/bench-side-by-side.sh,
# whose functions this script uses.
set -euo pipefail
# shellcheck source=bench-side-by-side.sh
source "$(dirname "$0")/bench-side-by-side.sh"

ROUNDS=${ROUNDS:-3}
KEYS=${KEYS:-1000000}
COUNTS=${COUNTS:-20}
RANGES=${RANGES:-50}
TXN_OPS=${TXN_OPS:-10}
DEFRAG_RATE=${DEFRAG_RATE:-500}
DEFRAG_DELETE=${DEFRAG_DELETE:-1} # 0: the defrag of the whole db, nothing deleted first (etcd takes minutes a delete at 10M keys)
PAGE_LIMIT=${PAGE_LIMIT:-500}
LISTS=${LISTS:-3}
PAGE_WRITES=${PAGE_WRITES:-100}
ONLY=${ONLY:-}
if [[ -n $ONLY && $ONLY != defrag && $ONLY != pages && $ONLY != restart ]]; then
  echo "ONLY=$ONLY: the steps that run alone are defrag, pages and restart" >&2
  exit 2
fi
RESTARTS=${RESTARTS:-3}
if [[ $ONLY == restart && $ROUNDS != 1 ]]; then
  echo "ONLY=restart repeats the restarts on one load: ROUNDS=1, RESTARTS=N" >&2
  exit 2
fi
if [[ -n ${CAIRN_ONLY:-} && -z $ONLY ]]; then
  echo "CAIRN_ONLY=1 runs one step alone: ONLY=pages or ONLY=defrag" >&2
  exit 2
fi
FULL=${FULL:-8}
# The keys are those of etcd's benchmark tool: 8 bytes, the varint of the
# key's number, zero-padded. Of the first 1,000,000, [LO, HI) holds exactly
# 10,000; the script prints how many it found.
LO=$'\x80\x80'
HI=$'\x80\xd2\x46'
ALL=($'\x01' $'\xff')

# bench_range NAME ROUND ARGS...: one unmeasured range, then the measured ones,
# kept as NAME.ROUND.json.
bench_range() {
  local name=$1 round=$2 total=$3
  shift 3
  "$CAIRN" -w json --endpoints "$ENDPOINTS" bench --clients 1 --conns 1 --total 1 range "$@" >/dev/null
  "$CAIRN" -w json --endpoints "$ENDPOINTS" bench --clients 1 --conns 1 --total "$total" range "$@" >"$RESULTS/$name.$round.json"
  jq -r --arg n "$name" '"#   \($n): \(.latency_seconds.average * 100000 | round / 100) ms per request, failed \(.failed)"' \
    "$RESULTS/$name.$round.json" >&2
}

# rss NAME ROUND: the member's resident set, kept as NAME.ROUND.json.
rss() {
  local kib
  kib=$(awk '/^VmRSS:/ { print $2 }' "/proc/${PIDS[0]}/status")
  echo "{\"rss_kib\": $kib}" >"$RESULTS/$1.$2.json"
  log "  $1: $((kib / 1024)) MiB"
}

# count_of KEY END: the number of keys in [KEY, END), as the member counts them.
count_of() {
  "$CAIRN" -w json --endpoints "$ENDPOINTS" --command-timeout 120s get --limit 1 "$1" "$2" | jq .count
}

# full_ranges ROUND KIND: FULL concurrent ranges of every key with its
# value; keeps KIND-full.ROUND.json (the load generator's result) and
# KIND-full-peak.ROUND.json (the member's peak RSS meanwhile).
full_ranges() {
  local round=$1 kind=$2 kib
  echo 5 >"/proc/${PIDS[0]}/clear_refs" # resets VmHWM to the current RSS
  "$CAIRN" -w json --endpoints "$ENDPOINTS" bench --clients "$FULL" --conns "$FULL" --total "$FULL" range "${ALL[@]}" \
    >"$RESULTS/$kind-full.$round.json"
  kib=$(awk '/^VmHWM:/ { print $2 }' "/proc/${PIDS[0]}/status")
  echo "{\"rss_kib\": $kib}" >"$RESULTS/$kind-full-peak.$round.json"
  log "  $FULL full ranges: peak RSS $((kib / 1024)) MiB, $(jq .latency_seconds.average "$RESULTS/$kind-full.$round.json") s each," \
    "failed $(jq .failed "$RESULTS/$kind-full.$round.json")"
}

# restart ROUND KIND SIGNAL NAME: stops the member with SIGNAL, starts it
# again on its data directory and keeps, as KIND-NAME.ROUND.json, the seconds
# from its start to the answer of its first linearizable read.
restart() {
  local round=$1 kind=$2 sig=$3 name=$4 start end
  kill -s "$sig" "${PIDS[0]}"
  wait "${PIDS[0]}" 2>/dev/null || true
  start=$(date +%s%N)
  launch_member 0
  end=$("$ETCDCLIENT" first-read "$ENDPOINTS" 600s)
  awk -v s="$start" -v e="$end" 'BEGIN { printf "{\"seconds\": %.3f}\n", (e - s) / 1e9 }' >"$RESULTS/$kind-$name.$round.json"
  log "  restart after $sig: first linearizable read in $(jq .seconds "$RESULTS/$kind-$name.$round.json") s"
}

# db_sizes: the member's db size and size in use, in bytes, as JSON fields.
db_sizes() {
  "$CAIRN" -w json --endpoints "$ENDPOINTS" endpoint status | jq -c '.[0].Status | {db_size: .dbSize, db_size_in_use: .dbSizeInUse}'
}

# defrag ROUND KIND: deletes half the keys, compacts them away, then
# defragments while a put load runs at DEFRAG_RATE; keeps KIND-defrag.ROUND.json
# (seconds, sizes) and KIND-defrag-puts.ROUND.json (the load's result).
defrag() {
  local round=$1 kind=$2 rev before start took load first step=8
  # In deletes of at most 160,000 keys or so: one of 1,250,000 keys
  # (KEYS=2500000) runs past etcd's request timeout. A key's first byte
  # is one of 128 alike.
  if ((KEYS > 2500000)); then step=1; fi
  for ((first = 0x80; first < 0xc0 && DEFRAG_DELETE; first += step)); do
    "$CAIRN" --endpoints "$ENDPOINTS" --command-timeout 120s del \
      "$(printf "\\x$(printf %x "$first")")" "$(printf "\\x$(printf %x $((first + step)))")" >/dev/null
  done
  rev=$("$CAIRN" -w json --endpoints "$ENDPOINTS" --command-timeout 120s get --limit 1 x | jq .header.revision)
  # The compaction, waited for (--physical), under loads of 5 s at
  # DEFRAG_RATE one after the other until it is done.
  "$CAIRN" --endpoints "$ENDPOINTS" --command-timeout 600s compaction "$rev" --physical >/dev/null &
  local compaction=$! part=0
  start=$(date +%s.%N)
  while kill -0 "$compaction" 2>/dev/null; do
    "$CAIRN" -w json --endpoints "$ENDPOINTS" bench --clients 10 --conns 1 --rate "$DEFRAG_RATE" --total $((DEFRAG_RATE * 5)) \
      put --key-size 8 --val-size 256 --key-space-size 100000 >"$RESULTS/$kind-compaction-puts.$round.$part.json"
    part=$((part + 1))
  done
  wait "$compaction"
  took=$(echo "$(date +%s.%N) - $start" | bc)
  jq -s --argjson s "$took" '{seconds: $s, slowest_put_seconds: (map(.latency_seconds.slowest) | max)}' \
    "$RESULTS/$kind-compaction-puts.$round".*.json >"$RESULTS/$kind-compaction.$round.json"
  log "  compaction at $rev in $took s; slowest put $(jq .slowest_put_seconds "$RESULTS/$kind-compaction.$round.json") s"
  before=$(db_sizes)
  # 20 s of puts at DEFRAG_RATE; the defrag starts a second in.
  "$CAIRN" -w json --endpoints "$ENDPOINTS" bench --clients 10 --conns 1 --rate "$DEFRAG_RATE" --total $((DEFRAG_RATE * 20)) \
    put --key-size 8 --val-size 256 --key-space-size 100000 >"$RESULTS/$kind-defrag-puts.$round.json" &
  load=$!
  sleep 1 # the load is under way: a duration, nothing to wait for
  start=$(date +%s.%N)
  "$CAIRN" --endpoints "$ENDPOINTS" --command-timeout 300s defrag >/dev/null
  took=$(echo "$(date +%s.%N) - $start" | bc)
  wait "$load"
  jq -n --argjson b "$before" --argjson a "$(db_sizes)" --argjson s "$took" '{seconds: $s, before: $b, after: $a}' >"$RESULTS/$kind-defrag.$round.json"
  log "  defrag of $(jq .db_size <<<"$before") bytes ($(jq .db_size_in_use <<<"$before") in use) in $took s;" \
    "slowest put $(jq .latency_seconds.slowest "$RESULTS/$kind-defrag-puts.$round.json") s"
}

# quiet ROUND KIND: the put load of the snapshot and the defrag with nothing
# else going on, kept as KIND-quiet-puts.ROUND.json: the control for their
# slowest puts, which the disk's own slowest fsyncs make as well.
quiet() {
  local round=$1 kind=$2
  "$CAIRN" -w json --endpoints "$ENDPOINTS" bench --clients 10 --conns 1 --rate "$DEFRAG_RATE" --total $((DEFRAG_RATE * 20)) \
    put --key-size 8 --val-size 256 --key-space-size 100000 >"$RESULTS/$kind-quiet-puts.$round.json"
  log "  $DEFRAG_RATE puts/s with nothing else going on: slowest put $(jq .latency_seconds.slowest "$RESULTS/$kind-quiet-puts.$round.json") s"
}

# snapshot ROUND KIND: a snapshot saved while a put load runs at
# DEFRAG_RATE; keeps KIND-snapshot.ROUND.json (seconds, size) and
# KIND-snapshot-puts.ROUND.json (the load's result).
snapshot() {
  local round=$1 kind=$2 start took load
  "$CAIRN" -w json --endpoints "$ENDPOINTS" bench --clients 10 --conns 1 --rate "$DEFRAG_RATE" --total $((DEFRAG_RATE * 20)) \
    put --key-size 8 --val-size 256 --key-space-size 100000 >"$RESULTS/$kind-snapshot-puts.$round.json" &
  load=$!
  sleep 1 # the load is under way: a duration, nothing to wait for
  start=$(date +%s.%N)
  "$CAIRN" --endpoints "$ENDPOINTS" --command-timeout 600s snapshot save "$WORK/$kind.snapshot.db" >/dev/null
  took=$(echo "$(date +%s.%N) - $start" | bc)
  wait "$load"
  jq -n --argjson s "$took" --argjson b "$(stat -c %s "$WORK/$kind.snapshot.db")" '{seconds: $s, bytes: $b}' >"$RESULTS/$kind-snapshot.$round.json"
  rm -f "$WORK/$kind.snapshot.db"
  log "  snapshot of $(jq .bytes "$RESULTS/$kind-snapshot.$round.json") bytes in $took s;" \
    "slowest put $(jq .latency_seconds.slowest "$RESULTS/$kind-snapshot-puts.$round.json") s"
}

# pages ROUND KIND: LISTS lists of every key in pages, kept as
# KIND-pages.ROUND.json.
pages() {
  local round=$1 kind=$2
  "$ETCDCLIENT" pages --endpoints "$ENDPOINTS" --limit "$PAGE_LIMIT" --lists "$LISTS" --write-rate "$PAGE_WRITES" \
    "${ALL[@]}" >"$RESULTS/$kind-pages.$round.json"
  jq -r '"#   pages of \(.limit): p50 \(.page_p50_seconds * 100000 | round / 100) ms, p99 \(.page_p99_seconds * 100000 | round / 100) ms; a list of \(.keys) keys in \(.list_median_seconds * 100 | round / 100) s; \(.puts_meanwhile) puts meanwhile"' \
    "$RESULTS/$kind-pages.$round.json" >&2
}

measure_round() {
  local kind=$1 round=$2 start
  start_cluster "$kind" 1
  start=$SECONDS
  "$CAIRN" -w json --endpoints "$ENDPOINTS" bench --clients 100 --conns 10 --total $((KEYS / TXN_OPS)) \
    txn-put --txn-ops "$TXN_OPS" --key-size 8 --val-size 256 --sequential-keys --key-space-size "$KEYS" \
    >"$RESULTS/$kind-load.$round.json"
  log "  loaded $KEYS keys in $((SECONDS - start)) s; $(count_of "${ALL[@]}") counted, $(count_of "$LO" "$HI") in the 10,000-key range"
  if [[ $ONLY == pages ]]; then
    pages "$round" "$kind"
    stop_servers
    return
  fi
  if [[ $ONLY == restart ]]; then
    sleep 10 # at rest, as in the full run: a duration, nothing to wait for
    for ((rep = 1; rep <= RESTARTS; rep++)); do
      restart "$rep" "$kind" KILL restart-kill
      restart "$rep" "$kind" TERM restart-term
    done
    stop_servers
    return
  fi
  if [[ $ONLY != defrag ]]; then
    sleep 1 # the last batch commits
    rss "$kind-rss-load" "$round"
    sleep 9 # at rest: a duration, nothing to wait for
    rss "$kind-rss-rest" "$round"
    bench_range "$kind-count" "$round" "$COUNTS" --count-only "${ALL[@]}"
    bench_range "$kind-keys" "$round" "$RANGES" --keys-only "$LO" "$HI"
    bench_range "$kind-values" "$round" "$RANGES" "$LO" "$HI"
    if ((LISTS > 0)); then pages "$round" "$kind"; fi
    rss "$kind-rss-after" "$round"
    restart "$round" "$kind" KILL restart-kill
    restart "$round" "$kind" TERM restart-term
    quiet "$round" "$kind"
    snapshot "$round" "$kind"
    if ((FULL > 0)); then full_ranges "$round" "$kind"; fi
  fi
  defrag "$round" "$kind"
  stop_servers
}

setup_run
cut -d' ' -f1-3 /proc/loadavg >"$RESULTS/loadavg-before"
for ((round = 1; round <= ROUNDS; round++)); do
  order=(etcd cairn)
  if ((round % 2 == 0)); then order=(cairn etcd); fi
  if [[ -n ${CAIRN_ONLY:-} ]]; then order=(cairn); fi
  for kind in "${order[@]}"; do
    log "round $round: $kind"
    measure_round "$kind" "$round"
  done
done
cut -d' ' -f1-3 /proc/loadavg >"$RESULTS/loadavg-after"

# ---- summary -----------------------------------------------------------------

REPEAT=$ROUNDS # for median and paired
if [[ $ONLY == restart ]]; then REPEAT=$RESTARTS; fi
ms() { awk -v s="$1" 'BEGIN { printf "%.1f ms", s * 1000 }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.0f MiB", k / 1024 }'; }
echo
echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores; $ROUNDS rounds; $KEYS keys of 256 bytes on one member."
echo "Load average (1, 5, 15 min) before: $(cat "$RESULTS/loadavg-before"); after: $(cat "$RESULTS/loadavg-after")."
echo "Figures: medians over the rounds. Ratios (lower is better): median (lowest–highest) of cairn/etcd within each round."
echo
if [[ -n ${CAIRN_ONLY:-} ]]; then
  echo "| measurement (cairn alone) | cairn serve |"
  echo "|---|---|"
  if [[ $ONLY == pages ]]; then
    echo "| a page of $PAGE_LIMIT of a list of every key at one revision, $PAGE_WRITES puts/s meanwhile: p50 | $(ms "$(median cairn-pages .page_p50_seconds)") |"
    echo "| the same: p99 | $(ms "$(median cairn-pages .page_p99_seconds)") |"
    echo "| the same: a whole list | $(median cairn-pages .list_median_seconds | awk '{ printf "%.2f s", $1 }') |"
  else
    echo "| compaction, waited for, while $DEFRAG_RATE puts/s go on: time | $(median cairn-compaction .seconds | awk '{ printf "%.2f s", $1 }') |"
    echo "| slowest put during the compaction | $(ms "$(median cairn-compaction .slowest_put_seconds)") |"
    echo "| defrag of the db ($(median cairn-defrag .before.db_size | awk '{ printf "%.0f MB", $1 / 1e6 }')) | $(median cairn-defrag .seconds | awk '{ printf "%.2f s", $1 }') |"
    echo "| db file after the defrag | $(median cairn-defrag .after.db_size | awk '{ printf "%.0f MB", $1 / 1e6 }') |"
    echo "| slowest put of $DEFRAG_RATE/s during the defrag | $(ms "$(median cairn-defrag-puts .latency_seconds.slowest)") |"
  fi
  echo "| load: $KEYS puts in transactions of $TXN_OPS, 100 clients (time) | $(median cairn-load .elapsed_seconds | awk '{ printf "%.0f s", $1 }') |"
  echo "| load: $KEYS puts in transactions of $TXN_OPS, 100 clients (throughput) | $(median cairn-load .requests_per_second | awk '{ printf "%.0f txn/s", $1 }') |"
  exit 0
fi
if [[ $ONLY == restart ]]; then
  echo "| measurement ($RESTARTS restarts of each on one load) | etcd 3.7.3 | cairn serve | cairn/etcd |"
  echo "|---|---|---|---|"
  for row in "restart-kill:kill -9, restart, first linearizable read" "restart-term:clean stop, restart, first linearizable read"; do
    name=${row%%:*}
    echo "| ${row#*:} | $(median "etcd-$name" .seconds | awk '{ printf "%.2f s", $1 }') |" \
      "$(median "cairn-$name" .seconds | awk '{ printf "%.2f s", $1 }') | $(paired "cairn-$name" "etcd-$name" .seconds) |"
  done
  exit 0
fi
echo "| measurement | etcd 3.7.3 | cairn serve | cairn/etcd |"
echo "|---|---|---|---|"
if [[ $ONLY != defrag ]] && ((LISTS > 0)); then
  for row in "page_p50_seconds:a page of $PAGE_LIMIT of a list of every key at one revision, $PAGE_WRITES puts/s meanwhile: p50" \
    "page_p99_seconds:the same: p99"; do
    path=.${row%%:*}
    echo "| ${row#*:} | $(ms "$(median etcd-pages "$path")") | $(ms "$(median cairn-pages "$path")") | $(paired cairn-pages etcd-pages "$path") |"
  done
  echo "| the same: a whole list | $(median etcd-pages .list_median_seconds | awk '{ printf "%.2f s", $1 }') |" \
    "$(median cairn-pages .list_median_seconds | awk '{ printf "%.2f s", $1 }') | $(paired cairn-pages etcd-pages .list_median_seconds) |"
fi
if [[ -z $ONLY ]]; then
  for row in "count:count-only range of all keys ($COUNTS requests)" \
    "keys:keys-only range of 10,000 keys ($RANGES requests)" \
    "values:range of 10,000 keys with values ($RANGES requests)"; do
    name=${row%%:*}
    echo "| ${row#*:} | $(ms "$(median "etcd-$name" .latency_seconds.average)") |" \
      "$(ms "$(median "cairn-$name" .latency_seconds.average)") |" \
      "$(paired "cairn-$name" "etcd-$name" .latency_seconds.average) |"
  done
  for row in "rss-load:RSS a second after the load" "rss-rest:RSS after 10 s at rest" "rss-after:RSS after the measurements"; do
    name=${row%%:*}
    echo "| ${row#*:} | $(mib "$(median "etcd-$name" .rss_kib)") | $(mib "$(median "cairn-$name" .rss_kib)") |" \
      "$(paired "cairn-$name" "etcd-$name" .rss_kib) |"
  done
  for row in "restart-kill:kill -9, restart, first linearizable read" "restart-term:clean stop, restart, first linearizable read"; do
    name=${row%%:*}
    echo "| ${row#*:} | $(median "etcd-$name" .seconds | awk '{ printf "%.2f s", $1 }') |" \
      "$(median "cairn-$name" .seconds | awk '{ printf "%.2f s", $1 }') | $(paired "cairn-$name" "etcd-$name" .seconds) |"
  done
  echo "| snapshot save while $DEFRAG_RATE puts/s go on | $(median etcd-snapshot .seconds | awk '{ printf "%.2f s", $1 }') |" \
    "$(median cairn-snapshot .seconds | awk '{ printf "%.2f s", $1 }') | $(paired cairn-snapshot etcd-snapshot .seconds) |"
  echo "| slowest put of $DEFRAG_RATE/s with nothing else going on (the control of the snapshot's and the defrag's) | $(ms "$(median etcd-quiet-puts .latency_seconds.slowest)") |" \
    "$(ms "$(median cairn-quiet-puts .latency_seconds.slowest)") | $(paired cairn-quiet-puts etcd-quiet-puts .latency_seconds.slowest) |"
  echo "| slowest put during the snapshot | $(ms "$(median etcd-snapshot-puts .latency_seconds.slowest)") |" \
    "$(ms "$(median cairn-snapshot-puts .latency_seconds.slowest)") | $(paired cairn-snapshot-puts etcd-snapshot-puts .latency_seconds.slowest) |"
fi
if [[ -z $ONLY ]] && ((FULL > 0)); then
  echo "| $FULL concurrent ranges of every key with its value: peak RSS | $(mib "$(median etcd-full-peak .rss_kib)") | $(mib "$(median cairn-full-peak .rss_kib)") |" \
    "$(paired cairn-full-peak etcd-full-peak .rss_kib) |"
  echo "| the same: mean latency of a range | $(median etcd-full .latency_seconds.average | awk '{ printf "%.2f s", $1 }') |" \
    "$(median cairn-full .latency_seconds.average | awk '{ printf "%.2f s", $1 }') |" "$(paired cairn-full etcd-full .latency_seconds.average) |"
fi
if [[ $ONLY != pages ]]; then
  what="after half the keys were deleted and compacted"
  if ((DEFRAG_DELETE == 0)); then what="compacted, nothing deleted"; fi
  echo "| defrag of the db $what ($(median etcd-defrag .before.db_size | awk '{ printf "%.0f MB", $1 / 1e6 }') for etcd) | $(median etcd-defrag .seconds | awk '{ printf "%.2f s", $1 }') |" \
    "$(median cairn-defrag .seconds | awk '{ printf "%.2f s", $1 }') |" "$(paired cairn-defrag etcd-defrag .seconds) |"
  echo "| db file after the defrag | $(median etcd-defrag .after.db_size | awk '{ printf "%.0f MB", $1 / 1e6 }') |" \
    "$(median cairn-defrag .after.db_size | awk '{ printf "%.0f MB", $1 / 1e6 }') | $(paired cairn-defrag etcd-defrag .after.db_size) |"
  echo "| slowest put of $DEFRAG_RATE/s during the defrag | $(ms "$(median etcd-defrag-puts .latency_seconds.slowest)") |" \
    "$(ms "$(median cairn-defrag-puts .latency_seconds.slowest)") |" "$(paired cairn-defrag-puts etcd-defrag-puts .latency_seconds.slowest) |"
  echo "| the compaction before it, waited for: time | $(median etcd-compaction .seconds | awk '{ printf "%.2f s", $1 }') |" \
    "$(median cairn-compaction .seconds | awk '{ printf "%.2f s", $1 }') | $(paired cairn-compaction etcd-compaction .seconds) |"
  echo "| slowest put of $DEFRAG_RATE/s during the compaction | $(ms "$(median etcd-compaction .slowest_put_seconds)") |" \
    "$(ms "$(median cairn-compaction .slowest_put_seconds)") | $(paired cairn-compaction etcd-compaction .slowest_put_seconds) |"
fi
echo "| load: $KEYS puts in transactions of $TXN_OPS, 100 clients (time) | $(median etcd-load .elapsed_seconds | awk '{ printf "%.0f s", $1 }') |" \
  "$(median cairn-load .elapsed_seconds | awk '{ printf "%.0f s", $1 }') | $(paired cairn-load etcd-load .elapsed_seconds) |"
echo "| load: $KEYS puts in transactions of $TXN_OPS, 100 clients (throughput) | $(median etcd-load .requests_per_second | awk '{ printf "%.0f txn/s", $1 }') |" \
  "$(median cairn-load .requests_per_second | awk '{ printf "%.0f txn/s", $1 }') |" \
  "$(paired cairn-load etcd-load .requests_per_second) |"
