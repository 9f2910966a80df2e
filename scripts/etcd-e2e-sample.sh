#!/usr/bin/env bash
# Runs a sample of etcd 3.7.3's own e2e suite with cairn as the etcd binary
# (a link named etcd: cairn started as etcd is the server), with the real
# etcdctl and etcdutl, through scripts/etcd-e2e. Fails if any test
# of the list does not pass. LIST (default scripts/etcd-e2e-sample.txt)
# and PKG (common or e2e) choose the tests.
set -uo pipefail
cd "$(dirname "$0")/.."
LIST=${LIST:-scripts/etcd-e2e-sample.txt}
PKG=${PKG:-common}
TOOLS=scripts/etcd-e2e
export E2E_WS=${E2E_WS:-${TMPDIR:-/tmp}/etcd-e2e}
mkdir -p "$E2E_WS"
go build -o "$E2E_WS/cairn" ./cmd/cairn || exit 1
E2E_SHIM=symlink CAIRN_BIN="$E2E_WS/cairn" bash "$TOOLS/setup.sh" >"$E2E_WS/setup.log" 2>&1 || { tail -20 "$E2E_WS/setup.log"; exit 1; }
rm -f "$E2E_WS/results/cairn-sample.tsv"
RESULT_SUFFIX=-sample bash "$TOOLS/run.sh" cairn "$PKG" "$LIST"
results="$E2E_WS/results/cairn-sample.tsv"
passed=$(awk -F'\t' '$3 == "PASS"' "$results" | wc -l)
failed=$(awk -F'\t' '$3 != "PASS"' "$results" | wc -l)
awk -F'\t' '$3 != "PASS" {print "etcd e2e: " $2 " " $3 " (log: '"$E2E_WS"'/results/cairn-sample/'"$PKG"'/" $2 ".log)"}' "$results"
echo "etcd-e2e: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
