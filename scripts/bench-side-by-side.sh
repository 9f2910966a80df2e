#!/usr/bin/env bash
# Measures real etcd 3.7.3 and `cairn serve` side by side on this machine, in
# one run, with the same load generator (`cairn bench`), and etcd's own Go
# client (scripts/etcd-client-bench) against the same etcd to show that
# cairn's client is not the bottleneck:
#   - a single member of each: puts, then linearizable single-key ranges;
#   - a 3-member cluster of each on loopback: puts.
# Every server runs in a temporary directory of its own, on free ports of
# 127.0.0.1, and is stopped before the next one starts; each measurement
# has a fresh cluster of its own, and every workload runs REPEAT times. The end of the output is a Markdown table of
# the medians for BENCHMARKS.md.
#
#   bash scripts/bench-side-by-side.sh            # REPEAT=5 TOTAL=20000 CLIENTS=100 CONNS=10 VAL_SIZE=256
#   KEEP=1 bash scripts/bench-side-by-side.sh     # keep the work directory (logs, JSON results)
#   bash scripts/bench-side-by-side.sh --summarize DIR/results   # the table again, from kept results
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ${1:-} == --summarize ]]; then
  SUMMARIZE=${2:?--summarize needs the results directory of a kept run}
fi

REPEAT=${REPEAT:-5}
TOTAL=${TOTAL:-20000}
CLIENTS=${CLIENTS:-100}
CONNS=${CONNS:-10}
VAL_SIZE=${VAL_SIZE:-256}

command -v jq >/dev/null || { echo "jq is needed to summarise the results" >&2; exit 1; }
if [[ -n ${SUMMARIZE:-} ]]; then
  RESULTS=$SUMMARIZE
  REPEAT=$(find "$RESULTS" -name 'etcd1-put.*.json' | wc -l)
else
ETCD_BIN=${ETCD_BIN:-$(bash ../shared/tools/reference-etcd.sh)}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cairn-bench.XXXXXX")
BIN=$WORK/bin
RESULTS=$WORK/results
mkdir -p "$BIN" "$RESULTS"

