#!/usr/bin/env bash
# Builds Examples/ (every README, Docs/ and DocC sample) and runs each sample as a
# user would:
#   - the app sample against the reference server (`outbox serve`): it must
#     print "delivered as msg-N", the id the server gave its write;
#   - the middleware sample as a server, and the app sample against it;
#   - the PostgreSQL sample as a server on $OUTBOX_POSTGRES_URL
#     (Scripts/postgres/start.sh), and the app sample against it (skipped,
#     saying so, without the variable; a failure under CI);
#   - the log, DocC and encryption samples, in a scratch directory.
# Everything runs in a fresh temporary directory, with XDG_DATA_HOME (where
# the app sample's Application Support is on Linux) pointing at a directory
# that does not exist yet: the first launch must create it.
set -euo pipefail
cd "$(dirname "$0")/.."
repository=$(pwd)

work=$(mktemp -d)
servers=()
cleanup() {
    for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# Prints the port once `pattern` (with the port as its last number) appears
# in `file`; fails after 60 s or if process `pid` died.
wait_for_port() {
    local file=$1 pattern=$2 pid=$3
    for _ in $(seq 600); do
        if line=$(grep -oE "$pattern" "$file" | head -1) && [ -n "$line" ]; then
            echo "${line##*:}"
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "error: the server exited before listening:" >&2
            cat "$file" >&2
            return 1
        fi
        sleep 0.1
    done
    echo "error: the server did not listen within 60 s:" >&2
    cat "$file" >&2
    return 1
}

# Runs the app sample against `url`; it must report its write delivered.
run_app_sample() {
    local url=$1 expected=$2 output
    if ! output=$(cd "$work" && OUTBOX_API=$url XDG_DATA_HOME="$work/xdg/share" timeout 120 "$bin/AppSample" 2>&1); then
        echo "error: AppSample against $url failed:" >&2
        echo "$output" >&2
        return 1
    fi
    echo "$output" | sed 's/^/    /'
    if ! grep -qE "^delivered as $expected\$" <<<"$output"; then
        echo "error: AppSample against $url did not report its write delivered" >&2
        return 1
    fi
}

started=$(date +%s)
# Built in the root's build folder: the samples' package graph differs
# (Examples/Package.swift depends on this package by path, as an app
# would), but the compiled modules they share with the root's debug build
# are reused, not built a second time. EXAMPLES_BUILT=1: already built.
if [ "${EXAMPLES_BUILT:-}" != 1 ]; then (cd Examples && swift build --scratch-path ../.build); fi
bin=$(cd Examples && swift build --scratch-path ../.build --show-bin-path)
echo "Examples built in $(($(date +%s) - started)) s"

# The root's debug build of the CLI (the one `swift test` runs).
swift build --product outbox
outbox="$(swift build --show-bin-path)/outbox"

echo "== AppSample against outbox serve"
(cd "$work" && exec "$outbox" serve --port 0 --in-memory-keys >"$work/serve.log" 2>&1) &
servers+=($!)
port=$(wait_for_port "$work/serve.log" "listening on http://127\.0\.0\.1:[0-9]+" "${servers[0]}")
run_app_sample "http://127.0.0.1:$port" "msg-[0-9]+"
compgen -G "$work/xdg/share/outbox/partitions/outbox+*" >/dev/null || { echo "error: no queue under XDG_DATA_HOME" >&2; exit 1; }
# The store created the missing $XDG_DATA_HOME and its parent, private to the user.
for directory in "$work/xdg" "$work/xdg/share" "$work/xdg/share/outbox"; do
    mode=$(stat -c %a "$directory")
    [ "$mode" = 700 ] || { echo "error: $directory has mode $mode, not 700" >&2; exit 1; }
done
# The second launch reopens the same queue.
run_app_sample "http://127.0.0.1:$port" "msg-[0-9]+"

echo "== MiddlewareSample, and AppSample against it"
(cd "$work" && PORT=0 exec "$bin/MiddlewareSample" >"$work/middleware.log" 2>&1) &
middleware=$!
servers+=("$middleware")
port=$(wait_for_port "$work/middleware.log" "listening on 127\.0\.0\.1:[0-9]+" "$middleware")
run_app_sample "http://127.0.0.1:$port" "[0-9A-F-]{36}"
kill -TERM "$middleware"
(sleep 30 && kill -KILL "$middleware" 2>/dev/null) &
watchdog=$!
status=0
wait "$middleware" || status=$?
kill "$watchdog" 2>/dev/null || true
if [ "$status" -ne 0 ]; then
    echo "error: MiddlewareSample did not stop cleanly on SIGTERM (exit status $status)" >&2
    cat "$work/middleware.log" >&2
    exit 1
fi
grep -q "new message in c1: hi" "$work/middleware.log" || {
    echo "error: MiddlewareSample's handler did not run:" >&2
    cat "$work/middleware.log" >&2
    exit 1
}

echo "== PostgresSample, and AppSample against it"
if [ -n "${OUTBOX_POSTGRES_URL:-}" ]; then
    (cd "$work" && PORT=0 DATABASE_URL=$OUTBOX_POSTGRES_URL exec "$bin/PostgresSample" >"$work/postgres.log" 2>&1) &
    postgres_sample=$!
    servers+=("$postgres_sample")
    port=$(wait_for_port "$work/postgres.log" "listening on 127\.0\.0\.1:[0-9]+" "$postgres_sample")
    run_app_sample "http://127.0.0.1:$port" "msg-[0-9]+"
    kill -TERM "$postgres_sample"
    wait "$postgres_sample" || { echo "error: PostgresSample did not stop cleanly on SIGTERM:" >&2; cat "$work/postgres.log" >&2; exit 1; }
elif [ -n "${CI:-}" ]; then
    echo "error: OUTBOX_POSTGRES_URL is not set: start PostgreSQL with Scripts/postgres/start.sh" >&2
    exit 1
else
    echo "    skipped: OUTBOX_POSTGRES_URL is not set (export OUTBOX_POSTGRES_URL=\$(Scripts/postgres/start.sh))"
fi

for sample in LogSample LogSample QueueSample QueueSample DocCLogSample EncryptionSample \
    GettingStartedSample ObservationSample ExplainSample BackgroundSample TransactionSample ControlsSample TypedHandlersSample \
    ExtensionSample; do
    echo "== $sample"
    (cd "$work" && timeout 60 "$bin/$sample") | sed 's/^/    /'
done

echo "samples ran in $(($(date +%s) - started)) s (build included)"
cd "$repository"
