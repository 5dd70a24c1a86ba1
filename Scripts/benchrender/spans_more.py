"""Inline figures for the prose about crash-recovery, cross-process enqueues,
the drain scripts, `outbox enqueue`, `outbox serve` and PostgreSQL, and the
profiles' shares (benchmark-crash.json, package-benchmark.json, drain-*.json,
outbox-cli.json, server-benchmark*.json, perf-profiles.json)."""
import re

from . import goals
from .data import RenderError, fixed, grouped, k, median, sig, span, span_fixed
from .runs import CRASH, crash_row
from .server import POSTGRES, SERVER, load_rps, postgres_rows

PERF = "perf-profiles.json"


def crash_violations(sources):
    rows = sources[CRASH]["results"].items()
    bad = [row["workload"].str() for row in rows if row["violations"].value]
    if not bad:
        return "0, in every row"
    return f"some, in {', '.join(sorted(set(bad)))}"


def restart_open(sources):
    crash = sources[CRASH]
    big, small = crash_row(crash, "restart.1000000", True), crash_row(crash, "restart.10000", True)
    return (f"{big['restartToOpen']['p50'].num():.0f} ms p50 at 1M, "
            f"{small['restartToOpen']['p50'].num():.0f} ms at 10k")


def crash_open(is_ours):
    def render(sources):
        opens = [crash_row(sources[CRASH], w, is_ours)["restartToOpen"]["p50"].num()
                 for w in ("enqueue.1p", "enqueue.64p")]
        return f"{span_fixed(opens, 0)} ms"
    return render


def spool_mallocs(sources):
    counts = sources["package-benchmark.json"]["spool"]["mallocsPerCall"]
    return (f"{k(counts['inProcess'].num())} in-process, {k(counts['direct'].num())} direct (the open), "
            f"{k(counts['spooled'].num())} spooled")


def spool_process(sources):
    times = sources["outbox-cli.json"]["enqueueProcess"]

    def seconds(field):
        return span_fixed(times[field].nums(), 2) + " s"
    return f"{seconds('spooledSeconds')} spooled and {seconds('directSeconds')} direct"


def drop_server_rate(sources):
    row = sources["drain-cpu.json"]["rows"].items()[0]
    return f"{row['delivered'].num() / row['wallSeconds'].pos():.0f} requests/s"


def latency_points(sources):
    return [p for p in sources["drain-over-latency.json"]["points"].items() if p["latencyMillis"].num() != 0]


def drain_own_work(sources):
    """What a delivery costs beyond its round trip: (drain − N·L/c) · c / N."""
    costs = []
    for point in latency_points(sources):
        entries, concurrency = point["entries"].pos(), point["concurrency"].pos()
        ideal = entries * point["latencyMillis"].num() / 1000 / concurrency
        costs.append((point["seconds"].num() - ideal) * concurrency / entries * 1000)
    return f"{span_fixed(costs, 1)} ms"


def drain_worst_point(sources):
    worst = min(latency_points(sources), key=lambda p: p["shareOfIdeal"].num())
    return f"{worst['latencyMillis'].num()} ms and {worst['concurrency'].num()}"


def threading_server(sources):
    run = sources["drain-over-latency.json"]["threadingServer"]
    ideal = run["entries"].num() * run["latencyMillis"].num() / 1000 / run["concurrency"].pos()
    return (f"of {run['entries'].num()} entries kept {run['concurrency'].num()} in flight and took "
            f"{fixed(run['seconds'].num(), 2)} s (ideal {fixed(ideal, 1)} s)")


def threading_server_nagle(sources):
    return f"{fixed(sources['drain-over-latency.json']['threadingServer']['secondsWithNagle'].num(), 2)} s"


def kills_faults(sources):
    return f"{sources['drain-under-kills.json']['rows'].items()[0]['faults'].num()}"


def kills_round_trips(sources):
    data = sources["drain-under-kills.json"]
    row, latency = data["rows"].items()[0], data["latencyMillis"].num()
    count, concurrency = row["deliveriesAfterLastKill"].num(), row["concurrency"].pos()
    return (f"{count} deliveries after the last kill: {count} × {latency} ms / {concurrency} = "
            f"{fixed(count * latency / 1000 / concurrency, 1)} s")


def stream_rows(sources):
    rows = sources["outbox-cli.json"]["enqueueStreams"]["rows"]
    return (rows.find("command", "outbox enqueue q --count 1000000 --size 10"),
            rows.find("command", "… --count 100000"))


def open_rows(sources):
    rows = sources["outbox-cli.json"]["enqueueStreams"]["rows"]
    return (rows.find("command", "outbox stats of it again (an open from its checkpoint)"),
            rows.find("command", "outbox stats of the 300,000-entry queue, again"))


