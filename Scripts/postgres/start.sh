#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for the PostgreSQL key store's tests,
# the demo and the benchmark, and prints its URL on standard output:
#
#   export OUTBOX_POSTGRES_URL=$(Scripts/postgres/start.sh)
#
# Idempotent: a server this script started (recorded in
# .build/postgres/state) that still answers is reused. Otherwise it installs
# Debian's `postgresql` if the server binaries are missing, makes a cluster
# in a new temporary directory (trust authentication, loopback only), and
# starts it on the first free port from 55432. The server refuses to run as
# root, so as root it runs as the `postgres` user. Scripts/postgres/stop.sh
# stops it and deletes the cluster.
#
# Options:
#   --no-install       never install anything: exit 3, with one line on
#                      stderr, when the server binaries are missing.
#   --for-process PID  a server of PID's own (`swift test` asks for one this
#                      way): neither reused nor recorded in .build/postgres;
#                      a watcher stops it and deletes its cluster within a
#                      second or two of PID's exit, however PID ends.
#
# The binaries: $OUTBOX_POSTGRES_BIN if set (a directory holding initdb and
# pg_ctl), else the newest /usr/lib/postgresql/*/bin (Debian, Ubuntu), else
# the directory of `initdb` on PATH.
set -euo pipefail
cd "$(dirname "$0")/../.."

install=1
owner=
while [ $# -gt 0 ]; do
    case "$1" in
        --no-install) install=0; shift ;;
        --for-process)
            [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] || { echo "usage: $0 [--no-install] [--for-process PID]" >&2; exit 2; }
            owner=$2; shift 2 ;;
        *) echo "usage: $0 [--no-install] [--for-process PID]" >&2; exit 2 ;;
    esac
done

state_dir=.build/postgres
state=$state_dir/state

bin_dir() {
    local found=
    if [ -n "${OUTBOX_POSTGRES_BIN:-}" ]; then
        found=$OUTBOX_POSTGRES_BIN
    else
        found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
        if [ -z "$found" ] && command -v initdb >/dev/null 2>&1; then found=$(dirname "$(command -v initdb)"); fi
    fi
    [ -n "$found" ] && [ -x "$found/initdb" ] && [ -x "$found/pg_ctl" ] && echo "$found"
}

as_server() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# Closes every descriptor but 0-2, in the (sub)shell that calls it, before
# it starts something that outlives this script (the server, the watcher):
# they must not hold the caller's descriptors. Foundation's Process, for
# one, reports a child's end only once every holder of a descriptor it gave
# the child has closed it, so a test that ran this script would wait for
# the server to stop.
close_inherited_fds() {
    local fd
    for fd in /dev/fd/*; do
        fd=${fd##*/}
        if [ "$fd" -gt 2 ] 2>/dev/null; then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
}

# Reuse a running server this script started.
if [ -z "$owner" ] && [ -f "$state" ]; then
    # shellcheck disable=SC1090
    . "$state"
    if b=$(bin_dir) && "$b/pg_isready" -q -h 127.0.0.1 -p "$port" 2>/dev/null \
        && as_server "$b/pg_ctl" -D "$data_dir/data" status >/dev/null 2>&1; then
        echo "postgres://postgres@127.0.0.1:$port/postgres"
        exit 0
    fi
fi

if ! b=$(bin_dir); then
    if [ "$install" = 0 ]; then
        echo "PostgreSQL server binaries missing: install Debian's postgresql package, or set OUTBOX_POSTGRES_URL" >&2
        exit 3
    fi
    echo "PostgreSQL server binaries missing: installing Debian's postgresql" >&2
    as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
    as_root apt-get update -qq >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    b=$(bin_dir) || { echo "error: no initdb under /usr/lib/postgresql/*/bin after installing postgresql" >&2; exit 1; }
fi

data_dir=$(mktemp -d /tmp/outbox-postgres.XXXXXX)
chmod 755 "$data_dir"
[ "$(id -u)" -eq 0 ] && chown postgres "$data_dir"
as_server "$b/initdb" -D "$data_dir/data" -A trust -U postgres >/dev/null

port_is_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# Another checkout's tests may take the same free port between the check
# and the start: a start that failed to bind tries the next port.
port=55432
while :; do
    while ! port_is_free "$port"; do port=$((port + 1)); [ "$port" -lt 55532 ] || break; done
    [ "$port" -lt 55532 ] || { echo "error: no free port in 55432...55531" >&2; rm -rf "$data_dir"; exit 1; }
    # fsync stays on: the store's tests are about what commits.
    if (close_inherited_fds; as_server "$b/pg_ctl" -D "$data_dir/data" -l "$data_dir/log" -w \
        -o "-p $port -k $data_dir -c listen_addresses=127.0.0.1 -c max_connections=200" start) >&2; then
        break
    fi
    if grep -q 'could not bind\|could not create any TCP/IP sockets' "$data_dir/log" 2>/dev/null; then
        port=$((port + 1))
        continue
    fi
    echo "error: PostgreSQL did not start; its log:" >&2
    cat "$data_dir/log" >&2
    exit 1
done

if [ -n "$owner" ]; then
    # Detached (its own session, no terminal, no inherited output), so a
    # Ctrl-C that ends the tests does not end it before it has cleaned up.
    (close_inherited_fds; exec setsid bash -c '
        while kill -0 "$1" 2>/dev/null; do sleep 1; done
        if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$2/pg_ctl" -D "$3/data" -m immediate -w stop
        else "$2/pg_ctl" -D "$3/data" -m immediate -w stop; fi
        rm -rf "$3"
    ' watcher "$owner" "$b" "$data_dir" </dev/null >/dev/null 2>&1) &
else
    mkdir -p "$state_dir"
    printf 'port=%s\ndata_dir=%s\n' "$port" "$data_dir" >"$state"
fi
echo "postgres://postgres@127.0.0.1:$port/postgres"
