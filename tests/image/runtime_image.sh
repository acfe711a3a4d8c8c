#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Dockerfile's runtime stage, built and run for real without Docker: a debootstrap'ed bookworm (minbase,
# cached in /var/cache/preon), exactly config/runtime-packages.txt installed with apt-get, the binary, config/
# and sql/ copied as the Dockerfile copies them, then preon run under chroot as an unprivileged user against
# the test PostgreSQL. Fails if a shared library is missing from the list.
# Usage: tests/image/runtime_image.sh BINARY        (needs root and PREON_TEST_PGDIR; prints the closure size)
set -euo pipefail
BIN=$(readlink -f "${1:?usage: runtime_image.sh BINARY}")
REPO=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "runtime_image.sh needs root (debootstrap, chroot)" >&2; exit 1; }
: "${PREON_TEST_PGDIR:?PREON_TEST_PGDIR is not set}"

PACKAGES=$(grep -v '^#' "$REPO/config/runtime-packages.txt" | xargs)
CACHE=/var/cache/preon/bookworm-minbase.tar
MIRROR=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
MIRROR=${MIRROR:-http://deb.debian.org/debian}

ROOT=$(mktemp -d /tmp/preon-rootfs.XXXXXX)
PID=
cleanup() {
    if [ -n "$PID" ]; then
        kill "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
    fi
    if mountpoint -q "$ROOT/proc"; then umount "$ROOT/proc"; fi
    rm -rf "$ROOT"
}
trap cleanup EXIT

if [ ! -s "$CACHE" ]; then
    echo "==> debootstrap --variant=minbase bookworm (cached in $CACHE afterwards)"
    mkdir -p "$(dirname "$CACHE")"
    debootstrap --variant=minbase bookworm "$ROOT" "$MIRROR" >/tmp/preon-debootstrap.log 2>&1 ||
        { tail -n 30 /tmp/preon-debootstrap.log >&2; exit 1; }
    rm -rf "$ROOT/var/cache/apt/archives/"*.deb
    tar -C "$ROOT" -cf "$CACHE.tmp" . && mv "$CACHE.tmp" "$CACHE"
else
    tar -C "$ROOT" -xf "$CACHE"
fi
chmod 755 "$ROOT" # a root file system: the unprivileged user must be able to enter it (tar restores 0700)
# Sizes leave out apt's package lists and caches, which the image drops too.
size() { du -sb --exclude=./proc --exclude=./var/lib/apt/lists --exclude=./var/cache/apt . | cut -f1; }
base=$(cd "$ROOT" && size)

echo "==> installing the runtime packages: $PACKAGES"
# The same archive as the host, so that the versions match the ones preon was built against.
[ -f /etc/apt/sources.list.d/debian.sources ] && cp /etc/apt/sources.list.d/debian.sources "$ROOT/etc/apt/sources.list.d/" &&
    rm -f "$ROOT/etc/apt/sources.list"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
mount -t proc proc "$ROOT/proc"
apt_quiet=(-o APT::Sandbox::User=root -qq)
chroot "$ROOT" apt-get "${apt_quiet[@]}" update >/dev/null
# shellcheck disable=SC2086
chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_quiet[@]}" install -y --no-install-recommends $PACKAGES \
    >/dev/null 2>&1 || { echo "FAIL: apt-get install in the image" >&2; exit 1; }
chroot "$ROOT" apt-get clean
rm -rf "$ROOT/var/lib/apt/lists/"*
added=$(( $(cd "$ROOT" && size) - base ))
echo "runtime closure: $added bytes added to the minbase root by the runtime packages"

echo "==> copying preon as the Dockerfile does"
install -D -m 755 "$BIN" "$ROOT/usr/local/bin/preon"
strip "$ROOT/usr/local/bin/preon"
mkdir -p "$ROOT/opt/preon"
cp -r "$REPO/config" "$REPO/sql" "$ROOT/opt/preon/"
chroot "$ROOT" useradd --uid 10001 --no-create-home --home-dir /opt/preon --shell /usr/sbin/nologin preon
echo "binary (stripped): $(stat -c %s "$ROOT/usr/local/bin/preon") bytes"

