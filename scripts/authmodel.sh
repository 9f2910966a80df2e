#!/usr/bin/env bash
# Runs the randomized authorization model test (e2e/authmodel) over many
# seeds, against cairn and then against etcd 3.7.3 (the control), the same
# seeds for both, one server at a time, and prints each server's totals and
# its disagreements by class.
#
#   SEEDS=20 DURATION=20s SERVER=both SEED=0 scripts/authmodel.sh
#
# SEED=0 picks a random first seed (printed); seed i is SEED+i. CAIRN_BIN
# tests a given build; CAIRN_REFERENCE_ETCD_DIR names a folder with etcd
# 3.7.3. The go test logs are kept in $OUT_DIR (default: a new temporary
# folder); a disagreement's report there carries the command that replays it.
set -uo pipefail
cd "$(dirname "$0")/.."
SEEDS=${SEEDS:-20}
DURATION=${DURATION:-20s}
SERVER=${SERVER:-both}
SEED=${SEED:-0}
OUT_DIR=${OUT_DIR:-$(mktemp -d -t authmodel-XXXXXX)}
mkdir -p "$OUT_DIR"
if [ "$SEED" = 0 ]; then
  SEED=$(( (RANDOM << 15 | RANDOM) + 1 ))
fi
case "$SERVER" in
  both) servers=(cairn etcd) ;;
  cairn | etcd) servers=("$SERVER") ;;
  *) echo "SERVER=$SERVER: want cairn, etcd or both" >&2; exit 2 ;;
esac
echo "seeds $SEED..$((SEED + SEEDS - 1)), $DURATION each, logs in $OUT_DIR"
status=0
for s in "${servers[@]}"; do
  log="$OUT_DIR/$s.log"
  go test -count=1 -timeout 0 -run TestAuthModel ./e2e/authmodel/ -v \
    -server "$s" -seed "$SEED" -seeds "$SEEDS" -duration "$DURATION" >"$log" 2>&1
  rc=$?
  [ "$rc" = 0 ] || status=$rc
  echo "== $s (go test exit $rc)"
  # The totals line and its classes, as the test prints them at the end.
  sed -n "/^    authmodel_test.go:[0-9]*: $s, $SEEDS seeds from/,/^---\|^=== /p" "$log" | grep -v '^---\|^===' | sed 's/^    authmodel_test.go:[0-9]*: //'
done
exit $status
