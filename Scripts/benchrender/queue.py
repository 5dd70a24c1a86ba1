"""The durable queue against the queues an app would otherwise embed ("queue"
table): outbox-compare's queue rows (benchmark-queue.json), OutboxQueue's
DurableQueue beside a Tape-style file, a SQLite table and RocksDB keys."""
from . import goals
from .data import k, sig, table
from .results import comparison, ours, verdict

QUEUE = "benchmark-queue.json"
PEERS = [("Tape", "Tape-style file"), ("SQLite", "SQLite (WAL)"), ("RocksDB", "RocksDB")]
ROWS = [
    ("queue.written.produce", "`written`, 1 producer, no consumer", "rate", goals.QUEUE_PRODUCE_RATE),
    ("queue.written.consume", "`written`, 1 consumer of a filled queue (page cache)", "rate", goals.QUEUE_CONSUME_RATE),
    ("queue.written.1p1c", "`written`, 1 producer, 1 consumer", "rate", None),
    ("queue.durable.1p1c", "`durable`, 1 producer, 1 consumer", "rate", None),
    ("queue.written.8p4c", "`written`, 8 producers, 4 consumers", "rate", None),
    ("queue.durable.8p4c", "`durable`, 8 producers, 4 consumers", "rate", None),
    ("queue.written.latency", "`written`, append to consume at 1k/s", "latency", goals.QUEUE_LATENCY_P99),
    ("queue.durable.latency", "`durable`, append to consume at 1k/s", "latency", None),
]


def peer(comp, prefix):
    for item in comp["results"].items():
        if item["name"].str().startswith(prefix) and not item["isOurs"].value:
            return item
    return None


def latency_ratio(me, other):
    """How many times lower our p99 is than the peer's."""
    return other["p99Micros"].num() / me["p99Micros"].pos()


def rate_cell(row, times=None):
    text = f"{k(row['throughput'].num())}/s"
    return text if times is None else f"{text} (ours {times:.2f}×)"


def latency_cell(row, times=None):
    text = f"p50 {sig(row['p50Micros'].num())} µs, p99 {sig(row['p99Micros'].num())} µs"
    return text if times is None else f"{text} (ours {times:.2f}× lower)"


def goal_text(kind, target):
    ratios = ", ".join(f"≥ {n}× {p}" for p, n in goals.QUEUE_PEER_RATIOS)
    if kind == "latency":
        own = f"p99 ≤ {target} µs; " if target else ""
        return own + "p99 " + ", ".join(f"≥ {n}× lower than {p}" for p, n in goals.QUEUE_PEER_RATIOS)
    own = f"≥ {k(target)}/s, " if target else ""
    return own + ratios


def judge(kind, target, me, comp):
    """The row's verdict: met, or what fell short and by how much."""
    short = []
    if kind == "rate" and target and me["throughput"].num() < target:
        short.append(f"{me['throughput'].num() / target:.2f}× the rate")
    if kind == "latency" and target and me["p99Micros"].num() > target:
        short.append(f"p99 {me['p99Micros'].num() / target:.1f}× the bound")
    for prefix, needed in goals.QUEUE_PEER_RATIOS:
        other = peer(comp, prefix)
        if other is None:
            short.append(f"{prefix} not measured")
            continue
        times = latency_ratio(me, other) if kind == "latency" else other["oursOverThis"].num()
        if times < needed:
            short.append(f"{times:.2f}× {prefix}")
    return verdict(not short, "met", "missed: " + ", ".join(short))


def queue_table(sources):
    results = sources[QUEUE]
    rows = []
    for ident, workload, kind, target in ROWS:
        comp = comparison(results, ident)
        me = ours(comp)
        cell = latency_cell if kind == "latency" else rate_cell
        cells = [workload, goal_text(kind, target), f"**{cell(me)}**"]
        for prefix, _ in PEERS:
            other = peer(comp, prefix)
            if other is None:
                cells.append("—")
                continue
            times = latency_ratio(me, other) if kind == "latency" else other["oursOverThis"].num()
            cells.append(f"{other['name'].str()}: {cell(other, times)}")
        cells.append(judge(kind, target, me, comp))
        rows.append(cells)
    header = ["256-byte elements", "goal", "ours (DurableQueue)"] + [name for _, name in PEERS] + [""]
    return table(header, rows) + (
        f"\n\nFrom [`benchmark-queue.md`](benchmark-queue.md): throughput is the median of "
        f"{results['settings']['rounds'].num():.0f} rounds; ours ÷ a peer is the median of the per-round ratios; "
        "latencies are over every element of every round.")
