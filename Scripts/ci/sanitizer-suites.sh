#!/usr/bin/env bash
# The test suites CI runs under each sanitizer (.ci/run), as the --filter
# expression Scripts/sanitize.sh takes: `sanitizer-suites.sh tsan|asan`
# (`tsan-skip`, `asan-skip`: what is left out of those, for TSAN_SKIP and
# ASAN_SKIP; `tsan-targets`, `asan-targets`: the test targets each tree
# then needs, for TSAN_TEST_TARGETS and ASAN_TEST_TARGETS, so a tree does
# not compile suites it never runs).
# Chosen by what each sanitizer has found and what it costs
# (Docs/RELIABILITY.md, "What CI runs and what it costs"); the whole suite
# under both is `Scripts/sanitize.sh` with no knobs.
set -euo pipefail
# The suites each sanitizer runs (whole suite names), and the whole test
# targets ASan runs besides them.
tsan_suites=(GroupCommitTests SubmitTests WriterLifetimeTests CompactionTests StoreAcknowledgementTests StoreRoomTests
    BatchedSuccessTests ClaimTests DispatcherTests DispatcherLifetimeTests SpoolAdmissionTests RetentionTests
    QueueTailTests MaintenanceGateTests)
asan_targets=(OutboxCollectionsTests OutboxLogTests OutboxTests OutboxAppTests OutboxHTTPTests FuzzCorpusTests)
asan_suites=(LogIdempotencyKeyStoreTests LogIdempotencyKeyStoreSafetyTests QueueBasicsTests QueueCodableTests QueueLimitsTests
    QueuePowerLossTests QueueRetentionTests QueueTailTests MaintenanceGateTests)

# targets_holding SUITE...: the test targets that declare those suites,
# comma-separated (Tests/<target>/…), for the tree's OUTBOX_TEST_TARGETS;
# fails on a suite no target declares, so a renamed suite cannot silently
# drop out of its sanitizer's tree.
targets_holding() {
    local suite files file
    for suite in "$@"; do
        # Not `| head -1`: under pipefail, a grep cut short by it fails the script.
        files=$(grep -rlE "(struct|class|enum|actor) $suite\b" Tests --include='*.swift' || true)
        file=${files%%$'\n'*}
        [ -n "$file" ] || { echo "sanitizer-suites.sh: no test target declares $suite" >&2; return 1; }
        echo "$file" | cut -d/ -f2
    done | sort -u | paste -sd,
}

case "${1:-}" in
tsan-targets)
    targets_holding "${tsan_suites[@]}"
    exit
    ;;
asan-targets)
    (IFS=,; printf '%s,%s\n' "${asan_targets[*]}" "$(targets_holding "${asan_suites[@]}")") | tr ',' '\n' | sort -u | paste -sd,
    exit
    ;;
tsan)
    # Where threads meet in the engine, the store and the dispatcher, one
    # suite for each meeting point, the cheapest that reaches it: the
    # engine's writer thread against appenders (group commit, submit, the
    # writer's lifetime), against compaction and against retention; the
    # store's acknowledgements, room and spool admission; the dispatcher's
    # workers, timers and lifetime; the durable queue's tail against its
    # appenders, and its maintenance turns. TSan has found one thing in this code
    # (a lock it cannot see, now guarded by LockRuleTests), and it runs this
    # code about ten times slower: over every suite it took 29 minutes of
    # CI's 90 on two cores. Left out here, and run by `Scripts/sanitize.sh`
    # with no knobs: the property, fault-injection and crash-model suites
    # (they repeat the same threads thousands of times), the suites that
    # mostly start processes (end-to-end, torture, CLI), and the HTTP
    # transport's, the middleware's and the durable key store's suites —
    # their targets need swift-nio, async-http-client and Hummingbird, most
    # of the TSan tree's build (Docs/RELIABILITY.md; their threads are
    # NIO's event loops, which NIO checks under TSan itself; ours there are
    # a file-body pump and the key store's lock, found by no run so far).
    pattern='\.(%s)/'  # whole suite names: ClaimTests is not IdempotencyClaimTests
    suites=("${tsan_suites[@]}")
    ;;
tsan-skip)
    # Within those suites, the tests that repeat one scenario many times
    # over (a crash at every step of a compaction in five power-loss modes; a
    # store of many entries reopened while it loads): minutes under TSan,
    # no thread the others do not reach. `--skip` patterns, by function name.
    pattern='/(%s)\('
    suites=(crashAtEveryCompactionStep spooledIDIsNotFresh)
    ;;
asan-skip)
    # Within ASan's targets, the suites that repeat one code path thousands
    # of times against a model or at every crash point (the property,
    # fault-injection and crash-model suites): ASan reports a bad access or
    # a leak the first time a path runs, and the unit suites of the same
    # targets run each path; under ASan these took most of the step.
    pattern='\.(%s)/'
    suites=(ModelTests IndexCheckpointModelTests StoreModelTests StoreCheckpointModelTests FaultInjectionTests
        TruncationAndBitFlipTests SpoolCrashTests SpoolScaleTests SpoolOrderTests PreallocationTests)
    ;;
asan)
    # Every suite that runs in this process: memory and lifetimes are the
    # code's, wherever they run. Left out: the suites whose work is in
    # child processes (torture, the CLI, end-to-end servers, PostgreSQL,
    # the Python middlewares) — the ASan torture step runs the CLI under
    # AddressSanitizer itself, and the fuzz targets read every file format —
    # but for the durable key store's suites and the durable queue's, which
    # run in this process (not the queue's crash model, which repeats them,
    # nor its CLI suite).
    pattern="^(%s)\\.|\\.($(IFS='|'; echo "${asan_suites[*]}"))/"  # whole test targets, and those suites
    suites=("${asan_targets[@]}")
    ;;
*)
    echo "usage: $0 tsan|tsan-skip|asan|asan-skip|tsan-targets|asan-targets" >&2
    exit 64
    ;;
esac
# Test ids are "Target.Suite/test()"; the patterns match whole names.
# shellcheck disable=SC2059
(IFS='|'; printf "$pattern\n" "${suites[*]}")
