#!/usr/bin/env bash
# Does the sanitizer step have teeth? Plants real bugs in the engine
# (Scripts/sanitizers/teeth/*.patch), runs Scripts/sanitize.sh on a small
# scope, and checks that the step fails *because of them*:
#
#   frame-off-by-one.patch       RecordFrame.decode reads one byte past the
#                                frame: the `frame` fuzz target must report
#                                a heap-buffer-overflow in RecordFrame under
#                                AddressSanitizer;
#   unlocked-writer-state.patch  the writer thread publishes its written
#                                sequence outside the lock and `statistics`
#                                reads it there: ThreadSanitizer must report
#                                a race in LogCore.
#
# The patches are reverted when this script ends, however it ends; it
# refuses to start if the files they touch have uncommitted changes. The
# sanitized builds are the step's own (.build-tsan, .build-asan), so they
# are rebuilt twice (planted, then clean) — about 10 minutes in all here.
# Logs: .build-teeth/. Exits 0 only if both bugs were caught.
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
SANITIZE_LOGS="$logs" TSAN_TESTS='GroupCommitTests|CompactionTests' ASAN_TESTS=none \
    FUZZ_TARGETS=frame FUZZ_SECONDS="${FUZZ_SECONDS:-120}" TORTURE_SECONDS=0 \
    Scripts/sanitize.sh >"$run_log" 2>&1 || status=$?
caught=0
if [ "$status" -eq 0 ]; then
    echo "NOT CAUGHT: Scripts/sanitize.sh passed with the bugs planted (log: $run_log)"
else
    # The fuzzer's ASan report goes to the step's report folder (log_path).
    overflow=$(grep -l -a "ERROR: AddressSanitizer: heap-buffer-overflow" "$logs"/reports/asan.OutboxFuzz.* "$logs/fuzz-frame.log" 2>/dev/null \
        | xargs -r grep -l -a "RecordFrame" | head -1 || true)
    if [ -n "$overflow" ] && ls "$logs"/fuzz/frame-crash-* >/dev/null 2>&1; then
        echo "caught: the frame fuzz target reported the off-by-one read ($overflow; input $(ls "$logs"/fuzz/frame-crash-* | head -1))"
        caught=$((caught + 1))
    else
        echo "NOT CAUGHT: no heap-buffer-overflow in RecordFrame from the frame target (log: $logs/fuzz-frame.log)"
    fi
    race=$(grep -l -a "WARNING: ThreadSanitizer:" "$logs"/reports/tsan.* 2>/dev/null | xargs -r grep -l -a "LogCore" | head -1 || true)
    if [ -n "$race" ]; then
        echo "caught: ThreadSanitizer reported the unlocked read of the writer's state ($race)"
        caught=$((caught + 1))
    else
        echo "NOT CAUGHT: no ThreadSanitizer race in LogCore (reports: $logs/reports)"
    fi
fi
grep -a -A12 "=== Scripts/sanitize.sh summary" "$run_log" | sed 's/^/  /' || true
if [ "$caught" -eq 2 ]; then
    echo "teeth.sh: both planted bugs made the sanitizer step fail, each with its report"
    exit 0
fi
exit 1