PIDS=()
CLUSTER_DIR=""
# stop_servers stops the members started last and removes their data
# directories (their logs stay).
stop_servers() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  PIDS=()
  if [[ -n $CLUSTER_DIR ]]; then rm -rf "$CLUSTER_DIR"/m*/; fi
  CLUSTER_DIR=""
}
cleanup() {
  stop_servers
  if [[ -n ${KEEP:-} ]]; then echo "work directory kept: $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "# $*" >&2; }

log "building cairn and the etcd-client load generator"
go build -o "$BIN/cairn" ./cmd/cairn
go build -o "$BIN/etcd-client-bench" ./scripts/etcd-client-bench
CAIRN=$BIN/cairn
ETCDCLIENT=$BIN/etcd-client-bench

# start_cluster KIND SIZE: starts SIZE members of KIND (etcd or cairn) and
# sets ENDPOINTS to their client addresses, comma-separated.
start_cluster() {
  local kind=$1 size=$2 dir ports initial="" i
  dir=$(mktemp -d "$WORK/$kind-$size.XXXX")
  CLUSTER_DIR=$dir
  read -r -a ports <<<"$("$ETCDCLIENT" free-ports $((2 * size)))"
  for ((i = 0; i < size; i++)); do
    initial+="${initial:+,}m$i=http://127.0.0.1:${ports[2 * i + 1]}"
  done
  ENDPOINTS=""
  for ((i = 0; i < size; i++)); do
    local client=127.0.0.1:${ports[2 * i]} peer=127.0.0.1:${ports[2 * i + 1]} cmd
    if [[ $kind == etcd ]]; then cmd=("$ETCD_BIN/etcd"); else cmd=("$CAIRN" serve); fi
    "${cmd[@]}" --name "m$i" --data-dir "$dir/m$i" \
      --listen-client-urls "http://$client" --advertise-client-urls "http://$client" \
      --listen-peer-urls "http://$peer" --initial-advertise-peer-urls "http://$peer" \
      --initial-cluster "$initial" --initial-cluster-token "bench-$kind-$size" \
      --initial-cluster-state new >"$dir/m$i.log" 2>&1 &
    PIDS+=($!)
    ENDPOINTS+="${ENDPOINTS:+,}$client"
  done
  local deadline=$((SECONDS + 30))
  until "$CAIRN" --endpoints "$ENDPOINTS" endpoint health >/dev/null 2>&1; do
    if ((SECONDS > deadline)); then
      echo "$kind cluster of $size did not become healthy; logs in $dir" >&2
      tail -n 20 "$dir"/*.log >&2
      exit 1
    fi
    sleep 0.2
  done
  log "$kind x$size up: $ENDPOINTS"
}

# measure NAME REP COMMAND...: runs a load generator with -w json output and
# keeps its result as NAME.REP.json.
measure() {
  local name=$1 rep=$2
  shift 2
  log "$name #$rep: $*"
  "$@" >"$RESULTS/$name.$rep.json"
  jq -r '"#   \(.requests_per_second | floor) req/s, p99 \(.latency_seconds.percentiles.p99 * 1000 | . * 100 | round / 100) ms, failed \(.failed)"' \
    "$RESULTS/$name.$rep.json" >&2
}

PUT=(--clients "$CLIENTS" --conns "$CONNS" --total "$TOTAL" put --val-size "$VAL_SIZE" --sequential-keys --key-space-size "$TOTAL")
RANGE=(--clients "$CLIENTS" --conns "$CONNS" --total "$TOTAL" range --consistency l bench-range-key)
VALUE=$(head -c "$VAL_SIZE" /dev/zero | tr '\0' v)

# on KIND SIZE NAME REP LOADER ARGS...: measures one workload on a fresh
# cluster, so that no measurement inherits the data of another; LOADER is
# cairn or etcdclient. The range workloads read a key written beforehand.
on() {
  local kind=$1 size=$2 name=$3 rep=$4 loader=$5
  shift 5
  start_cluster "$kind" "$size"
  if [[ $name == *range* ]]; then "$CAIRN" --endpoints "$ENDPOINTS" put bench-range-key "$VALUE" >/dev/null; fi
  if [[ $loader == cairn ]]; then
    measure "$name" "$rep" "$CAIRN" -w json --endpoints "$ENDPOINTS" bench "$@"
  else
    measure "$name" "$rep" "$ETCDCLIENT" -w json --endpoints "$ENDPOINTS" "$@"
  fi
  stop_servers
}

# The measurements of one repetition; even repetitions run them in the
# reverse order, so that a drift of the machine's load favours no side.
MEASUREMENTS=(
  "etcd 1 etcd1-put-etcdclient etcdclient PUT"
  "etcd 1 etcd1-put cairn PUT"
  "cairn 1 cairn1-put cairn PUT"
  "etcd 1 etcd1-range-etcdclient etcdclient RANGE"
  "etcd 1 etcd1-range cairn RANGE"
  "cairn 1 cairn1-range cairn RANGE"
  "etcd 3 etcd3-put-etcdclient etcdclient PUT"
  "etcd 3 etcd3-put cairn PUT"
  "cairn 3 cairn3-put cairn PUT"
)
for ((rep = 1; rep <= REPEAT; rep++)); do
  order=("${MEASUREMENTS[@]}")
  if ((rep % 2 == 0)); then
    order=()
    for ((i = ${#MEASUREMENTS[@]} - 1; i >= 0; i--)); do order+=("${MEASUREMENTS[i]}"); done
  fi
  for m in "${order[@]}"; do
    read -r kind size name loader workload <<<"$m"
    if [[ $workload == PUT ]]; then args=("${PUT[@]}"); else args=("${RANGE[@]}"); fi
    on "$kind" "$size" "$name" "$rep" "$loader" "${args[@]}"
  done
done

fi

# median NAME FIELD: the median over the repetitions of a jq path.
median() {
  jq -s "[.[] | $2] | sort | .[(length - 1) / 2 | floor]" "$RESULTS/$1".*.json
}
# paired A B FIELD: the median over the repetitions of A's FIELD divided by
# B's in the same repetition (measured minutes apart, under the same
# background load).
paired() {
  local rep ratios=()
  for ((rep = 1; rep <= REPEAT; rep++)); do
    ratios+=("$(jq -n --slurpfile a "$RESULTS/$1.$rep.json" --slurpfile b "$RESULTS/$2.$rep.json" "\$a[0]$3 / \$b[0]$3")")
  done
  printf '%s\n' "${ratios[@]}" | sort -g | awk '{ v[NR] = $1 } END { printf "%.2f", v[int((NR + 1) / 2)] }'
}
fmt_rate() { printf '%.0f' "$1"; }
fmt_ms() { awk -v s="$1" 'BEGIN { printf "%.2f", s * 1000 }'; }
figures() {
  echo "$(fmt_rate "$(median "$1" .requests_per_second)")/s, p99 $(fmt_ms "$(median "$1" .latency_seconds.percentiles.p99)") ms"
}

echo
echo "Date: $(date -u -r "$RESULTS" '+%Y-%m-%d %H:%M UTC'); $(nproc) cores; $REPEAT repetitions;"
echo "$CLIENTS clients over $CONNS connections, $TOTAL requests, ${VAL_SIZE}-byte values."
echo "Figures: medians over the repetitions. Ratios: medians of the ratios within each repetition."
echo
echo "| workload | etcd 3.7.3, etcd's client | etcd 3.7.3, cairn bench | cairn serve, cairn bench | cairn/etcd throughput | cairn/etcd p99 | cairn bench/etcd's client on etcd, throughput |"
echo "|---|---|---|---|---|---|---|"
row() {
  local title=$1 etcd=$2 cairn=$3 reference=$4
  echo "| $title | $(figures "$reference") | $(figures "$etcd") | $(figures "$cairn") |" \
    "$(paired "$cairn" "$etcd" .requests_per_second) | $(paired "$cairn" "$etcd" .latency_seconds.percentiles.p99) |" \
    "$(paired "$etcd" "$reference" .requests_per_second) |"
}
row "put, 1 member" etcd1-put cairn1-put etcd1-put-etcdclient
row "linearizable range, 1 member" etcd1-range cairn1-range etcd1-range-etcdclient
row "put, 3 members" etcd3-put cairn3-put etcd3-put-etcdclient

echo
echo "Every run (requests/s, p99 ms):"
for f in "$RESULTS"/*.json; do
  printf '  %-32s %8s %8s\n' "$(basename "$f" .json)" "$(jq '.requests_per_second | floor' "$f")" \
    "$(fmt_ms "$(jq '.latency_seconds.percentiles.p99' "$f")")"
done
