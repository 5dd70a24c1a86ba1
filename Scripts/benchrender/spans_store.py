"""Inline figures for the prose about the store (benchmark-results.json,
package-benchmark.json, outbox-cli.json, outbox-compare-preallocation.json):
each function renders the text of one `<!-- rendered: NAME -->…<!-- /rendered -->`
span in a sentence of BENCHMARKS.md."""
import math

from .data import fixed, grouped, k, sig, span, span_fixed
from .results import CLI, PACKAGE, RESULTS, comparison, contender, contender_in, depth_at, ours
from .runs import PREALLOC, prealloc_gains, prealloc_restart_costs, prealloc_to_raw

LOOP = "raw write+fdatasync loop"
PRELOOP = "raw overwrite+fdatasync, preallocated file"


def durable_1p(sources):
    return comparison(sources[RESULTS], "durable.1p.enqueue")


def steady_runs(sources):
    return sources[PREALLOC]["steadyState"]["runs"].items()


def machine(sources):
    node = sources[RESULTS]["machine"]
    return (f"{node['processors'].num()} vCPUs ({node['cpu'].str()}), "
            f"{node['memoryBytes'].num() / 2**30:.1f} GiB, {node['kernel'].str()}")


def raw_sync_rate(sources):
    """Every raw write+fdatasync append loop of the current runs, lowest to highest."""
    results = sources[RESULTS]
    rates = [contender_in(results, c, LOOP)["throughput"].num()
             for c in ("durable.1p.enqueue", "durable.1p.enqueue+ack")]
    rates += [run["rawAppendLoop"].num() for run in steady_runs(sources)]
    return f"{span(rates, k)} syncs/s"


def preloop_speedup(sources):
    """The raw preallocated overwrite loop ÷ the raw append loop, in every run that has both."""
    enq = durable_1p(sources)
    ratios = [contender(enq, PRELOOP)["throughput"].num() / contender(enq, LOOP)["throughput"].pos()]
    ratios += [run["rawPreallocatedLoop"].num() / run["rawAppendLoop"].pos() for run in steady_runs(sources)]
    return f"{span_fixed(ratios, 2)}×"


def json_depth(sources):
    results = sources[RESULTS]
    low, high = depth_at(results, 1000), depth_at(results, 100_000)
    small, big = low["jsonMeanMicros"].pos(), high["jsonMeanMicros"].num()
    depths = high["depth"].num() / low["depth"].num()
    cost = big / small
    return (f"{cost:.0f}× the cost for {depths:.0f}× the depth ({small:.0f} → {big:.0f} µs from 1k "
            f"to 100k pending; cost ∝ depth^{math.log(cost) / math.log(depths):.2f})")


def our_rate(ident, unit):
    """Our throughput in the comparison `ident`, in thousands: `85.4k/s`."""
    return lambda sources: f"{k(ours(comparison(sources[RESULTS], ident))['throughput'].num())}{unit}"


def raw_write_p50(sources):
    raw = contender_in(sources[RESULTS], "written.1p.enqueue", "raw write loop (no sync)")
    return f"{sig(raw['p50Micros'].num(), 2)} µs"


def engine_written_p50(sources):
    return f"{sig(sources[PACKAGE]['engineWritten1p']['p50Micros'].num(), 2)} µs"


def ack_ratio(sources):
    blocking = contender_in(sources[RESULTS], "written.1p.enqueue+ack", "SQLite NORMAL (GRDB blocking, own thread)")
    return f"{blocking['oursOverThis'].num():.1f}×"


def allocations(sources):
    return sources[PACKAGE]["storeAllocations"]


def store_mallocs(sources):
    return f"{allocations(sources)['storeShareOfWrittenEnqueue'].num()}"


def reservation_mallocs(sources):
    return f"{allocations(sources)['reservationAndPartsAllocations'].num()}"


def reservation_previous(sources):
    cost = allocations(sources)["reservationCost"]
    return (f"{cost['previousEnqueueWritten'].num()}, {cost['previousEnqueueDurable'].num()} and "
            f"{cost['previousRecordSuccessWritten'].num()}")


def reservation_p50s(sources):
    cost = allocations(sources)["reservationCost"]
    return cost["writtenEnqueueP50Micros"].num(), cost["previousWrittenEnqueueP50Micros"].pos()


def reservation_p50_share(sources):
    now, before = reservation_p50s(sources)
    return f"{round((now / before - 1) * 100)} %"


def reservation_p50(sources):
    now, before = reservation_p50s(sources)
    return f"{fixed(now, 2)} µs against {fixed(before, 2)} µs"


