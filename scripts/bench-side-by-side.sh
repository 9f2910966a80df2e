#!/usr/bin/env bash
# Measures real etcd 3.7.3 and `cairn serve` side by side on this machine, in
# one run, and checks that cairn's client is not the bottleneck:
#
#   servers  `cairn bench` against a single member of each (puts, then
#            linearizable single-key ranges) and a 3-member cluster of each on
#            loopback (puts); every measurement on a fresh cluster, the order
#            reversed every other repetition; with the CPU time the members
#            used (from /proc), which the machine's load disturbs less than
#            throughput;
#   clients  on one fresh etcd 3.7.3, after a warm-up load that is not
#            measured, etcd's own Go client (scripts/etcd-client-bench) and
#            `cairn bench` in turn, A B A in odd repetitions and B A B in even
#            ones, for puts and ranges on a single member and puts on three.
#
# Every server runs in a temporary directory of its own, on free ports of
# 127.0.0.1, started and stopped by this script. The output ends with Markdown
# tables for BENCHMARKS.md: medians over the repetitions, and medians of the
# ratios taken within each repetition (which a drift of the machine's load
# affects least).
#
#   bash scripts/bench-side-by-side.sh            # REPEAT=5 TOTAL=20000 CLIENTS=100 CONNS=10 VAL_SIZE=256
#   KEEP=1 bash scripts/bench-side-by-side.sh     # keep the work directory (logs, JSON results)
#   bash scripts/bench-side-by-side.sh --summarize DIR/results   # the tables again, from kept results
#   MEMBER_FLAGS="--quota-backend-bytes 8589934592" bash scripts/bench-...   # extra flags for every member
set -euo pipefail
cd "$(dirname "$0")/.."

REPEAT=${REPEAT:-5}
TOTAL=${TOTAL:-20000}
CLIENTS=${CLIENTS:-100}
CONNS=${CONNS:-10}
VAL_SIZE=${VAL_SIZE:-256}
PUT=(--clients "$CLIENTS" --conns "$CONNS" --total "$TOTAL" put --val-size "$VAL_SIZE" --sequential-keys --key-space-size "$TOTAL")
RANGE=(--clients "$CLIENTS" --conns "$CONNS" --total "$TOTAL" range --consistency l bench-range-key)

log() { echo "# $*" >&2; }

# ---- servers -----------------------------------------------------------------

PIDS=()
CLUSTER_DIR=""
CLUSTER_KIND=""
CLUSTER_PORTS=()
CLUSTER_INITIAL=""

