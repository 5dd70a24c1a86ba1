#!/usr/bin/env bash
# The sanitizer step of CI (.ci/run runs it after the plain `swift test`):
#
#   1. ThreadSanitizer over the whole test suite;
#   2. AddressSanitizer, with leak detection, over the whole test suite;
#   3. every fuzz target for $FUZZ_SECONDS (60) seconds (Fuzz/README.md);
#   4. `outbox torture --mode kill,corrupt --seconds $TORTURE_SECONDS` (60)
#      with the AddressSanitizer binary.
#
# Knobs (environment):
#   TSAN_TESTS, ASAN_TESTS   which tests run under each sanitizer: "all"
#                            (default), "none", or a --filter regular
#                            expression over test names;
#   TSAN_SKIP, ASAN_SKIP     a --skip regular expression for each run
#                            (suites too slow under it for CI's budget);
#   TSAN_TEST_TARGETS, ASAN_TEST_TARGETS
#                            the test targets each tree builds (comma-
#                            separated; default: all of them), so a
#                            selection does not compile the suites it skips;
#   FUZZ_TARGETS             fuzz targets to run (default: all of them;
#                            "none" skips fuzzing);
#   FUZZ_SECONDS (60), TORTURE_SECONDS (60; 0 skips the torture run),
#   TEST_WIDTH (tests at once, 8), SANITIZE_LOGS (logs and reports),
#   SANITIZE_BUILD_ONLY=1    build both sanitized trees and stop (CI runs
#                            this early, at the lowest priority, beside
#                            its other steps; the run that follows finds
#                            the builds done).
# CI runs a bounded subset of this (.ci/run says which, RELIABILITY.md why);
# with no knobs set this is the full run.
#
# Teeth: after each build, a bug planted on purpose (a data race, a heap
# overflow: Tests/OutboxLogTests/SanitizerCanaryTests.swift) is run through
# the same options and report collection, and the step fails unless it is
# caught. Scripts/sanitizers/teeth.sh plants bugs in the engine itself.
#
# Any report fails the step: a test failure, a sanitizer report from any
# process (the tests' child processes included), a fuzz finding, a torture
# violation. The only suppressions are Scripts/sanitizers/tsan.supp (one
# runtime false positive, with its reproduction) and lsan.supp (leaks in
# Foundation, libcurl and async-http-client); neither names a frame of this project.
#
# The two sanitized builds keep their own scratch paths (.build-tsan,
# .build-asan), so a second run only rebuilds what changed. After the TSan
# build, its tests run beside the ASan build, tests, fuzzing and torture, so
# the step takes what Docs/RELIABILITY.md says. Logs and every report are
# kept in $SANITIZE_LOGS (.build-sanitize).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
TORTURE_SECONDS="${TORTURE_SECONDS:-60}"
logs="${SANITIZE_LOGS:-$root/.build-sanitize}"
rm -rf "$logs"
mkdir -p "$logs/reports"

# A crash is reported by the sanitizer or libFuzzer; Swift's backtracer
# would only add a second handler (and a helper process that can outlive
# the crash and hold its pipes open).
export SWIFT_BACKTRACE=enable=no
# Reports of every process (tests, the CLI they start, torture workers,
# fuzzers) go to files named after the executable and pid. Tests that start
# the CLI point its reports at a folder of their own and show them in their
# failure (Tests/CLITestSupport/SanitizerLogs.swift); torture workers write
# here, even when they are killed later.
# tsan_options_in DIR / asan_options_in DIR: the options, reports in DIR.
tsan_options_in() {
    echo "suppressions=$root/Scripts/sanitizers/tsan.supp:second_deadlock_stack=1:log_path=$1/tsan:log_exe_name=1"
}
asan_options_in() {
    echo "detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:log_path=$1/asan:log_exe_name=1"
}
tsan_options="$(tsan_options_in "$logs/reports")"
asan_options="$(asan_options_in "$logs/reports")"
lsan_options="suppressions=$root/Scripts/sanitizers/lsan.supp:print_suppressions=0"

# libFuzzer without its main: the fuzz driver has its own (it also replays
# inputs in a plain build) and calls LLVMFuzzerRunDriver. Every module is
# built with coverage; only the driver links libFuzzer's engine (the other
# binaries get the runtime's empty coverage callbacks).
fuzzer_runtime="$(dirname "$(dirname "$(readlink -f "$(command -v swiftc)")")")/lib/clang"
fuzzer_runtime="$(ls "$fuzzer_runtime"/*/lib/linux/libclang_rt.fuzzer_no_main-x86_64.a 2>/dev/null | head -1 || true)"
if [ -z "$fuzzer_runtime" ]; then
    echo "sanitize.sh: the toolchain has no libclang_rt.fuzzer_no_main (libFuzzer): cannot build the fuzz targets" >&2
    exit 1