def durable_ratio(name):
    return lambda sources: f"{contender(durable_1p(sources), name)['oursOverThis'].num():.2f}×"


def durable_p50s(sources):
    enq = durable_1p(sources)
    return (f"{ours(enq)['p50Micros'].num():.0f} µs against the append loop's "
            f"{contender(enq, LOOP)['p50Micros'].num():.0f} µs")


def producers_lead(sources):
    rows = sources[RESULTS]["producers"]
    first, second = rows.items()[0], rows.items()[1]
    last, before_last = rows.items()[-1], rows.items()[-2]

    def lead(row):
        return f"{row['oursOverSQLite'].num():.1f}×"
    return (f"{lead(first)} at {first['producers'].num()} producer, {lead(second)} at "
            f"{second['producers'].num()}, {lead(before_last)} at {before_last['producers'].num()}, "
            f"{lead(last)} at {last['producers'].num()}")


def preloop_vs_loop(sources):
    enq = durable_1p(sources)
    return (f"{grouped(contender(enq, PRELOOP)['throughput'].num())}/s against "
            f"{grouped(contender(enq, LOOP)['throughput'].num())}/s")


def prealloc_gain(sources):
    return f"{span_fixed(prealloc_gains(sources), 2)}×"


def prealloc_p50_saving(sources):
    saved = [run["oursP50Micros"].num() - run["preallocatedP50Micros"].num() for run in steady_runs(sources)]
    return f"{span_fixed(saved, 0)} µs"


def prealloc_restart_cost(sources):
    return f"{span_fixed(prealloc_restart_costs(sources), 0)} ms"


def prealloc_restart_p95(sources):
    row = sources[PREALLOC]["underKills"]["rows"].find("workload", "restart at 1M pending")
    return (f"{row['preallocatedRestartP95Millis'].num():.0f} ms against the plain store's "
            f"{row['plainRestartP95Millis'].num():.0f} ms")


def prealloc_to_raw_span(sources):
    return f"{span_fixed(prealloc_to_raw(sources), 2)}×"


def raw_64_rate(sources):
    group = contender_in(sources[RESULTS], "durable.64p.enqueue", "raw: 64 records per write+fdatasync")
    return f"{grouped(group['throughput'].num())}/s"


def drain_rate(sources):
    return f"{k(ours(sources[RESULTS]['drain'])['throughput'].num())}/s"


def loaded_1m(sources):
    return f"{fixed(depth_at(sources[RESULTS], 1_000_000)['oursLoadedSeconds'].num(), 2)} s"


def first_enqueue_1m(sources):
    big = depth_at(sources[RESULTS], 1_000_000)
    times = [big["oursOpenSeconds"].num() * 1000, big["oursOpenColdSeconds"].num() * 1000]
    return f"{span_fixed(times, 0)} ms"


def stats_without_checkpoint(sources):
    return f"{span_fixed(sources[CLI]['statsReopen']['withoutCheckpointSeconds'].nums(), 1)} s"


SPANS = {
    "machine": machine,
    "raw-sync-rate": raw_sync_rate,
    "preloop-speedup": preloop_speedup,
    "json-depth": json_depth,
    "written-rate": our_rate("written.1p.enqueue", "/s"),
    "raw-write-p50": raw_write_p50,
    "engine-written-p50": engine_written_p50,
    "ack-rate": our_rate("written.1p.enqueue+ack", " ops/s"),
    "ack-ratio": ack_ratio,
    "store-mallocs": store_mallocs,
    "reservation-mallocs": reservation_mallocs,
    "reservation-previous": reservation_previous,
    "reservation-p50-share": reservation_p50_share,
    "reservation-p50": reservation_p50,
    "durable-to-loop": durable_ratio(LOOP),
    "durable-to-preloop": durable_ratio(PRELOOP),
    "durable-p50s": durable_p50s,
    "producers-lead": producers_lead,
    "preloop-vs-loop": preloop_vs_loop,
    "prealloc-gain": prealloc_gain,
    "prealloc-p50-saving": prealloc_p50_saving,
    "prealloc-restart-cost": prealloc_restart_cost,
    "prealloc-restart-p95": prealloc_restart_p95,
    "prealloc-to-raw": prealloc_to_raw_span,
    "durable-64p-rate": our_rate("durable.64p.enqueue", "/s"),
    "raw-64-rate": raw_64_rate,
    "drain-rate": drain_rate,
    "loaded-1m": loaded_1m,
    "first-enqueue-1m": first_enqueue_1m,
    "stats-without-checkpoint": stats_without_checkpoint,
}