# start_cluster KIND SIZE: starts SIZE members of KIND (etcd or cairn) and
# sets ENDPOINTS to their client addresses, comma-separated.
start_cluster() {
  local kind=$1 size=$2 i
  CLUSTER_KIND=$kind
  CLUSTER_DIR=$(mktemp -d "$WORK/$kind-$size.XXXX")
  read -r -a CLUSTER_PORTS <<<"$("$ETCDCLIENT" free-ports $((2 * size)))"
  CLUSTER_INITIAL=""
  for ((i = 0; i < size; i++)); do
    CLUSTER_INITIAL+="${CLUSTER_INITIAL:+,}m$i=http://127.0.0.1:${CLUSTER_PORTS[2 * i + 1]}"
  done
  ENDPOINTS=""
  for ((i = 0; i < size; i++)); do
    launch_member "$i"
    ENDPOINTS+="${ENDPOINTS:+,}127.0.0.1:${CLUSTER_PORTS[2 * i]}"
  done
  local deadline=$((SECONDS + 30))
  until "$CAIRN" --endpoints "$ENDPOINTS" endpoint health >/dev/null 2>&1; do
    if ((SECONDS > deadline)); then
      echo "$kind cluster of $size did not become healthy; logs in $CLUSTER_DIR" >&2
      tail -n 20 "$CLUSTER_DIR"/*.log >&2
      exit 1
    fi
    sleep 0.2
  done
  log "$kind x$size up: $ENDPOINTS"
}

# launch_member I: starts member I of the cluster of start_cluster (again,
# after a stop: on its data directory, which holds the member) as PIDS[I].
launch_member() {
  local i=$1 client=127.0.0.1:${CLUSTER_PORTS[2 * $1]} peer=127.0.0.1:${CLUSTER_PORTS[2 * $1 + 1]} cmd extra
  if [[ $CLUSTER_KIND == etcd ]]; then cmd=("$ETCD_BIN/etcd"); else cmd=("$CAIRN" serve); fi
  read -r -a extra <<<"${MEMBER_FLAGS:-}" # the same extra member flags for both servers
  "${cmd[@]}" --name "m$i" --data-dir "$CLUSTER_DIR/m$i" \
    --listen-client-urls "http://$client" --advertise-client-urls "http://$client" \
    --listen-peer-urls "http://$peer" --initial-advertise-peer-urls "http://$peer" \
    --initial-cluster "$CLUSTER_INITIAL" --initial-cluster-token "bench-$CLUSTER_KIND-$((${#CLUSTER_PORTS[@]} / 2))" \
    --initial-cluster-state new "${extra[@]}" >>"$CLUSTER_DIR/m$i.log" 2>&1 &
  PIDS[i]=$!
}

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

# ---- measurements ------------------------------------------------------------

# measure NAME REP LOADER WORKLOAD: runs a load generator (cairn or
# etcdclient) on ENDPOINTS with -w json and keeps its result as NAME.REP.json.
measure() {
  local name=$1 rep=$2 loader=$3 workload=$4 args cmd
  if [[ $workload == put ]]; then args=("${PUT[@]}"); else args=("${RANGE[@]}"); fi
  if [[ $loader == cairn ]]; then
    cmd=("$CAIRN" -w json --endpoints "$ENDPOINTS" bench "${args[@]}")
  else
    cmd=("$ETCDCLIENT" -w json --endpoints "$ENDPOINTS" "${args[@]}")
  fi
  log "$name #$rep: ${cmd[*]}"
  "${cmd[@]}" >"$RESULTS/$name.$rep.json"
  jq -r '"#   \(.requests_per_second | floor) req/s, p99 \(.latency_seconds.percentiles.p99 * 100000 | round / 100) ms, failed \(.failed)"' \
    "$RESULTS/$name.$rep.json" >&2
}

# cpu_ticks: the CPU time (user and system, in clock ticks) the running
# members have used so far, all together.
cpu_ticks() {
  local pid total=0
  for pid in "${PIDS[@]}"; do
    total=$((total + $(awk '{ print $14 + $15 }' "/proc/$pid/stat")))
  done
  echo "$total"
}

# prepare WORKLOAD: writes the key the range workload reads.
prepare() {
  if [[ $1 == range ]]; then
    "$CAIRN" --endpoints "$ENDPOINTS" put bench-range-key "$(head -c "$VAL_SIZE" /dev/zero | tr '\0' v)" >/dev/null
  fi
}

# The server comparisons of one repetition: KIND SIZE WORKLOAD.
SERVER_RUNS=("etcd 1 put" "cairn 1 put" "etcd 1 range" "cairn 1 range" "etcd 3 put" "cairn 3 put")
# The client comparisons: SIZE WORKLOAD, each on a fresh etcd.
CLIENT_RUNS=("1 put" "1 range" "3 put")

# setup_run finds etcd, makes the work directory (removed at exit unless
# KEEP is set) and builds cairn and the etcd-client load generator.
setup_run() {
  ETCD_BIN=${ETCD_BIN:-$(bash scripts/reference-etcd.sh)}
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/cairn-bench.XXXXXX")
  RESULTS=$WORK/results
  mkdir -p "$WORK/bin" "$RESULTS"
  trap 'stop_servers; if [[ -n ${KEEP:-} ]]; then echo "work directory kept: $WORK" >&2; else rm -rf "$WORK"; fi' EXIT
  trap 'exit 130' INT TERM
  log "building cairn and the etcd-client load generator"
  CAIRN=$WORK/bin/cairn
  ETCDCLIENT=$WORK/bin/etcd-client-bench
  go build -o "$CAIRN" ./cmd/cairn
  go build -o "$ETCDCLIENT" ./scripts/etcd-client-bench
}

run_all() {
  setup_run
  local rep run order i kind size workload
  cut -d' ' -f1-3 /proc/loadavg >"$RESULTS/loadavg-before" 2>/dev/null || true
  for ((rep = 1; rep <= REPEAT; rep++)); do
    order=("${SERVER_RUNS[@]}")
    if ((rep % 2 == 0)); then
      order=()
      for ((i = ${#SERVER_RUNS[@]} - 1; i >= 0; i--)); do order+=("${SERVER_RUNS[i]}"); done
    fi
    for run in "${order[@]}"; do
      read -r kind size workload <<<"$run"
      start_cluster "$kind" "$size"
      prepare "$workload"
      local ticks=$(cpu_ticks)
      measure "$kind$size-$workload" "$rep" cairn "$workload"
      echo $(($(cpu_ticks) - ticks)) >"$RESULTS/$kind$size-$workload.$rep.cpu"
      stop_servers
    done
    local outer=etcdclient inner=cairn
    if ((rep % 2 == 0)); then outer=cairn inner=etcdclient; fi
    for run in "${CLIENT_RUNS[@]}"; do
      read -r size workload <<<"$run"
      start_cluster etcd "$size"
      prepare "$workload"
      measure "warm-up-etcd$size-$workload" "$rep" etcdclient "$workload"
      measure "clients-etcd$size-$workload-$outer-a" "$rep" "$outer" "$workload"
      measure "clients-etcd$size-$workload-$inner-a" "$rep" "$inner" "$workload"
      measure "clients-etcd$size-$workload-$outer-b" "$rep" "$outer" "$workload"
      stop_servers
    done
  done
  cut -d' ' -f1-3 /proc/loadavg >"$RESULTS/loadavg-after" 2>/dev/null || true
}

# ---- summary -----------------------------------------------------------------

# median NAME PATH: the median of a jq path over the results of NAME (a name
# or a glob) in every repetition.
median() {
  jq -s "[.[] | $2] | sort | .[(length - 1) / 2 | floor]" $RESULTS/$1.*.json
}
# paired A B PATH: the median over the repetitions of A's value divided by
# B's in the same repetition. A and B name results NAME.REP.json, or NAME-*
# (the mean of NAME-a, NAME-b... of the repetition).
paired() {
  local rep ratios=()
  for ((rep = 1; rep <= REPEAT; rep++)); do
    ratios+=("$(jq -n --argjson a "$(mean_of "$1" "$rep" "$3")" --argjson b "$(mean_of "$2" "$rep" "$3")" '$a / $b')")
  done
  printf '%s\n' "${ratios[@]}" | sort -g | awk '{ v[NR] = $1 } END { printf "%.2f (%.2f–%.2f)", v[int((NR + 1) / 2)], v[1], v[NR] }'
}
# mean_of NAME REP PATH: the mean of PATH over the results of NAME (a name or
# a glob) in repetition REP.
mean_of() {
  jq -s "[.[] | $3] | add / length" $RESULTS/$1.$2.json
}
# cpu_per_request NAME: the members' CPU time per request, in µs, the median
# over the repetitions.
cpu_per_request() {
  cat $RESULTS/$1.*.cpu | sort -g | awk -v hz="$(getconf CLK_TCK)" -v n="$TOTAL" \
    '{ v[NR] = $1 } END { printf "%.0f", v[int((NR + 1) / 2)] / hz / n * 1e6 }'
}
# med NAME EXT: the median over the repetitions of the number in NAME.*.EXT.
med() { cat "$RESULTS/$1".*."$2" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# ratio A B EXT: the median (lowest–highest) over the repetitions of the
# number in A.REP.EXT divided by the one in B.REP.EXT.
ratio() {
  local rep
  for ((rep = 1; rep <= REPEAT; rep++)); do
    echo "$(cat "$RESULTS/$1.$rep.$3") $(cat "$RESULTS/$2.$rep.$3")"
  done | awk '{ printf "%.3f\n", ($2 > 0 ? $1 / $2 : 0) }' | sort -g |
    awk '{ v[NR] = $1 } END { printf "%.2f (%.2f–%.2f)", v[int((NR + 1) / 2)], v[1], v[NR] }'
}
fmt_ms() { awk -v s="$1" 'BEGIN { printf "%.2f", s * 1000 }'; }
figures() {
  printf '%.0f/s, p99 %s ms' "$(median "$1" .requests_per_second)" "$(fmt_ms "$(median "$1" .latency_seconds.percentiles.p99)")"
}

summarize() {
  local rps=.requests_per_second p99=.latency_seconds.percentiles.p99 first
  first=$(ls "$RESULTS"/etcd1-put.*.json | head -n 1)
  CLIENTS=$(jq .parameters.clients "$first") CONNS=$(jq .parameters.conns "$first") TOTAL=$(jq .parameters.total "$first")
  VAL_SIZE=$(jq '.parameters["val-size"]' "$first")
  echo
  echo "Measured $(date -u -r "$RESULTS" '+%Y-%m-%d %H:%M UTC') on $(nproc) cores; $REPEAT repetitions;"
  echo "$CLIENTS clients over $CONNS connections, $TOTAL requests per measurement, ${VAL_SIZE}-byte values."
  if [[ -f $RESULTS/loadavg-before && -f $RESULTS/loadavg-after ]]; then
    echo "Load average (1, 5, 15 min) before: $(cat "$RESULTS/loadavg-before"); after: $(cat "$RESULTS/loadavg-after")."
  fi
  echo "Figures: medians over the repetitions. Ratios: median (lowest–highest) of the ratios within each repetition."
  echo
  local cpu_head="" cpu_rule="" title workload
  if compgen -G "$RESULTS/*.cpu" >/dev/null; then
    cpu_head=" servers' CPU per request, etcd / cairn | cairn/etcd CPU per request |" cpu_rule="---|---|"
  fi
  echo "| workload (cairn bench) | etcd 3.7.3 | cairn serve | cairn/etcd throughput | cairn/etcd p99 latency |$cpu_head"
  echo "|---|---|---|---|---|$cpu_rule"
  for workload in "1-put:put, 1 member" "1-range:linearizable range, 1 member" "3-put:put, 3 members"; do
    title=${workload#*:} workload=${workload%%:*}
    local cpu=""
    if [[ -n $cpu_head ]]; then
      cpu=" $(cpu_per_request "etcd$workload") µs / $(cpu_per_request "cairn$workload") µs | $(ratio "cairn$workload" "etcd$workload" cpu) |"
    fi
    echo "| $title | $(figures "etcd$workload") | $(figures "cairn$workload") |" \
      "$(paired "cairn$workload" "etcd$workload" $rps) | $(paired "cairn$workload" "etcd$workload" $p99) |$cpu"
  done
  echo
  echo "| workload on etcd 3.7.3 | etcd's client | cairn bench | cairn bench / etcd's client, throughput | p99 latency |"
  echo "|---|---|---|---|---|"
  for workload in "1-put:put, 1 member" "1-range:linearizable range, 1 member" "3-put:put, 3 members"; do
    title=${workload#*:} workload=clients-etcd${workload%%:*}
    echo "| $title | $(figures "$workload-etcdclient-*") | $(figures "$workload-cairn-*") |" \
      "$(paired "$workload-cairn-*" "$workload-etcdclient-*" $rps) | $(paired "$workload-cairn-*" "$workload-etcdclient-*" $p99) |"
  done
  echo
  echo "Every measurement (requests/s, p99 ms):"
  local f
  for f in "$RESULTS"/*.json; do
    printf '  %-44s %8s %8s\n' "$(basename "$f" .json)" "$(jq '.requests_per_second | floor' "$f")" \
      "$(fmt_ms "$(jq "$p99" "$f")")"
  done
}

command -v jq >/dev/null || { echo "jq is needed to summarise the results" >&2; exit 1; }
# Sourced (by scripts/bench-scale.sh), the script only defines its functions.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  if [[ ${1:-} == --summarize ]]; then
    RESULTS=${2:?--summarize needs the results directory of a kept run}
    REPEAT=$(find "$RESULTS" -name 'etcd1-put.*.json' | wc -l)
  else
    run_all
  fi
  summarize
fi
