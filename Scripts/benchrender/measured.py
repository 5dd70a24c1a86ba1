"""The one line under the page's introduction that says when and where the
current figures were measured (every results file's machine and date)."""
import re

from .results import RESULTS


def measured_line(sources):
    """The one line that says when and where the current figures were measured."""
    results, crash = sources[RESULTS], sources["benchmark-crash.json"]
    server, postgres = sources["server-benchmark.json"], sources["server-benchmark-postgres.json"]
    engine = sources["benchmark-engine.json"]["machine"]
    queue = sources["benchmark-queue.json"]["machine"]
    machine = results["machine"]
    gib = machine["memoryBytes"].num() / 2**30
    swift = re.search(r"Swift version (\S+)", machine["swift"].str())
    if not swift:
        machine["swift"].fail("does not say `Swift version X`")

    def load(node):
        return node.str().split()[0] if node.str().split() else node.fail("is empty")

    def server_load(node):
        found = re.search(r"load average ([0-9.]+)", node["machine"].str())
        if not found:
            node["machine"].fail("does not say `load average X`")
        return found.group(1)

    return (
        f"Measured on {machine['processors'].num()} cores ({machine['cpu'].str()}), {gib:.1f} GiB, "
        f"{machine['kernel'].str()}, Swift {swift.group(1)}: "
        f"`outbox-compare` {machine['date'].str()} (load {load(machine['loadAverage'])}), "
        f"its engine rows {engine['date'].str()} (load {load(engine['loadAverage'])}"
        + ("" if engine["cpu"].str() == machine["cpu"].str() else f", on {engine['cpu'].str()}") + "), "
        f"its queue rows {queue['date'].str()} (load {load(queue['loadAverage'])}"
        + ("" if queue["cpu"].str() == machine["cpu"].str() else f", on {queue['cpu'].str()}") + "), "
        f"its crash section {crash['machine']['date'].str()} "
        f"(load {load(crash['machine']['loadAverage'])}), "
        f"`outbox-server-bench` {server['date'].str()} (load {server_load(server)}), "
        f"its PostgreSQL scenario {postgres['date'].str()} (load {server_load(postgres)}). "
        "The tables from tools that write no results file say their own conditions beside them."
    )

