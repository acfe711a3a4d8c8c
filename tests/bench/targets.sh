#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/run.py with three targets: preon, preon again given as a start command and URL (as a Quarkus or Go
# service would be), and a target that cannot start. The third is reported with its last log lines; the
# others still run. Usage: targets.sh PYTHON OUTDIR
set -euo pipefail
PY=${1:?python}
OUT=${2:?outdir}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ext="name=external,start='env PREON_SERVER_LISTEN=127.0.0.1 PREON_SERVER_PORT=$port PREON_DATABASE_URL= $REPO/build/preon',url=http://127.0.0.1:$port"
"$PY" "$REPO/bench/run.py" --quick --scenario hello,startup --out "$OUT" --target preon --target "$ext" \
    --target "name=broken,start='echo boom; exit 3',url=http://127.0.0.1:1"
"$PY" - "$OUT" <<'PYCHECK'
import json, sys
r = json.load(open(sys.argv[1] + "/results.json"))
ext = r["scenarios"]["hello"]["external"]
assert ext["rps"] > 1000, ext
assert r["scenarios"]["startup"]["external"]["hello_ms"] > 0
assert r["targets"] == ["preon", "external", "broken"]
PYCHECK
"$PY" "$REPO/tests/bench/check_run.py" "$OUT" hello startup --expect-error broken