echo "==> every library resolves inside the image"
if chroot "$ROOT" ldd /usr/local/bin/preon | grep -q "not found"; then
    chroot "$ROOT" ldd /usr/local/bin/preon >&2
    echo "FAIL: a shared library is missing from config/runtime-packages.txt" >&2
    exit 1
fi
echo "==> every library preon links (NEEDED) comes from a listed package (or libc6, in every base image)"
installed=$(chroot "$ROOT" dpkg-query -W -f='${Package}\n')
for lib in $(readelf -d "$BIN" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p'); do
    pkg=$(dpkg -S "*/$lib" 2>/dev/null | head -n 1 | cut -d: -f1)
    case " $PACKAGES libc6 " in
        *" $pkg "*) ;;
        *) echo "FAIL: $lib comes from '$pkg', which config/runtime-packages.txt does not list" >&2; exit 1 ;;
    esac
done
for lib in $(ldd "$BIN" | awk '$3 ~ /^\// {print $3}'); do
    pkg=$(dpkg -S "*/$(basename "$lib")" 2>/dev/null | head -n 1 | cut -d: -f1)
    grep -qx "$pkg" <<<"$installed" || { echo "FAIL: $lib ($pkg) is not installed in the image" >&2; exit 1; }
done

echo "==> running preon in the image as user preon (uid 10001)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url=$("$REPO/scripts/pg.sh" url "$PREON_TEST_PGDIR")
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin PREON_SERVER_LISTEN=127.0.0.1 PREON_SERVER_PORT="$port" \
    PREON_DATABASE_URL="$url" chroot --userspec=10001:10001 "$ROOT" \
    /bin/sh -c 'cd /opt/preon && exec /usr/local/bin/preon --config /opt/preon/config/preon.yaml' >"$ROOT/preon.log" 2>&1 &
PID=$!
ok=
for _ in $(seq 1 200); do
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/fruits")" = 200 ]; then ok=1; break; fi
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.05
done
[ -n "$ok" ] || { cat "$ROOT/preon.log" >&2; echo "FAIL: preon did not serve /fruits in the image" >&2; exit 1; }
[ "$(curl -s "http://127.0.0.1:$port/hello")" = "Hello" ] || { echo "FAIL: /hello" >&2; exit 1; }
expected=$("$REPO/scripts/pg.sh" psql "$PREON_TEST_PGDIR" -At -c \
    "SELECT json_agg(json_build_object('id', id, 'name', name) ORDER BY id) FROM fruits")
got=$(curl -s "http://127.0.0.1:$port/fruits")
python3 -c 'import json,sys; sys.exit(0 if json.loads(sys.argv[1]) == json.loads(sys.argv[2]) else 1)' "$expected" "$got" ||
    { echo "FAIL: /fruits differs from the table: $got" >&2; exit 1; }
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin PREON_SERVER_PORT="$port" chroot --userspec=10001:10001 "$ROOT" /usr/local/bin/preon --probe /health/live ||
    { echo "FAIL: preon --probe (the HEALTHCHECK) in the image" >&2; exit 1; }
user=$(ps -o user= -p "$(pgrep -P "$PID" preon || echo "$PID")" | tr -d ' ')
[ "$user" = 10001 ] || [ "$user" = preon ] || { echo "FAIL: preon runs as '$user', not the unprivileged user" >&2; exit 1; }
kill -TERM "$PID"
wait "$PID" || { cat "$ROOT/preon.log" >&2; echo "FAIL: preon did not exit 0 after SIGTERM" >&2; exit 1; }
PID=
echo "runtime image: 1 passed, 0 failed"
