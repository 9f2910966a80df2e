#!/usr/bin/env bash
# Power losses at random points under load (e2e/diskfaults TestPowerLoss):
# three members, each data dir on its own fault-injecting FUSE mount; in each
# round one, two or all three lose power (unsynced writes dropped, or a
# prefix kept with the last write cut at a sector boundary), restart, and
# must hold every acknowledged put with agreeing HashKV. Needs root and
# /dev/fuse.
#
#   ROUNDS=200 SERVER=cairn SEED=0 scripts/powerloss.sh
#
# SERVER=etcd runs etcd 3.7.3 (scripts/reference-etcd.sh, or
# CAIRN_REFERENCE_ETCD_DIR) as the control. SEED=0 picks a random seed,
# printed with the summary line.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-200} SERVER=${SERVER:-cairn} SEED=${SEED:-0}
timeout=$((ROUNDS * 10 + 300))
go test ./e2e/diskfaults/ -run '^TestPowerLoss$' -count=1 -v -timeout "${timeout}s" \
  -powerloss.rounds="$ROUNDS" -powerloss.server="$SERVER" -powerloss.seed="$SEED" |
  grep --line-buffered -E '^(---|ok|FAIL|PASS)|powerloss_test.go:[0-9]+: ([0-9]+ of|cairn|etcd|failed|.*kept in)'
