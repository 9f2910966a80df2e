#!/bin/bash
# Builds the reference etcd v3.7.3 binaries (etcd, etcdctl, etcdutl) from the Go module
# proxy into a cache folder, once, and prints that folder. Black-box use only: the
# tests (internal/etcdref) and the scripts compare cairn with these binaries.
#   BIN=$(bash scripts/reference-etcd.sh) && "$BIN/etcd" --version
# Env: ETCD_REF_VERSION (v3.7.3: another release, e.g. v3.6.16), ETCD_REF_DIR (the
# folder; default ${XDG_CACHE_HOME:-~/.cache}/etcd-reference/VERSION).
set -euo pipefail
VERSION=${ETCD_REF_VERSION:-v3.7.3}
DIR=${ETCD_REF_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/etcd-reference/$VERSION}
if [[ -x $DIR/etcd && -x $DIR/etcdctl && -x $DIR/etcdutl ]]; then echo "$DIR"; exit 0; fi
mkdir -p "$DIR"
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
cat >go.mod <<MOD
module reference

go 1.26
MOD
cat >tools.go <<'GO'
//go:build tools

package reference

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/etcdutl/v3"
	_ "go.etcd.io/etcd/server/v3"
)
GO
{
  go get "go.etcd.io/etcd/server/v3@$VERSION" "go.etcd.io/etcd/etcdctl/v3@$VERSION" "go.etcd.io/etcd/etcdutl/v3@$VERSION"
  go build -o "$DIR/etcd" go.etcd.io/etcd/server/v3
  go build -o "$DIR/etcdctl" go.etcd.io/etcd/etcdctl/v3
  go build -o "$DIR/etcdutl" go.etcd.io/etcd/etcdutl/v3
} >&2
echo "$DIR"