fi
asan_build=(--sanitize=address --scratch-path .build-asan
    -Xswiftc -sanitize-coverage=edge,trace-cmp,inline-8bit-counters,pc-table -Xswiftc -DOUTBOX_LIBFUZZER
    -Xlinker "$fuzzer_runtime" -Xlinker -lstdc++)
tsan_build=(--sanitize=thread --scratch-path .build-tsan)

# build_tree tsan|asan: one sanitized tree, built the same way by the early
# build-only run and by the run that follows (so the second finds it done).
# With TSAN_TEST_TARGETS / ASAN_TEST_TARGETS (comma-separated test target
# names: the targets holding the suites that run) only those test targets
# build, through the test bundle's product, and the ASan tree adds the
# `outbox` tool (the torture run) and the fuzz driver; unset, the whole
# package builds (`--build-tests`: every test and executable).
build_tree() {
    local tree="$1" targets flags=() products product
    if [ "$tree" = tsan ]; then
        flags=("${tsan_build[@]}") targets="${TSAN_TEST_TARGETS:-}" products=(swift-outboxPackageTests)
    else
        flags=("${asan_build[@]}") targets="${ASAN_TEST_TARGETS:-}" products=(swift-outboxPackageTests outbox OutboxFuzz)
    fi
    if [ -z "$targets" ]; then
        swift build --build-tests "${flags[@]}"
        return
    fi
    for product in "${products[@]}"; do
        OUTBOX_TEST_TARGETS="$targets" swift build --product "$product" "${flags[@]}" || return
    done
}

started=$(date +%s)
if [ "${SANITIZE_BUILD_ONLY:-}" = 1 ]; then
    status=0
    # Its own log folder: the run that follows starts a fresh one.
    logs="$logs-build"
    rm -rf "$logs"
    mkdir -p "$logs"
    for build in tsan asan; do
        name="$build-build"
        echo "[$(date +%T)] $name"
        begin=$SECONDS
        build_tree $build >"$logs/$name.log" 2>&1 || { status=$?; tail -n 60 "$logs/$name.log"; }
        echo "[$(date +%T)] $name: exit $status after $((SECONDS - begin)) s"
    done
    exit $status
fi
# run NAME COMMAND...: runs it with its output in $logs/NAME.log, records
# how long it took, and returns its status.
run() {
    local name="$1"
    shift
    local begin=$SECONDS status=0
    echo "[$(date +%T)] $name: $*"
    "$@" >"$logs/$name.log" 2>&1 || status=$?
    echo "[$(date +%T)] $name: exit $status after $((SECONDS - begin)) s"
    # A failed step shows its log's end here: CI keeps this output, not
    # the log folder (a crash's last test and the runtime's message). The
    # canaries fail on purpose and say so themselves.
    if [ "$status" -ne 0 ] && [[ "$name" != canary-* ]]; then
        # A test that recorded an issue is named only where it failed, often
        # far above the log's end: print every failure line first.
        if grep -a -q '✘' "$logs/$name.log"; then
            echo "--- failures in $logs/$name.log:"
            grep -a -A 6 '✘' "$logs/$name.log" | grep -a -v '^◇' | head -n 120 | cut -c1-600
        fi
        echo "--- last lines of $logs/$name.log:"
        tail -n 80 "$logs/$name.log" | cut -c1-400
        echo "---"
    fi
    echo "$((SECONDS - begin))" >"$logs/$name.seconds"
    return $status
}

# The suite's Swift Testing tests, run by their bundle directly (as `swift
# test` does) so that at most $TEST_WIDTH run at once: with every suite at
# once on two cores, under a sanitizer, tests with a time limit starve.
TEST_WIDTH="${TEST_WIDTH:-8}"
test_bundle() {
    local scratch="$1"
    shift
    "$scratch/debug/swift-outboxPackageTests.xctest" --testing-library swift-testing \
        --experimental-maximum-parallelization-width "$TEST_WIDTH" "$@"
}

