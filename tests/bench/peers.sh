#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/run.py's wiring of --target go and --target quarkus (bench/peers/<name>/run.sh and build.sh), with stand-ins
# in a temp folder (PREON_BENCH_PEERS) that serve /hello and /fruits with tests/bench/ramp_server.py and record the
# environment they were started with: the published scenarios must build them, start them on a free port against
# the private PostgreSQL (DATABASE_URL as scripts/pg.sh url prints it, POOL_SIZE), give each its own memory cap
# flags, and fill every table; run.py --scenario rounds,startup,footprint beside the Go stand-in the same. Usage: peers.sh PYTHON OUTDIR
set -euo pipefail
PY=${1:?python}
OUT=${2:?outdir}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$OUT"
mkdir -p "$OUT"
PEERS=$(mktemp -d)
trap 'rm -rf "$PEERS"' EXIT
for name in go quarkus; do
    artifact=$([ "$name" = go ] && echo go-peer || echo quarkus-app) # what bench/run.py sizes as the artifact
    mkdir -p "$PEERS/$name"
    cat >"$PEERS/$name/build.sh" <<BUILD
#!/usr/bin/env bash
set -e
mkdir -p "\$(dirname "\$0")/build"
cp "$REPO/tests/bench/ramp_server.py" "\$(dirname "\$0")/build/server.py"
cp "$REPO/tests/bench/ramp_server.py" "\$(dirname "\$0")/build/$artifact"
echo "build time 0 s"
BUILD
    cat >"$PEERS/$name/run.sh" <<RUN
#!/usr/bin/env bash
echo "PORT=\$PORT DATABASE_URL=\$DATABASE_URL POOL_SIZE=\$POOL_SIZE JAVA_OPTS=\$JAVA_OPTS GOMEMLIMIT=\${GOMEMLIMIT:-}" >>"$OUT/env-$name"
exec "$PY" "\$(dirname "\$0")/build/server.py"
RUN
done
PREON_BENCH_PEERS=$PEERS "$PY" "$REPO/bench/run.py" --quick --scenario build,000,001,004 --target go --target quarkus --out "$OUT/run"
"$PY" - "$OUT" <<'PYCHECK'
import json, re, sys
out = sys.argv[1]
r = json.load(open(out + "/run/results.json"))
sc = r["scenarios"]
assert r["targets"] == ["go", "quarkus"], r["targets"]
for n, how in (("go", "GOMEMLIMIT=%dMiB"), ("quarkus", "JAVA_OPTS=-Xmx%dm")):
    b = sc["build"][n]
    assert b["cold_s"] > 0 and b["warm_s"] > 0 and b["artifact_bytes"] > 1000, b
    assert sc["000"][n]["rps"] > 0 and sc["000"][n]["p99"] is not None, sc["000"][n]
    p = sc["001"][n]
    assert p["rps"] > 0 and p["start_s"] > 0 and p["memory_kb"] > 0 and p["artifact_bytes"] == b["artifact_bytes"], p
    for mib in ("32", "128"):
        c = p["caps"][mib]
        assert c["how"] == how % int(mib) and c["result"] == "ok" and c["rps"] > 0, c
    ramp = sc["004"][n]
    assert ramp["total"] > 0 and ramp["ok"] == ramp["total"] and ramp["max_threads"] >= 1 and ramp["peak_rss_kb"] > 0, ramp
    assert ramp["pg_cpu_pct"] is not None, ramp
    env = open("%s/env-%s" % (out, n)).read().split("\n")
    for line in filter(None, env):
        m = re.match(r"PORT=(\d+) DATABASE_URL=postgresql://postgres@127\.0\.0\.1:(\d+)/preon POOL_SIZE=(\d+) ", line)
        assert m, line
    caps = [l for l in env if ("-Xmx" if n == "quarkus" else "GOMEMLIMIT=3") in l]
    assert len(caps) >= 1, env
report = open(out + "/run/report.md").read()
for title in ("### build time", "### 000", "### 001", "### 004"):
    section = report.split(title, 1)[1].split("\n### ", 1)[0]
    assert "published (their hardware)" in section, title
    assert "**go:" not in section and "**quarkus:" not in section, section
PYCHECK
# run.py's rounds beside the Go peer, from the same folder
PREON_BENCH_PEERS=$PEERS "$PY" "$REPO/bench/run.py" --quick --scenario rounds,startup,footprint --target preon --target go --out "$OUT/compare"
grep -q "| metric | preon | go | preon / go |" "$OUT/compare/report.md"
echo "1 passed, 0 failed"
