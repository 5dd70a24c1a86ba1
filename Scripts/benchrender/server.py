"""`outbox serve` under load (server-benchmark.json, server-benchmark-postgres.json)."""
from . import goals
from .data import RenderError, fixed, grouped, median, span_fixed, table

SERVER = "server-benchmark.json"
POSTGRES = "server-benchmark-postgres.json"

CONNECTIONS = (1, 16, 64)


def median_rps(row):
    """The median round's requests per second, whole requests, as the tool's own
    table prints it (truncated)."""
    rps = int(median([r["requestsPerSecond"].num() for r in row["rounds"].items()]))
    if rps <= 0:
        row["rounds"].fail("has a median of 0 requests per second, where a ratio needs more")
    return rps


def load_rps(server, mode):
    out = []
    for connections in CONNECTIONS:
        for row in server["load"].items():
            if row["mode"].value == mode and row["connections"].value == connections:
                out.append(median_rps(row))
                break
        else:
            server["load"].fail(f"has no element with mode = \"{mode}\" and connections = {connections}")
    return out


def met(flag):
    return "**met**" if flag else "**missed**"


def server_goals(sources):
    server = sources[SERVER]
    on, off = server["descriptors"].items()[0], server["descriptors"].items()[-1]
    answered = on["status"].str().startswith("2")
    spin_off = off["cpuSeconds"].num() > off["waitSeconds"].num() / 2
    stored = server["stored"].find("keys", 1_000_000)
    mid = server["stored"].find("keys", 100_000)
    per_key = stored["residentBytesPerKey"].num()
    restarts = stored["restartSeconds"].nums()
    none, memory, durable = (load_rps(server, m) for m in ("no middleware", "in-memory keys", "durable keys"))
    durable_ratios = [d / m for d, m in zip(durable, memory)]
    middleware = [m / n for m, n in zip(memory, none)]
    rows = [[
        "new request with the descriptor limit reached by idle clients",
        "answered after the idle timeout; no spin",
        f"{met(answered and on['cpuSeconds'].num() < 1)}: {on['status'].str()} after "
        f"{fixed(on['answeredAfter'].num(), 1)} s (two 2 s idle timeouts: the idle clients queued "
        f"ahead of it in the backlog are accepted first), {on['cpuSeconds'].num()} CPU-s"
        + ("; with the limits off the server spins "
           f"({off['cpuSeconds'].num():.0f} CPU-s in a {off['waitSeconds'].num():.0f} s wait)"
           if spin_off else ""),
    ], [
        "slowloris / idle connections", "closed at the head deadline / idle timeout",
        "**met** (tests: `ConnectionHygieneTests`)",
    ], [
        "resident memory per stored key", f"≤ {goals.SERVER_BYTES_PER_KEY} B at 1M",
        f"{met(per_key <= goals.SERVER_BYTES_PER_KEY)}: {per_key:.0f} B at 1M "
        f"({stored['residentBytes'].num() // 2**20} MiB RSS); "
        f"{stored['logBytes'].num() // stored['keys'].pos()} B/key on disk",
    ], [
        "restart, stored keys", f"≤ {goals.SERVER_RESTART_S} s at 1M",
        f"{met(max(restarts) <= goals.SERVER_RESTART_S)}: {span_fixed(restarts, 2)} s at 1M, "
        f"{fixed(median(mid['restartSeconds'].nums()), 2)} s at 100k",
    ], [
        "durable ÷ in-memory rps", f"≥ {goals.SERVER_DURABLE_RATIO}",
        f"{met(min(durable_ratios) >= goals.SERVER_DURABLE_RATIO)}: "
        f"{', '.join(fixed(r, 2) for r in durable_ratios)} at {connections_text()} "
        f"({' / '.join(grouped(d) for d in durable)} rps against "
        f"{' / '.join(grouped(m) for m in memory)})",
    ], [
        "middleware overhead (in-memory ÷ no middleware)", f"≥ {goals.SERVER_MIDDLEWARE_RATIO}",
        f"{met(min(middleware) >= goals.SERVER_MIDDLEWARE_RATIO)}: {', '.join(fixed(r, 2) for r in middleware)} "
        f"({' / '.join(grouped(n) for n in none)} rps without it), where wrk, the server and "
        "other jobs share 2 cores",
    ]]
    return table(["", "goal", "now"], rows)


def connections_text():
    return ", ".join(str(c) for c in CONNECTIONS[:-1]) + f" and {CONNECTIONS[-1]} connections"


def postgres(sources):
    data = sources[POSTGRES]
    rows = []
    for count, memory, cells in postgres_rows(data):
        shares = " / ".join(fixed(rps / memory, 2) for rps, _ in cells)
        rows.append([f"{count}", f"{memory}", " / ".join(f"{rps}" for rps, _ in cells), shares,
                     f"{sum(errors for _, errors in cells)}"])
    names = " / ".join(str(p) for p in postgres_processes(data))
    header = ["connections", "in-memory keys, 1 process: rps", f"PostgreSQL keys, {names} processes: rps",
              "÷ in-memory", "errors (PostgreSQL)"]
    return table(header, rows, "rrrrr")


def postgres_processes(data):
    return sorted({row["processes"].num() for row in data["postgres"].items() if row["processes"].num() > 0})


def postgres_rows(data):
    """Per connection count: (connections, the in-memory process's median rps,
    [(median rps, errors) for each number of PostgreSQL processes])."""
    by_key = {}
    for row in data["postgres"].items():
        by_key[(row["connections"].num(), row["processes"].num())] = row
    connections = sorted({c for c, _ in by_key})
    processes = sorted({p for _, p in by_key if p > 0})
    if not connections or not processes:
        data["postgres"].fail("has no PostgreSQL rows")
    out = []
    for count in connections:
        if (count, 0) not in by_key:
            data["postgres"].fail(f"has no in-memory row (processes = 0) at {count} connections")
        cells = []
        for process in processes:
            row = by_key.get((count, process))
            if row is None:
                raise RenderError(f"{data.file}: field `postgres` has no element with connections = "
                                  f"{count} and processes = {process}")
            cells.append((median_rps(row), sum(r["errors"].num() for r in row["rounds"].items())))
        out.append((count, median_rps(by_key[(count, 0)]), cells))
    return out