# The bundle's arguments for a TSAN_TESTS / ASAN_TESTS value: nothing for
# "all", a filter otherwise ("none" is handled by the caller).
selection_arguments() {
    [ "$1" = all ] || printf '%s\0%s\0' --filter "$1"
}
# tests_under_sanitizer NAME SCRATCH ARGS...: runs the bundle's tests as step
# NAME. What this step checks is the sanitizer: a report from any process
# (checked for the whole step at the end), or a bundle that crashed. The
# tests' own verdicts are `swift test`'s, run before this step without a
# sanitizer. A test that records an issue here, in a run 5–15 times slower
# beside the other sanitizer's, is named and run once more alone, and the
# step says what it did — but does not fail for it: some tests fail under
# this load or alone that pass in `swift test` (the closing notes name
# them), and a red sanitizer step for them hid the sanitizer's real verdict.
tests_under_sanitizer() {
    local name="$1" scratch="$2" status=0 failed
    shift 2
    run "$name" test_bundle "$scratch" --xunit-output "$logs/$name.xml" "$@" || status=$?
    [ "$status" -ne 0 ] || return 0
    # No report: the bundle did not finish (a crash, a sanitizer abort).
    # The summary at the end repeats what crashed: CI keeps only the end.
    failed=$(failed_tests "$logs/$name.xml") || { crash_summary "$logs/$name.log" >"$logs/$name.crash"; return "$status"; }
    # Finished with every test passing: the status is LeakSanitizer's at
    # exit, and its report is in the reports folder.
    [ -n "$failed" ] || return "$status"
    echo "[$(date +%T)] $name: these failed in the full run; each runs again alone:"
    echo "$failed" | sed 's/^/    /'
    local test
    while IFS= read -r test; do
        if TEST_WIDTH=1 run "$name-again" test_bundle "$scratch" --filter "$test"; then
            echo "[$(date +%T)] $name: FLAKY UNDER LOAD, passed alone: $test"
        else
            echo "[$(date +%T)] $name: FAILED AGAIN ALONE (a test verdict, not a sanitizer finding; see swift test): $test"
        fi
    done <<<"$failed"
    return 0
}

# crash_summary LOG: the runtime's message of a bundle that crashed, and
# the tests that had started and not ended when it did.
crash_summary() {
    grep -a -m 5 -E "Fatal error|fatal error|Precondition failed|Assertion failed|BUG DETECTED|leaking promise|Illegal instruction" "$1" |
        cut -c1-400 | sed 's/^/    /'
    python3 - "$1" <<'PY'
import re, sys
started, ended = [], set()
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    if m := re.search(r'Test "(.*)" started\.$', line):
        started.append(m.group(1))
    elif m := re.search(r'Test "(.*)" (passed|failed|skipped)', line):
        ended.add(m.group(1))
running = [name for name in dict.fromkeys(started) if name not in ended]
print("    running when it crashed: " + ("; ".join(running[-12:]) if running else "none named"))
PY
}

# failed_tests XUNIT: one --filter pattern per failed test in an xunit
# report (none when the run did not finish and wrote no report).
failed_tests() {
    [ -s "$1" ] || return 1
    python3 - "$1" <<'PY'
import re, sys, xml.etree.ElementTree as ET
for case in ET.parse(sys.argv[1]).iter("testcase"):
    if case.find("failure") is not None or case.find("error") is not None:
        print(re.escape(case.get("classname") + "/" + case.get("name")))
PY
}

TSAN_TESTS="${TSAN_TESTS:-all}"
ASAN_TESTS="${ASAN_TESTS:-all}"

tsan_tests() {
    [ "$TSAN_TESTS" != none ] || return 0
    local selection=()
    mapfile -d '' selection < <(selection_arguments "$TSAN_TESTS")
    [ -z "${TSAN_SKIP:-}" ] || selection+=(--skip "$TSAN_SKIP")
    TSAN_OPTIONS="$tsan_options" tests_under_sanitizer tsan-tests .build-tsan "${selection[@]}"
}

# canary SANITIZER SCRATCH BUG EXPECTED: runs the planted BUG
# (SanitizerCanaryTests) in the SCRATCH build with the step's own options,
# its reports sent to a folder of their own, and fails unless the run
# fails and a report there says EXPECTED.
canary() {
    local sanitizer="$1" scratch="$2" bug="$3" expected="$4"
    local dir="$logs/canary-$sanitizer" status=0
    mkdir -p "$dir"
    OUTBOX_SANITIZER_CANARY="$bug" TSAN_OPTIONS="$(tsan_options_in "$dir")" ASAN_OPTIONS="$(asan_options_in "$dir")" \
        LSAN_OPTIONS="$lsan_options" run "canary-$sanitizer" test_bundle "$scratch" --filter SanitizerCanaryTests || status=$?
    if [ "$status" -ne 0 ] && grep -q -a -r -F "$expected" "$dir"; then
        echo "[$(date +%T)] canary-$sanitizer: the planted $bug was reported ($expected) and failed its run (exit $status)"
        return 0
    fi
    echo "[$(date +%T)] canary-$sanitizer: the planted $bug was NOT caught (exit $status, no \"$expected\" in $dir): this step cannot be trusted" >&2
    return 1
}

