#!/bin/bash
# Prepares etcd v3.7.3's e2e suite (tests/e2e and tests/common -tags e2e)
# under $E2E_WS (default ${TMPDIR:-/tmp}/etcd-e2e), and two bin dirs:
#   $E2E_WS/bin-etcd : real etcd/etcdctl/etcdutl 3.7.3
#   $E2E_WS/bin-cairn: etcd = a link to cairn (E2E_SHIM=script: the shim -> `cairn serve`), real etcdctl/etcdutl
# Env: CAIRN_BIN (cairn binary; default: build ./cmd/cairn of this repository),
# ETCD_REF_DIR (reference etcd 3.7.3 tools; default: scripts/reference-etcd.sh).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
WS="${E2E_WS:-${TMPDIR:-/tmp}/etcd-e2e}"
# cairn: CAIRN_BIN, else built from this repository.
if [ -z "${CAIRN_BIN:-}" ]; then
  mkdir -p "$WS"; WS="$(cd "$WS" && pwd)"
  (cd "$HERE/../.." && go build -o "$WS/cairn" ./cmd/cairn); CAIRN_BIN="$WS/cairn"
fi
CAIRN_BIN="$(cd "$(dirname "$CAIRN_BIN")" && pwd)/$(basename "$CAIRN_BIN")"
ETCD_REF_DIR="${ETCD_REF_DIR:-$(bash "$HERE/../reference-etcd.sh")}"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
mkdir -p "$WS"; cd "$WS"

