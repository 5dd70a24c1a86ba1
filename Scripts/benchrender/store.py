"""The store against SQLite, its throughput rows: the engine's `written` append,
enqueues, and the drain (benchmark-results.json, package-benchmark.json). The
rows of costs (reopen, memory, mallocs, recovery, depth) are in store_costs.py."""
from . import goals
from .data import grouped, k, median, short_of, sig, table
from .results import (CLI, PACKAGE, RESULTS, comparison, contender, ours,
                      shown_k, verdict)
from .store_costs import later_rows, malloc_row, reopen_rows


def store_goals(sources):
    results, package, cli = sources[RESULTS], sources[PACKAGE], sources[CLI]
    rows = [engine_written_row(package)]
    rows += written_rows(results)
    rows += durable_rows(results)
    rows += drain_rows(results, first=True)
    rows += reopen_rows(results, cli)
    rows.append(malloc_row(package))
    rows += later_rows(results)
    rows += drain_rows(results, first=False)
    header = ["workload", "goal", "ours", "peers and limits", ""]
    return table(header, rows)


def engine_written_row(package):
    engine = package["engineWritten1p"]
    runs = engine["runsPerSecond"].nums()
    rate = median(runs)
    shown = shown_k(rate)
    return [
        f"engine `{engine['benchmark'].str()}` (package-benchmark)",
        f"≥ {k(goals.ENGINE_WRITTEN)}/s (≥ 0.6× the raw write loop)",
        f"**{k(rate)}/s** p50 ({sig(engine['p50Micros'].num(), 2)} µs) in three runs "
        f"({', '.join(k(r) for r in runs)}); {engine['mallocs'].num()} mallocs per append",
        "—",
        verdict(shown >= goals.ENGINE_WRITTEN, "met",
                f"missed: about {shown / goals.ENGINE_WRITTEN:.1f}× the rate"),
    ]


def written_rows(results):
    rows = []
    enq = comparison(results, "written.1p.enqueue")
    me, blocking = ours(enq), contender(enq, "SQLite NORMAL (GRDB blocking, own thread)")
    asynch = contender(enq, "SQLite NORMAL (GRDB async)")
    rate, times_blocking = me["throughput"].num(), blocking["oursOverThis"].num()
    rows.append([
        "store enqueue `written`, 1 producer",
        f"≥ {k(goals.WRITTEN_RATE)}/s, ≥ {goals.WRITTEN_RATIO}× SQLite NORMAL",
        f"**{k(rate)}/s** (p50 {sig(me['p50Micros'].num())} µs)",
        f"SQLite NORMAL {k(blocking['throughput'].num())}/s blocking (**{times_blocking:.1f}×**), "
        f"{k(asynch['throughput'].num())}/s async ({asynch['oursOverThis'].num():.1f}×)",
        verdict(rate >= goals.WRITTEN_RATE and times_blocking >= goals.WRITTEN_RATIO, "met",
                f"missed: {rate / goals.WRITTEN_RATE:.2f}× the rate, "
                f"{times_blocking / goals.WRITTEN_RATIO:.2f}× the ratio"),
    ])
    ack = comparison(results, "written.1p.enqueue+ack")
    me, blocking = ours(ack), contender(ack, "SQLite NORMAL (GRDB blocking, own thread)")
    asynch = contender(ack, "SQLite NORMAL (GRDB async)")
    shown = round(blocking["oursOverThis"].num(), 1)
    rows.append([
        "store enqueue + ack `written`, 1 producer",
        f"≥ {goals.ACK_RATIO}× SQLite NORMAL",
        f"**{k(me['throughput'].num())} ops/s** (p50 {sig(me['p50Micros'].num())} µs)",
        f"SQLite NORMAL {k(blocking['throughput'].num())} ops/s blocking (**{shown:.1f}×**), "
        f"{k(asynch['throughput'].num())} ops/s async ({asynch['oursOverThis'].num():.1f}×)",
        verdict(blocking["oursOverThis"].num() >= goals.ACK_RATIO, "met",
                f"missed by {short_of(blocking['oursOverThis'].num(), goals.ACK_RATIO)} (blocking)"),
    ])
    return rows


