"""The drain scripts' tables and `outbox enqueue`'s (drain-cpu.json,
drain-over-latency.json, drain-under-kills.json, outbox-cli.json)."""
from .data import source_note, grouped, median, table, fixed


def drain_cpu(sources):
    data = sources["drain-cpu.json"]
    rows = []
    for row in data["rows"].items():
        rows.append([
            row["server"].str(),
            f"{fixed(row['cpuSeconds'].num(), 2)} s ({fixed(row['userSeconds'].num(), 2)} + "
            f"{fixed(row['sysSeconds'].num(), 2)})",
            f"{fixed(row['wallSeconds'].num(), 1)} s",
            grouped(row["delivered"].num()),
            row["interrupted"].str(),
            f"{row['emptyBodies'].num()} / {row['conflicts'].num()}",
        ])
    header = ["server", "drain CPU, median of 5 (user + sys)", "wall, median", "delivered",
              "interrupted (resent)", "empty bodies / 422 on the server"]
    return table(header, rows) + "\n\n" + source_note(data, "drain-cpu.json")


def drain_cpu_verdict(sources):
    data = sources["drain-cpu.json"]
    ratios = data["ratiosPairByPair"].nums()
    goal = data["goalRatio"].num()
    middle = median(ratios)
    return (f"**Ratio drops / no drops, pair by pair: {', '.join(fixed(r, 2) for r in ratios)} —\n"
            f"median {fixed(middle, 2)}× (target ≤ {goal}×): {'met' if middle <= goal else 'missed'}.**")


def drain_latency(sources):
    data = sources["drain-over-latency.json"]
    rows = []
    for point in data["points"].items():
        latency = point["latencyMillis"].num()
        entries, concurrency = point["entries"].num(), point["concurrency"].pos()
        if latency == 0:
            ideal, share = "—", "— (server-bound)"
        else:
            ideal = fixed(entries * latency / 1000 / concurrency, 2)
            share = fixed(point["shareOfIdeal"].num(), 2)
        rows.append([f"{latency} ms", f"{concurrency}", f"{entries}", fixed(point["seconds"].num(), 2),
                     ideal, f"{point['entriesPerSecond'].num()}", share])
    header = ["latency", "concurrency", "entries", "drain (s)", "ideal N·L/c (s)", "entries/s",
              "share of ideal"]
    return table(header, rows, "rrrrrrr") + "\n\n" + source_note(data, "drain-over-latency.json")


def drain_latency_goal(sources):
    data = sources["drain-over-latency.json"]
    shares = [p["shareOfIdeal"].num() for p in data["points"].items() if p["latencyMillis"].num() != 0]
    goal = data["goalShareOfIdeal"].num()
    met = min(shares) >= goal
    return (f"**Goal: ≥ {goal} of the ideal wherever the server is not the bound — "
            f"{'met at every point' if met else 'missed'} ({fixed(min(shares), 2)}–{fixed(max(shares), 2)}).**")


def drain_latency_large(sources):
    large = sources["drain-over-latency.json"]["large"]
    entries, latency = large["entries"].num(), large["latencyMillis"].num()
    concurrency, seconds = large["concurrency"].pos(), large["seconds"].pos()
    ideal = entries * latency / 1000 / concurrency
    goal = large["goalSeconds"].num()
    return table(["entries", "latency", "concurrency", "drain", "ideal", "goal"], [[
        grouped(entries), f"{latency} ms", f"{concurrency}",
        f"**{fixed(seconds, 2)} s** ({large['entriesPerSecond'].num()} entries/s)",
        f"{fixed(ideal, 2)} s ({fixed(ideal / seconds, 2)})",
        f"≤ {goal} s: {'met' if seconds <= goal else 'missed'}",
    ]], "rrrrrl")


def drain_kills(sources):
    data = sources["drain-under-kills.json"]
    entries = data["entries"].num()
    rows = []
    for row in data["rows"].items():
        name = f"`{row['drain'].str()}`"
        if row.get("label") is not None:
            name += f" {row['label'].str()}"
        left, applied = row["left"].num(), row["appliedOnce"].num()
        if row.get("secondsAfterLastKill") is not None:
            after = f"**{fixed(row['secondsAfterLastKill'].num(), 1)} s**"
        else:
            after = f"not done at its {row['timeoutSeconds'].num()} s timeout"
        if applied == entries:
            once = f"yes ({grouped(applied)} of {grouped(entries)}"
            if row.get("repeatsAnsweredFromKey") is not None:
                once += f"; {row['repeatsAnsweredFromKey'].num()} repeats answered from the key"
            once += ")"
        else:
            once = f"no loss, no duplicate: {applied} applied once, {left} still queued"
        rows.append([name, after, f"{left}", once])
    header = ["drain", "after the last kill", "left", "every key applied once"]
    return table(header, rows, "lrrl") + "\n\n" + source_note(data, "drain-under-kills.json")


def enqueue_streams(sources):
    data = sources["outbox-cli.json"]["enqueueStreams"]
    rows = []
    for row in data["rows"].items():
        command = row["command"].str()
        command = f"`{command}`" if command.startswith("outbox enqueue") else (
            f"`outbox stats`{command[len('outbox stats'):]}" if command.startswith("outbox stats")
            else f"… `{command[2:]}`" if command.startswith("… ") else command)
        rows.append([command, f"{fixed(row['wallSeconds'].num(), 2)} s", row["firstLine"].str(),
                     f"{row['maxRSSMegabytes'].num()} MB"])
    return (table(["command", "wall", "first line", "max RSS"], rows, "lrrr")
            + "\n\n" + source_note(data, "outbox-cli.json"))