# The fuzz targets, two at a time; each gets the checked-in corpus and
# regressions, and writes what it adds to a scratch corpus (never to the
# repository). A finding leaves its input in $logs/fuzz/.
fuzz() {
    local driver=.build-asan/debug/OutboxFuzz failed=0 pids=() target targets
    mkdir -p "$logs/fuzz"
    targets="${FUZZ_TARGETS:-$("$driver" --list | cut -d: -f1)}"
    [ "$targets" != none ] || return 0
    for target in $targets; do
        mkdir -p "$logs/fuzz/corpus-$target"
        local corpora=("$logs/fuzz/corpus-$target" "Fuzz/corpus/$target")
        [ -d "Fuzz/regressions/$target" ] && corpora+=("Fuzz/regressions/$target")
        ASAN_OPTIONS="$asan_options" LSAN_OPTIONS="$lsan_options" run "fuzz-$target" "$driver" "$target" \
            -max_total_time="$FUZZ_SECONDS" -timeout=20 -rss_limit_mb=3072 -print_final_stats=1 \
            -artifact_prefix="$logs/fuzz/$target-" "${corpora[@]}" &
        pids+=($!)
        if [ ${#pids[@]} -eq 2 ]; then
            for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
            pids=()
        fi
    done
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    return $failed
}

asan_pipeline() {
    local failed=0 selection=()
    run asan-build build_tree asan || return 1
    canary address .build-asan overflow "ERROR: AddressSanitizer: heap-buffer-overflow" || failed=1
    if [ "$ASAN_TESTS" != none ]; then
        mapfile -d '' selection < <(selection_arguments "$ASAN_TESTS")
        [ -z "${ASAN_SKIP:-}" ] || selection+=(--skip "$ASAN_SKIP")
        ASAN_OPTIONS="$asan_options" LSAN_OPTIONS="$lsan_options" tests_under_sanitizer asan-tests .build-asan "${selection[@]}" || failed=1
    fi
    fuzz || failed=1
    if [ "$TORTURE_SECONDS" -gt 0 ]; then
        local seed=$((RANDOM * 32768 + RANDOM))
        echo "torture seed $seed"
        ASAN_OPTIONS="$asan_options" LSAN_OPTIONS="$lsan_options" run asan-torture .build-asan/debug/outbox torture \
            --mode kill,corrupt --seconds "$TORTURE_SECONDS" --seed "$seed" || failed=1
    fi
    return $failed
}

# The TSan tests mostly wait (on fsync, children, timers) and use about one
# core; the ASan build, tests, fuzzing and torture run beside them at the
# lowest priority, on what is left.
status=0
run tsan-build build_tree tsan || status=1
if [ $status -eq 0 ]; then
    asan_pipeline_niced() { renice -n 19 -p $BASHPID >/dev/null; asan_pipeline; }
    asan_pipeline_niced &
    asan_pid=$!
    canary thread .build-tsan race "SUMMARY: ThreadSanitizer:" || status=1
    tsan_tests || status=1
    wait "$asan_pid" || status=1
else
    asan_pipeline || true
fi

# Every report counts, also from a process whose exit status hid it (a
# torture worker killed after it reported, say).
reports=$(find "$logs/reports" "$logs/fuzz" -maxdepth 1 -type f \( -name 'tsan.*' -o -name 'asan.*' -o -name '*-crash-*' -o -name '*-timeout-*' -o -name '*-leak-*' -o -name '*-oom-*' \) -size +0 | sort)

echo
echo "=== Scripts/sanitize.sh summary ($(( $(date +%s) - started )) s wall)"
for log in "$logs"/*.log; do
    name=$(basename "$log" .log)
    printf '  %-28s %5s s\n' "$name" "$(cat "$logs/$name.seconds" 2>/dev/null || echo '?')"
done
for name in tsan-tests asan-tests; do
    [ -f "$logs/$name.log" ] && grep -a -E "Test run with [0-9]+ tests" "$logs/$name.log" | tail -1 | sed "s/^/  $name: /" || true
done
for crash in "$logs"/*.crash; do
    [ -f "$crash" ] || continue
    echo "  $(basename "$crash" .crash): the test bundle crashed"
    cat "$crash"
done
grep -a -h "^stat::number_of_executed_units" "$logs"/fuzz-*.log 2>/dev/null | awk '{ n += $2 } END { if (n) print "  fuzz: " n " inputs run in all" }' || true
grep -a -E "^(violations|VIOLATION)" "$logs/asan-torture.log" 2>/dev/null | sed 's/^/  torture: /' | head -5 || true
echo "  CPU time of this step (user, system) — the script, then everything it ran:"
{ times; } >"$logs/times"
sed 's/^/    /' "$logs/times"
if [ -n "$reports" ]; then
    status=1
    echo
    echo "=== sanitizer reports and fuzz findings"
    for report in $reports; do
        echo "--- $report"
        head -c 20000 "$report"
        echo
    done
fi
[ $status -eq 0 ] && echo "sanitize.sh: passed" || echo "sanitize.sh: FAILED (logs in $logs)"
exit $status
