"""The store against SQLite, its rows of costs: reopening at 1M pending, memory
per entry, mallocs, recovery and the cost of depth (benchmark-results.json,
package-benchmark.json, outbox-cli.json)."""
from . import goals
from .data import fixed, millis, sig, span, span_fixed
from .results import comparison, contender, depth_at, verdict


def reopen_rows(results, cli):
    big, mid = depth_at(results, 1_000_000), depth_at(results, 100_000)
    open_warm, open_cold = big["oursOpenSeconds"].num(), big["oursOpenColdSeconds"].num()
    loaded_warm, loaded_cold = big["oursLoadedSeconds"].num(), big["oursLoadedColdSeconds"].num()
    sqlite_open = big["sqliteOpenSeconds"].num()
    stats = cli["statsReopen"]
    without = stats["withoutCheckpointSeconds"].nums()
    with_ = stats["withCheckpointSeconds"].nums()
    load_without = stats["loadWithoutCheckpointSeconds"].nums()
    first_met = max(open_warm, open_cold) <= goals.FIRST_ENQUEUE_S
    load_met = loaded_warm <= goals.FIRST_ENQUEUE_S
    parts = [
        ("met" if first_met else "missed") + " for the first enqueue",
        f"the full load {'met' if load_met else 'missed'} ({fixed(loaded_warm, 2)} s against "
        f"{goals.FIRST_ENQUEUE_S} s)" + (", faster than SQLite's open" if loaded_warm < sqlite_open else ""),
        ("met" if max(load_without) <= goals.NO_CHECKPOINT_S else "missed") +
        f" without a checkpoint (about {span(load_without, lambda v: sig(v, 2))} s to load)",
    ]
    heap, heap_mid = big["oursHeapBytesPerEntry"].num(), mid["oursHeapBytesPerEntry"].num()
    heap_met = round(heap) <= goals.BYTES_PER_ENTRY
    return [[
        "reopen with 1M pending, after a clean close",
        f"≤ {goals.FIRST_ENQUEUE_S} s with a checkpoint; ≤ {goals.NO_CHECKPOINT_S} s without",
        f"open returns (enqueues answered) after **{millis(open_warm)}** warm / "
        f"**{millis(open_cold)}** cold; the whole queue loaded (claims, reads) after "
        f"**{fixed(loaded_warm, 2)} s / {fixed(loaded_cold, 2)} s**. Without a checkpoint "
        f"(`SCHEDULE` and `INDEX` deleted, then `outbox stats`, process start to exit, three runs): "
        f"{span_fixed(without, 1)} s, against {span_fixed(with_, 1)} s "
        "with them — both include the close, which writes both checkpoints",
        f"SQLite open {fixed(sqlite_open, 2)} s",
        "; ".join(parts),
    ], [
        "memory per pending entry at 1M",
        f"≤ {goals.BYTES_PER_ENTRY} B",
        f"**{heap:.0f} B** (after the load; {heap_mid:.0f} B at 100k)",
        "—",
        verdict(heap_met, "met" + (", barely" if heap > 0.95 * goals.BYTES_PER_ENTRY else ""), "missed"),
    ]]


def malloc_row(package):
    alloc = package["storeAllocations"]
    store = alloc["storeShareOfWrittenEnqueue"].num()
    ack = alloc["recordSuccessWritten"].num()
    met = store <= goals.MALLOC_ENQUEUE and ack <= goals.MALLOC_ACK
    return [
        "mallocs per enqueue / per ack",
        f"≤ {goals.MALLOC_ENQUEUE} / ≤ {goals.MALLOC_ACK}",
        f"**{alloc['enqueueWritten'].num()}** per `written` enqueue ({store} of them the store's), "
        f"{alloc['enqueueDurable'].num()} per `durable` one; **{ack}** per `recordSuccess`",
        "—",
        verdict(met, "met",
                f"missed: {store} in the store against {goals.MALLOC_ENQUEUE} (the derived idempotency "
                f"key costs {alloc['derivedKeyAllocations'].num()}, the reservation and the body's "
                f"parts {alloc['reservationAndPartsAllocations'].num()})"),
    ]


def later_rows(results):
    enq = contender(comparison(results, "durable.1p.enqueue"), "SQLite FULL (GRDB blocking, own thread)")
    ack = contender(comparison(results, "durable.1p.enqueue+ack"), "SQLite FULL (GRDB blocking, own thread)")
    ratios = [enq["oursOverThis"].num(), ack["oursOverThis"].num()]
    recovery = results["recovery"].find("records", 1_000_000)
    warm, cold = recovery["warmMBps"].num(), recovery["coldMBps"].num()
    small, big = depth_at(results, 1000), depth_at(results, 1_000_000)
    durable = [small["oursDurableP50Micros"].pos(), big["oursDurableP50Micros"].num()]
    buffered = [small["oursBufferedMeanMicros"].pos(), big["oursBufferedMeanMicros"].num()]
    cost, cost_buffered = durable[1] / durable[0], buffered[1] / buffered[0]
    return [[
        "durable, 1 producer",
        f"≥ {goals.DURABLE_SQLITE}× SQLite FULL",
        "—",
        f"{ratios[0]:.2f}× SQLite FULL (enqueue), {ratios[1]:.2f}× (enqueue + ack)",
        verdict(min(ratios) >= goals.DURABLE_SQLITE, "met",
                "missed; out of reach on this disk, see below"),
    ], [
        "recovery of the log, 1M records",
        f"≥ {goals.RECOVERY_MBPS} MB/s",
        f"{warm:.0f} MB/s warm, {cold:.0f} MB/s cold",
        "—",
        verdict(min(warm, cold) >= goals.RECOVERY_MBPS, "met", "missed"),
    ], [
        "enqueue cost at 1M pending against 1k",
        f"within {goals.DEPTH_COST}×",
        f"{cost:.2f}× (durable p50, {durable[0]:.0f} → {durable[1]:.0f} µs), "
        f"{cost_buffered:.2f}× (buffered mean)",
        "—",
        verdict(max(cost, cost_buffered) <= goals.DEPTH_COST, "met", "missed"),
    ]]

