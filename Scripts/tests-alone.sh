#!/usr/bin/env bash
# Runs each test suite alone — one `swift test` process per suite, nothing
# else of the test bundle beside it — and names the suites that fail that
# way. Every test must pass alone and in any order; the full `swift test`
# only shows that they pass together, in the order it happened to use.
#
#   Scripts/tests-alone.sh                 every suite, one after another
#   SAMPLE=20 Scripts/tests-alone.sh       20 suites drawn at random; the seed
#                                          is printed, SEED=N replays the draw
#   FILTER='^OutboxTests\.' Scripts/tests-alone.sh   suites whose id matches
#   JOBS=2 Scripts/tests-alone.sh          two suites at a time (each still in
#                                          a process of its own)
#   SUITE_TIMEOUT=900                      seconds before a suite is killed
#
# Build first (`swift build --build-tests`): it runs `swift test
# --skip-build`. Suites are the `Target.Suite` prefixes of `swift test list`,
# each selected with `--filter '^Target\.Suite/'` (anchored, with the slash,
# so OutboxLogTests.ModelTests does not also select ...IndexCheckpointModelTests).
# The PostgreSQL suites start a server of each process's own when
# OUTBOX_POSTGRES_URL is unset (export it, from Scripts/postgres/start.sh,
# to share one); without Debian's postgresql they are skipped, and skipped
# suites are listed.
# Logs: .build/tests-alone/<suite>.log. Exit 1 if any suite failed alone,
# or ran no test.
#
# A shuffled order for the whole run does not exist in Swift Testing 6.3.1
# (checked in its sources and its entry point's options: no shuffle, order
# or seed option): with parallel runs (the default) the order is that of a
# Dictionary of the test plan, so it changes with Swift's per-process hash
# seed but cannot be chosen or replayed (SWIFT_DETERMINISTIC_HASHING=1
# pins one order); with --no-parallel it is source order. Running each suite
# alone covers what an order dependency would hide: a suite that only passes
# after another one.
set -euo pipefail
cd "$(dirname "$0")/.."

jobs="${JOBS:-1}"
suite_timeout="${SUITE_TIMEOUT:-900}"
logs=.build/tests-alone
mkdir -p "$logs"

if ! swift test --skip-build list >"$logs/list.txt" 2>"$logs/list.err"; then
    echo "cannot list the tests (build them first: swift build --build-tests):" >&2
    cat "$logs/list.err" >&2
    exit 2
fi
mapfile -t suites < <(grep '/' "$logs/list.txt" | cut -d/ -f1 | sort -u | grep -E "${FILTER:-.}" || true)
if [ ${#suites[@]} -eq 0 ]; then
    echo "no suite matches FILTER=${FILTER:-}" >&2
    exit 2
fi

if [ -n "${SAMPLE:-}" ]; then
    seed="${SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}"
    filter_hint=""
    [ -z "${FILTER:-}" ] || filter_hint=" FILTER='$FILTER'"
    echo "sample of $SAMPLE of ${#suites[@]} suites, seed $seed (replay: SEED=$seed SAMPLE=$SAMPLE$filter_hint $0)"
    mapfile -t suites < <(printf '%s\n' "${suites[@]}" | python3 -c '
import random, sys
seed, count = int(sys.argv[1]), int(sys.argv[2])
names = sys.stdin.read().split()
for name in random.Random(seed).sample(names, min(count, len(names))):
    print(name)
' "$seed" "$SAMPLE")
fi

# run_alone SUITE: runs it, writes "<status> <seconds> <summary>" to its .result.
run_alone() {
    local suite="$1" begin=$SECONDS status=0 summary
    local log="$logs/$suite.log"
    timeout --kill-after=10 "$suite_timeout" \
        swift test --skip-build --filter "^${suite//./\\.}/" >"$log" 2>&1 || status=$?
    summary=$(grep -a -E '(✔|✘) Test run with' "$log" | tail -n 1 || true)
    if [ "$status" -eq 0 ] && ! grep -a -q -E 'Test run with [1-9][0-9]* tests?' <<<"$summary"; then
        status=3  # nothing ran: the filter selected no test
    fi
    case "$status" in 124 | 137) summary="killed after ${suite_timeout} s" ;; esac
    echo "$status $((SECONDS - begin)) ${summary:-no summary line}" >"$logs/$suite.result"
}

echo "running ${#suites[@]} suites alone, $jobs at a time (logs in $logs/)"
started=$SECONDS
running=0
for suite in "${suites[@]}"; do
    rm -f "$logs/$suite.result"
    run_alone "$suite" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n || true
        running=$((running - 1))
    fi
done
wait || true

failed=()
skipped=()
for suite in "${suites[@]}"; do
    status=99 seconds=0 summary="no result (the script was interrupted?)"
    [ ! -f "$logs/$suite.result" ] || read -r status seconds summary <"$logs/$suite.result"
    if [ "$status" -ne 0 ]; then
        failed+=("$suite")
        printf 'FAILED ALONE  %-60s %5d s  %s\n' "$suite" "$seconds" "$summary"
    else
        printf 'passed        %-60s %5d s\n' "$suite" "$seconds"
    fi
    # Swift Testing's skip line: '➜ Test "…" skipped: "reason"' (or 'skipped.').
    if grep -a -q -E '➜ (Suite|Test) .* skipped(: |\.$)' "$logs/$suite.log" 2>/dev/null; then skipped+=("$suite"); fi
done

echo
echo "${#suites[@]} suites alone in $((SECONDS - started)) s: $((${#suites[@]} - ${#failed[@]})) passed, ${#failed[@]} failed"
if [ ${#skipped[@]} -gt 0 ]; then
    echo "with skipped tests (see their logs for why): ${skipped[*]}"
fi
for suite in "${failed[@]}"; do
    echo
    echo "--- $suite ($logs/$suite.log):"
    grep -a -E '✘|↳' "$logs/$suite.log" | grep -a -v -E 'Testing Library Version|Target Platform' | head -n 20 | cut -c1-400 || true
done
[ ${#failed[@]} -eq 0 ]
