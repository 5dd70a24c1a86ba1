"""Finding rows in the committed results files: outbox-compare's comparisons,
contenders and depth rows, and the names of the files the store's figures
come from."""
from .data import k

RESULTS = "benchmark-results.json"
PACKAGE = "package-benchmark.json"
CLI = "outbox-cli.json"


def comparison(results, ident):
    return results["comparisons"].find("id", ident)


def contender(comp, name):
    return comp["results"].find("name", name)


def contender_in(results, ident, name):
    """The row named `name` of the comparison `ident`."""
    return contender(comparison(results, ident), name)


def ours(comp):
    for item in comp["results"].items():
        if item.get("isOurs") is not None and item["isOurs"].value is True:
            return item
    comp["results"].fail("has no element with isOurs = true")


def shown_k(value):
    """`value` as `k` prints it, read back: a verdict judges the figure the table shows."""
    text = k(value)
    scale = {"k": 1e3, "M": 1e6}.get(text[-1])
    return float(text[:-1]) * scale if scale else float(text)


def verdict(met, text_met, text_missed):
    return text_met if met else text_missed



def depth_at(results, depth):
    return results["depth"].find("depth", depth)