def stream_bytes_per_entry(sources):
    """The RSS an open of the million-entry queue needs beyond the 300k one, per extra entry."""
    big, small = open_rows(sources)
    extra = (big["maxRSSMegabytes"].num() - small["maxRSSMegabytes"].num()) * 1e6 / 700_000
    return f"{round(extra, -1):.0f} bytes"


def stream_1m_rss(sources):
    return f"{stream_rows(sources)[0]['maxRSSMegabytes'].num()} MB"


def open_1m_rss(sources):
    return f"{open_rows(sources)[0]['maxRSSMegabytes'].num()} MB"


def stream_1m_goal(sources):
    rss = stream_rows(sources)[0]["maxRSSMegabytes"].num()
    return f"the {goals.ENQUEUE_1M_RSS_MB} MB goal for a million entries is " + (
        "met" if rss <= goals.ENQUEUE_1M_RSS_MB else "missed")


def atomic_batch(sources):
    batch = sources["outbox-cli.json"]["enqueueStreams"]["atomicBatch"]
    return f"{grouped(batch['entries'].num())} entries in {batch['seconds'].num()} s in a {batch['measuring'].str()}"


def descriptor_spin(sources):
    off = sources[SERVER]["descriptors"].items()[-1]
    return f"{off['cpuSeconds'].num():.0f} CPU-seconds in a {off['waitSeconds'].num():.0f} s wait"


def stored_1m(sources):
    return sources[SERVER]["stored"].find("keys", 1_000_000)


def stored_key_memory(sources):
    return f"{stored_1m(sources)['residentBytesPerKey'].num():.0f} bytes"


def stored_key_disk(sources):
    stored = stored_1m(sources)
    return f"{stored['logBytes'].num() // stored['keys'].pos()} bytes"


def durable_keys_rps(sources):
    return " → ".join(grouped(r) for r in load_rps(sources[SERVER], "durable keys")) + " rps"


def durable_keys_p50(sources):
    server = sources[SERVER]

    def p50(connections):
        for row in server["load"].items():
            if row["mode"].value == "durable keys" and row["connections"].value == connections:
                return sig(median([r["p50Milliseconds"].num() for r in row["rounds"].items()]), 2)
        server["load"].fail(f"has no element with mode = \"durable keys\" and connections = {connections}")
    return f"p50 {p50(1)} ms at 1 connection, {p50(64)} ms at 64"


def postgres_load(sources):
    node = sources[POSTGRES]["machine"]
    found = re.search(r"load average ([0-9.]+)", node.str())
    if not found:
        node.fail("does not say `load average X`")
    return f"{float(found.group(1)):.0f}"


def postgres_ratios(sources):
    return [rps / memory for _, memory, cells in postgres_rows(sources[POSTGRES]) for rps, _ in cells]


def postgres_cost(sources):
    ratios = postgres_ratios(sources)
    if min(ratios) <= 0:
        sources[POSTGRES]["postgres"].fail("has a median of 0 rps, where a cost needs more")
    return f"{span_fixed([1 / r for r in ratios], 0)}×"


def postgres_shares(sources):
    return span_fixed(postgres_ratios(sources), 2)


def perf_share(sources, arg):
    """One share of a profile, `PROFILE.SITE`: a number is per cent, a pair a range, a string as written."""
    profile, _, site = arg.partition(".")
    if not site:
        raise RenderError(f"Docs/{PERF}: an inline figure `perf {arg}` names no site (`perf PROFILE.SITE`)")
    node = sources[PERF]["profiles"][profile]["shares"][site]
    if isinstance(node.value, str):
        return node.str()
    if isinstance(node.value, list):
        return f"{span(node.nums(), lambda v: sig(v))} %"
    return f"{sig(node.num())} %"


SPANS = {
    "crash-violations": crash_violations,
    "restart-open": restart_open,
    "crash-open-ours": crash_open(True),
    "crash-open-sqlite": crash_open(False),
    "spool-mallocs": spool_mallocs,
    "spool-process": spool_process,
    "drop-server-rate": drop_server_rate,
    "drain-own-work": drain_own_work,
    "drain-worst-point": drain_worst_point,
    "threading-server": threading_server,
    "threading-server-nagle": threading_server_nagle,
    "kills-faults": kills_faults,
    "kills-round-trips": kills_round_trips,
    "stream-bytes-per-entry": stream_bytes_per_entry,
    "stream-1m-rss": stream_1m_rss,
    "open-1m-rss": open_1m_rss,
    "stream-1m-goal": stream_1m_goal,
    "atomic-batch": atomic_batch,
    "descriptor-spin": descriptor_spin,
    "stored-key-memory": stored_key_memory,
    "stored-key-disk": stored_key_disk,
    "durable-keys-rps": durable_keys_rps,
    "durable-keys-p50": durable_keys_p50,
    "postgres-load": postgres_load,
    "postgres-cost": postgres_cost,
    "postgres-shares": postgres_shares,
}
ARG_SPANS = {"perf": perf_share}
