"""The engine's own targets (ARCHITECTURE.md, "How the design reaches its speed
goals") against the figures that measure them: the engine table's rows
(package-benchmark.json) and outbox-compare's (benchmark-results.json)."""
from . import goals
from .data import k, median, table, times
from .results import PACKAGE, RESULTS, comparison, contender, shown_k


def engine_row(package, name):
    return package["engine"]["rows"].find("benchmark", name)


def engine_goals(sources):
    package, results = sources[PACKAGE], sources[RESULTS]
    enq = comparison(results, "durable.1p.enqueue")
    to_loop = contender(enq, "raw write+fdatasync loop")["oursOverThis"].num()
    durable64 = engine_row(package, "append.256B.durable.64p")["perSecond"].num()
    written64 = engine_row(package, "append.256B.written.64p")["perSecond"].num()
    written1 = median(package["engineWritten1p"]["runsPerSecond"].nums())
    buffered = engine_row(package, "append.256B.buffered.64p")
    buffered_p50, buffered_p25 = buffered["perSecond"].num(), buffered["p25PerSecond"].num()
    recovery = results["recovery"].find("records", 1_000_000)
    warm, cold = recovery["warmMBps"].num(), recovery["coldMBps"].num()

    def met(flag):
        return "met" if flag else "missed"

    rows = [[
        "`durable`, 1 producer", f"within {round((1 - goals.ENGINE_DURABLE_LOOP) * 100)} % of the raw loop",
        f"{times(to_loop)} the raw loop (the store's, `durable.1p.enqueue` above)",
        met(to_loop >= goals.ENGINE_DURABLE_LOOP),
    ], [
        "`durable`, 64 producers", f"≥ {k(goals.ENGINE_DURABLE_64P)} appends/s",
        f"{k(durable64)}/s (`append.256B.durable.64p`; CPU-bound as above)",
        met(shown_k(durable64) >= goals.ENGINE_DURABLE_64P),
    ], [
        "`written`", f"≥ {k(goals.ENGINE_WRITTEN_RATE)} appends/s",
        f"{k(written64)}/s at 64 producers, {k(written1)}/s at one",
        met(max(shown_k(written64), shown_k(written1)) >= goals.ENGINE_WRITTEN_RATE),
    ], [
        "`buffered`", f"≥ {k(goals.ENGINE_BUFFERED_RATE)} appends/s",
        f"{k(buffered_p50)}/s p50 at 64 producers ({k(buffered_p25)}/s at p25)",
        met(shown_k(buffered_p50) >= goals.ENGINE_BUFFERED_RATE),
    ], [
        "recovery", f"≥ {goals.ENGINE_RECOVERY_MBPS} MB/s",
        f"{warm:.0f} MB/s warm, {cold:.0f} MB/s cold (`outbox-compare`'s recovery, 1M records)",
        met(min(warm, cold) >= goals.ENGINE_RECOVERY_MBPS),
    ]]
    return table(["256-byte records", "target", "now", ""], rows)
