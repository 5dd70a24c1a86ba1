#!/usr/bin/env bash
# Stops the server Scripts/postgres/start.sh started and deletes its cluster.
set -euo pipefail
cd "$(dirname "$0")/../.."
state=.build/postgres/state
[ -f "$state" ] || exit 0
# shellcheck disable=SC1090
. "$state"
# The binaries, found as start.sh finds them.
b=${OUTBOX_POSTGRES_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
if [ -z "$b" ] && command -v pg_ctl >/dev/null 2>&1; then b=$(dirname "$(command -v pg_ctl)"); fi
as_server() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
if [ -n "$b" ] && [ -d "$data_dir/data" ]; then
    as_server "$b/pg_ctl" -D "$data_dir/data" -m fast -w stop >/dev/null 2>&1 || true
fi
case "$data_dir" in /tmp/outbox-postgres.*) rm -rf "$data_dir" ;; esac
rm -f "$state"
