"""The engine against RocksDB ("engine-rocksdb" table): outbox-compare's engine
rows (benchmark-engine.json), `OutboxLog.put` beside `db_bench fillseq` and the
raw loops."""
from . import goals
from .data import k, sig, table
from .results import comparison, ours, verdict

ENGINE = "benchmark-engine.json"


def others(comp, prefix):
    """The rows of `comp` whose names start with `prefix`."""
    return [item for item in comp["results"].items() if item["name"].str().startswith(prefix)]


def peer_cell(row):
    times = row["oursOverThis"].num()
    return f"{row['name'].str()}: {k(row['throughput'].num())}/s (p50 {sig(row['p50Micros'].num())} µs; ours {times:.2f}×)"


def engine_row(results, ident, workload, goal, judge):
    comp = comparison(results, ident)
    me = ours(comp)
    rocks, loops = others(comp, "RocksDB"), others(comp, "raw")
    return [
        workload,
        goal,
        f"**{k(me['throughput'].num())}/s** (p50 {sig(me['p50Micros'].num())} µs)",
        "; ".join(peer_cell(row) for row in rocks + loops) or "—",
        judge(me, rocks, loops),
    ]


def ratio_of(rows):
    return rows[0]["oursOverThis"].num() if rows else None


def engine_rocksdb(sources):
    results = sources[ENGINE]

    def written(me, rocks, loops):
        rate, times = me["throughput"].num(), ratio_of(rocks)
        if times is None:
            return "RocksDB not measured"
        return verdict(rate >= goals.ROCKSDB_WRITTEN_RATE and times >= goals.ROCKSDB_WRITTEN_RATIO, "met",
                       f"missed: {rate / goals.ROCKSDB_WRITTEN_RATE:.2f}× the rate, "
                       f"{times / goals.ROCKSDB_WRITTEN_RATIO:.2f}× the ratio")

    def durable_one(me, rocks, loops):
        times = ratio_of(rocks)
        preallocated = [row for row in loops if "preallocated" in row["name"].str()]
        to_loop = ratio_of(preallocated)
        if times is None or to_loop is None:
            return "not measured"
        return verdict(times >= goals.ROCKSDB_DURABLE_RATIO and to_loop >= goals.ROCKSDB_PREALLOCATED_LOOP, "met",
                       f"missed: {times:.2f}× RocksDB, {to_loop:.2f}× the preallocated loop")

    def durable_many(me, rocks, loops):
        times = ratio_of(rocks)
        if times is None:
            return "RocksDB not measured"
        return verdict(times >= goals.ROCKSDB_DURABLE_RATIO, "met", f"missed: {times:.2f}× RocksDB")

    rows = [
        engine_row(results, "engine.written.1w.append", "`written`, 1 writer",
                   f"≥ {k(goals.ROCKSDB_WRITTEN_RATE)}/s, ≥ {goals.ROCKSDB_WRITTEN_RATIO}× RocksDB --sync=0", written),
        engine_row(results, "engine.durable.1w.append", "`durable`, 1 writer",
                   f"≥ {goals.ROCKSDB_DURABLE_RATIO}× RocksDB --sync=1, ≥ {goals.ROCKSDB_PREALLOCATED_LOOP}× the preallocated loop",
                   durable_one),
        engine_row(results, "engine.durable.64w.append", "`durable`, 64 writers",
                   f"≥ {goals.ROCKSDB_DURABLE_RATIO}× RocksDB --sync=1 with 64 threads", durable_many),
    ]
    header = ["engine append, 16-byte keys, 256-byte values", "goal", "ours (OutboxLog)", "peers and limits", ""]
    return table(header, rows) + (
        f"\n\nFrom [`benchmark-engine.md`](benchmark-engine.md): throughput is the median of "
        f"{results['settings']['rounds'].num():.0f} rounds; ours ÷ a peer is the median of the per-round ratios.")
