#!/bin/bash
# Installs the harness files of _harness/ into $WS/tests (the v3.7.3 tests
# module that scripts/etcd-e2e/setup.sh prepared) and builds the two
# robustness test binaries:
#   $WS/robustness.test       measurement (etcd's robustness package + TestRobustnessNoGofail;
#                             TestRevalidateReports, analysis of saved reports, skips unless asked)
#   $WS/robustness-diag.test  -tags robustdiag: health-check fallback (NOT a measurement)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
WS="${E2E_WS:-/tmp/etcd-robust}"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
R="$WS/tests/robustness"
[ -d "$R" ] || { echo "no $R: run scripts/etcd-e2e/setup.sh first" >&2; exit 1; }
H="$HERE/_harness"
cp "$H/zz_nogofail_test.go" "$H/zz_revalidate_test.go" "$R/"
cp "$H/zz_diag_health_on.go" "$H/zz_diag_health_off.go" "$R/failpoint/"
# one call in failpoint.verifyClusterHealth, inert without -tags robustdiag
python3 - "$R/failpoint/failpoint.go" <<'PY'
import sys
p = sys.argv[1]; s = open(p).read()
mark = "diagHealthFallback("
if mark not in s:
    old = "\t\tresp, err := cli.Check(ctx, &healthpb.HealthCheckRequest{})\n"
    new = old + ("\t\tif handled, derr := diagHealthFallback(ctx, clusterClient, clus.Procs[i].EndpointsGRPC()[0], clus.Procs[i].Config().Name, err); handled {\n"
                 "\t\t\tif derr != nil {\n\t\t\t\treturn derr\n\t\t\t}\n\t\t\tcontinue\n\t\t}\n")
    assert s.count(old) == 1, "failpoint.go: health check call not found"
    s = s.replace(old, new); open(p, "w").write(s)
PY
cd "$WS/tests"
nice -n 10 go test -c -o "$WS/robustness.test" ./robustness
nice -n 10 go test -c -tags robustdiag -o "$WS/robustness-diag.test" ./robustness
echo "built: $WS/robustness.test $WS/robustness-diag.test"
