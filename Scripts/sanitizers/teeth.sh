#!/usr/bin/env bash
# Does the sanitizer step have teeth? Plants real bugs in the engine
# (Scripts/sanitizers/teeth/*.patch), runs Scripts/sanitize.sh on a small
# scope with CI's fuzzing budget, and checks that the step fails *because
# of them*:
#
#   frame-off-by-one.patch       RecordFrame.decode reads one byte past the
#                                frame: AddressSanitizer must report a
#                                heap-buffer-overflow from RecordFrame both
#                                in the `frame` fuzz target (which leaves
#                                its input) and in the ASan test run
#                                (FrameBoundaryTests);
#   unlocked-writer-state.patch  the writer thread publishes its written
#                                sequence in a plain word that `statistics`
#                                reads without the lock: ThreadSanitizer
#                                must report a data race between
#                                LogCore.statistics and LogCore.writerLoop
#                                (GroupCommitTests).
#
# The patches are reverted when this script ends, however it ends; it
# refuses to start if the files they touch have uncommitted changes. The
# sanitized builds are the step's own (.build-tsan, .build-asan), so the
# step's next run rebuilds what the patches touched. Logs: .build-teeth/.
# Exits 0 only if every expected report was found.
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"
patches=(Scripts/sanitizers/teeth/frame-off-by-one.patch Scripts/sanitizers/teeth/unlocked-writer-state.patch)
logs="$root/.build-teeth/step"
mkdir -p "$root/.build-teeth"
run_log="$root/.build-teeth/teeth.log"

touched=$(for patch in "${patches[@]}"; do grep -E '^\+\+\+ b/' "$patch" | cut -c7-; done | sort -u)
# shellcheck disable=SC2086 # one path per word
if ! git diff --quiet HEAD -- $touched; then
    echo "teeth.sh: uncommitted changes in $touched: commit or stash them first" >&2
    exit 2
fi
for patch in "${patches[@]}"; do git apply --check "$patch"; done
restore() {
    # shellcheck disable=SC2086
    git checkout HEAD -- $touched
    echo "teeth.sh: planted bugs removed"
}
trap restore EXIT
for patch in "${patches[@]}"; do git apply "$patch"; done
echo "teeth.sh: planted $(basename -a "${patches[@]}" | tr '\n' ' ')"

status=0
SANITIZE_LOGS="$logs" TSAN_TESTS='GroupCommitTests' ASAN_TESTS='FrameBoundaryTests' \
    FUZZ_TARGETS=frame FUZZ_SECONDS="${FUZZ_SECONDS:-30}" TORTURE_SECONDS=0 \
    Scripts/sanitize.sh >"$run_log" 2>&1 || status=$?

# report_in PATTERN... : the first file among the step's reports (and the
# fuzz log) holding one sanitizer report — the text between two lines of
# '=' — that names every PATTERN.
report_in() {
    local file
    for file in "$logs"/reports/* "$logs/fuzz-frame.log"; do
        [ -f "$file" ] || continue
        if awk -v wanted="$(IFS=$'\t'; echo "$*")" '
            BEGIN { count = split(wanted, patterns, "\t") }
            function check(   i) {
                for (i = 1; i <= count; i++) if (!index(block, patterns[i])) { block = ""; return }
                found = 1
            }
            /^==================+$/ { check(); next }
            { block = block "\n" $0 }
            END { check(); exit found ? 0 : 1 }' "$file"; then
            echo "$file"
            return 0
        fi
    done
    return 1
}

caught=0 expected=3
if [ "$status" -eq 0 ]; then
    echo "NOT CAUGHT: Scripts/sanitize.sh passed with the bugs planted (log: $run_log)"
else
    # The fuzzer's report: libFuzzer's own log, or the ASan report file of
    # the OutboxFuzz process; its input is left in the fuzz folder.
    fuzz_report=$(report_in "ERROR: AddressSanitizer: heap-buffer-overflow" "RecordFrame" "OutboxFuzz" || true)
    if [ -n "$fuzz_report" ] && ls "$logs"/fuzz/frame-crash-* >/dev/null 2>&1; then
        echo "caught: the frame fuzz target reported the off-by-one read ($fuzz_report; input $(ls "$logs"/fuzz/frame-crash-* | head -1))"
        caught=$((caught + 1))
    else
        echo "NOT CAUGHT: no heap-buffer-overflow in RecordFrame from the frame target (log: $logs/fuzz-frame.log)"
    fi
    test_report=$(report_in "ERROR: AddressSanitizer: heap-buffer-overflow" "RecordFrame" "FrameBoundaryTests" || true)
    if [ -n "$test_report" ]; then
        echo "caught: the ASan test run reported the off-by-one read in FrameBoundaryTests ($test_report)"
        caught=$((caught + 1))
    else
        echo "NOT CAUGHT: no heap-buffer-overflow in RecordFrame from FrameBoundaryTests (log: $logs/asan-tests.log)"
    fi
    race=$(report_in "WARNING: ThreadSanitizer: data race" "statistics" "writerLoop" || true)
    if [ -n "$race" ]; then
        echo "caught: ThreadSanitizer reported the unlocked read of the writer's state ($race)"
        caught=$((caught + 1))
    else
        echo "NOT CAUGHT: no ThreadSanitizer race between statistics and writerLoop (reports: $logs/reports)"
    fi
fi
grep -a -A14 "=== Scripts/sanitize.sh summary" "$run_log" | sed 's/^/  /' || true
if [ "$caught" -eq "$expected" ]; then
    echo "teeth.sh: both planted bugs made the sanitizer step fail, each with its reports ($caught of $expected)"
    exit 0
fi
echo "teeth.sh: $caught of $expected expected reports found"
exit 1