# 1. tests module v3.7.3 from the Go module proxy. Its go.mod replaces the
#    etcd modules with ../<dir> (monorepo layout); drop those so the v3.7.3
#    releases from the proxy are used. go.etcd.io/etcd/cache/v3@v3.7.3 is not
#    on the proxy and only tests/integration imports it: replace with a stub.
if [ ! -f tests/.prepared ]; then
  dir=$(go mod download -json go.etcd.io/etcd/tests/v3@v3.7.3 | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  rm -rf tests stub-cache; cp -r "$dir" tests; chmod -R u+w tests
  mkdir -p stub-cache; printf 'module go.etcd.io/etcd/cache/v3\n\ngo 1.26.0\n' > stub-cache/go.mod
  (cd tests && go mod edit -toolchain=none \
     -dropreplace=go.etcd.io/etcd/api/v3 -dropreplace=go.etcd.io/etcd/client/pkg/v3 \
     -dropreplace=go.etcd.io/etcd/client/v3 -dropreplace=go.etcd.io/etcd/etcdctl/v3 \
     -dropreplace=go.etcd.io/etcd/etcdutl/v3 -dropreplace=go.etcd.io/etcd/pkg/v3 \
     -dropreplace=go.etcd.io/etcd/server/v3 \
     -replace=go.etcd.io/etcd/cache/v3=../stub-cache)
  # 2. Harness adaptation (opt-in, inert unless E2E_EXTRA_READY_LINE is set):
  #    the framework waits for etcd's log line "ready to serve client
  #    requests"; cairn never prints it. With E2E_EXTRA_READY_LINE set, the
  #    framework also accepts that substring as the readiness line.
  f=tests/framework/e2e/etcd_process.go
  grep -q E2E_EXTRA_READY_LINE "$f" || cat >> "$f" <<'GO'

// harness adaptation (cairn e2e measurement): extra readiness line.
func init() {
	if v := os.Getenv("E2E_EXTRA_READY_LINE"); v != "" {
		EtcdServerReadyLines = append(EtcdServerReadyLines, v)
	}
}
GO
  # 3. Harness adaptation (inert unless E2E_BASE_PORT is set): the framework's
  #    fixed base port 20000 becomes overridable, so etcd and cairn runs can
  #    use separate port ranges (and stay out of 20000-32000).
  sed -i 's/^const EtcdProcessBasePort = 20000$/var EtcdProcessBasePort = basePortFromEnv()/' tests/framework/e2e/cluster.go
  grep -q basePortFromEnv tests/framework/e2e/cluster.go
  grep -q 'func basePortFromEnv' tests/framework/e2e/etcd_process.go || cat >> tests/framework/e2e/etcd_process.go <<'GO'

// harness adaptation (cairn e2e measurement): base port from E2E_BASE_PORT.
func basePortFromEnv() int {
	if v := os.Getenv("E2E_BASE_PORT"); v != "" {
		var p int
		if _, err := fmt.Sscanf(v, "%d", &p); err == nil && p > 0 {
			return p
		}
	}
	return 20000
}
GO
  touch tests/.prepared
fi

# TestEtcdExampleConfig reads ../../etcd.conf.yml.sample from tests/e2e: the
# root of etcd's source tree, which the tests module does not hold. The copy
# beside this script is etcd's own file (release-3.7, the same as in v3.7.1).
cp "$HERE/etcd.conf.yml.sample" "$WS/etcd.conf.yml.sample"

# 3. test binaries
(cd tests && nice -n 10 go test -c -o "$WS/e2e.test" ./e2e)
(cd tests && nice -n 10 go test -c -tags e2e -o "$WS/common.test" ./common)

# 4. bin dirs
mkdir -p bin-etcd bin-cairn
for b in etcd etcdctl etcdutl; do ln -sfn "$ETCD_REF_DIR/$b" "bin-etcd/$b"; done
for b in etcdctl etcdutl; do ln -sfn "$ETCD_REF_DIR/$b" "bin-cairn/$b"; done
rm -f bin-cairn/etcd
if [ "${E2E_SHIM:-symlink}" = symlink ]; then
  # cairn started under the name etcd must behave as etcd's binary (etcd
  # --version, etcd grpc-proxy start, etcd gateway start), as where an
  # installation's etcd is replaced by a link to cairn
  ln -s "$CAIRN_BIN" bin-cairn/etcd
else
  sed "s#@CAIRN@#$CAIRN_BIN#" "$HERE/shim/etcd" > bin-cairn/etcd; chmod +x bin-cairn/etcd
fi
# diagnostic bin dir (NOT drop-in): drops the server flags `cairn serve`
# rejects, logging each drop, to see what fails behind the flag errors.
mkdir -p bin-cairn-diag results
for b in etcdctl etcdutl; do ln -sfn "$ETCD_REF_DIR/$b" "bin-cairn-diag/$b"; done
# which of etcd 3.7.3's server flags `cairn serve` accepts (probed one by one:
# "--F=1 --zz-probe-unknown" fails on --F itself only if cairn lacks it)
"$ETCD_REF_DIR/etcd" --help 2>&1 | grep -oE '^ +--[a-z0-9-]+' | sed 's/ *--//' | sort -u > results/etcd-server-flags.txt
: > bin-cairn-diag/cairn-serve-flags.txt; : > results/cairn-rejected-etcd-flags.txt
for f in $(cat results/etcd-server-flags.txt) config-file help; do
  o=$("$CAIRN_BIN" serve --$f=1 --zz-probe-unknown 2>&1 | head -3 || true)
  if grep -q -- "unknown flag: --$f\b" <<<"$o"; then
    echo "$f" >> results/cairn-rejected-etcd-flags.txt
  else echo "$f" >> bin-cairn-diag/cairn-serve-flags.txt; fi
done
sed -e "s#@CAIRN@#$CAIRN_BIN#" -e "s#@FLAGS@#$WS/bin-cairn-diag/cairn-serve-flags.txt#" \
    -e "s#@LOG@#$WS/results/diag-dropped-flags.log#" "$HERE/shim/etcd-diag" > bin-cairn-diag/etcd
chmod +x bin-cairn-diag/etcd
echo "ready: $WS/{e2e.test,common.test,bin-etcd,bin-cairn}"