def durable_rows(results):
    enq = comparison(results, "durable.1p.enqueue")
    me = ours(enq)
    prealloc = contender(enq, "ours, segments zero-filled 1 MiB ahead (preallocation, off by default)")
    loop = contender(enq, "raw write+fdatasync loop")
    preloop = contender(enq, "raw overwrite+fdatasync, preallocated file")
    full = contender(enq, "SQLite FULL (GRDB blocking, own thread)")
    to_loop = loop["oursOverThis"].num()
    one = [
        "store enqueue `durable`, 1 producer",
        f"≥ {goals.DURABLE_LOOP}× the raw write+fdatasync loop",
        f"**{grouped(me['throughput'].num())}/s** (p50 {me['p50Micros'].num():.0f} µs); "
        f"preallocated, ours does {grouped(prealloc['throughput'].num())}/s",
        f"**{to_loop:.2f}×** the append loop ({grouped(loop['throughput'].num())}/s), "
        f"{preloop['oursOverThis'].num():.2f}× the preallocated loop "
        f"({grouped(preloop['throughput'].num())}/s); "
        f"{full['oursOverThis'].num():.2f}× SQLite FULL ({grouped(full['throughput'].num())}/s)",
        verdict(to_loop >= goals.DURABLE_LOOP, "met",
                f"missed by {short_of(to_loop, goals.DURABLE_LOOP)}"),
    ]
    many = comparison(results, "durable.64p.enqueue")
    me = ours(many)
    full = contender(many, "SQLite FULL (GRDB async)")
    group = contender(many, "raw: 64 records per write+fdatasync")
    rate = me["throughput"].num()
    shown_rate = shown_k(rate)
    to_full = full["oursOverThis"].num()
    ratio_met = to_full >= goals.DURABLE_64P_RATIO
    return [one, [
        "store enqueue `durable`, 64 producers",
        f"≥ {k(goals.DURABLE_64P_RATE)}/s; ≥ {goals.DURABLE_64P_RATIO}× SQLite FULL",
        f"**{k(rate)}/s**",
        f"SQLite FULL {k(full['throughput'].num())}/s (**{to_full:.1f}×**); "
        f"the raw loop, 64 records per sync: {grouped(group['throughput'].num())}/s",
        verdict(rate >= goals.DURABLE_64P_RATE and ratio_met, "met",
                (f"missed by {short_of(shown_rate, goals.DURABLE_64P_RATE)}" if rate < goals.DURABLE_64P_RATE
                 else "the rate met") + ("; the ratio met" if ratio_met else "; the ratio missed")),
    ]]


def drain_rows(results, first):
    drain = results["drain"]
    sqlite = contender(drain, "SQLite FULL: batch claim + DELETE per entry, 4 workers")
    if first:
        me = ours(drain)
        rate = me["throughput"].num()
        rounds = ", ".join(k(r) for r in me["roundThroughputs"].nums())
        return [[
            "drain, no-op handler, default settings",
            f"≥ {k(goals.DRAIN)}/s",
            f"**{k(rate)}/s** (rounds {rounds})",
            f"SQLite FULL {k(sqlite['throughput'].num())}/s "
            f"(ours: {sqlite['oursOverThis'].num():.1f}×)",
            verdict(rate >= goals.DRAIN, "met", f"missed: {rate / goals.DRAIN:.2f}×"),
        ]]
    four = contender(drain, "ours: dispatcher, 4 concurrent, success durable")
    many = contender(drain, "ours: dispatcher, 64 concurrent, success durable")
    rates = [four["throughput"].num(), many["throughput"].num()]
    return [[
        "drain with durable acknowledgements",
        f"≥ {k(goals.DRAIN)} entries/s",
        f"{k(rates[0])}/s (4 concurrent), {k(rates[1])}/s (64 concurrent)",
        f"SQLite FULL {k(sqlite['throughput'].num())}/s",
        verdict(min(rates) >= goals.DRAIN, "met", "missed"),
    ]]

