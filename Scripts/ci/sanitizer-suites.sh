#!/usr/bin/env bash
# The test suites CI runs under each sanitizer (.ci/run), as the --filter
# expression Scripts/sanitize.sh takes: `sanitizer-suites.sh tsan|asan`.
# Chosen by what each sanitizer has found and what it costs
# (Docs/RELIABILITY.md, "What CI runs and what it costs"); the whole suite
# under both is `Scripts/sanitize.sh` with no knobs.
set -euo pipefail
case "${1:-}" in
tsan)
    # Where threads meet: the engine's writer, group commit and compaction;
    # the stores' locks and background load; the dispatcher; the HTTP
    # transport's event loops and the middleware. Not the suites that mostly
    # start processes (end-to-end, torture, CLI), which TSan slows tenfold
    # and whose threads are the same code's.
    suites=(GroupCommitTests CompactionTests CompactionCommitPointTests TortureFindingsTests WriterLifetimeTests
        ContractTests PagingTests SubmitTests FaultInjectionTests DispatcherTests DispatcherLifetimeTests
        DispatcherPersistenceTests ClaimTests LogOutboxStoreTests StoreConformanceTests HTTPOutboxHandlerTests
        WireFaultTests IdempotencyMiddlewareTests SlowApplyTests InPlaceWriteTests IndexCheckpointInPlaceTests
        BatchedSuccessTests StoreReopenTests StreamedBodyTests StoreAcknowledgementTests StoreRoomTests
        SpoolTests SpoolAdmissionTests)
    ;;
asan)
    # Every suite that runs in this process: memory and lifetimes are the
    # code's, wherever they run. Left out: the suites whose work is in
    # child processes (torture, the CLI, end-to-end servers, PostgreSQL,
    # the Python middlewares) — the ASan torture step runs the CLI under
    # AddressSanitizer itself, and the fuzz targets read every file format.
    suites=(OutboxLogTests OutboxTests OutboxAppTests OutboxHTTPTests FuzzCorpusTests)
    ;;
*)
    echo "usage: $0 tsan|asan" >&2
    exit 64
    ;;
esac
(IFS='|'; echo "${suites[*]}")
