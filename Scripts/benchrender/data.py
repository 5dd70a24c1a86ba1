"""Reading the results files and formatting their numbers.

Every value a table shows is read through `Node`, which knows the file and
the path it came from, so a missing or mistyped field stops the rendering
with an error that names both (never a Python traceback).
"""
import json
import math
import os


class RenderError(Exception):
    """A results file or a marker that cannot be rendered; the message says where."""


class Node:
    """One value of a results file, with the file and the path it was read at."""

    def __init__(self, value, file, path):
        self.value = value
        self.file = file
        self.path = path

    def fail(self, reason):
        raise RenderError(f"{self.file}: field `{self.path or '(top level)'}` {reason}")

    def __getitem__(self, key):
        child = f"{self.path}.{key}" if self.path else key
        if not isinstance(self.value, dict):
            self.fail("is not an object")
        if key not in self.value:
            raise RenderError(f"{self.file}: missing field `{child}`")
        return Node(self.value[key], self.file, child)

    def get(self, key):
        """The field, or None when it is absent (for optional fields)."""
        if isinstance(self.value, dict) and key in self.value:
            return self[key]
        return None

    def num(self):
        if isinstance(self.value, bool) or not isinstance(self.value, (int, float)):
            self.fail(f"is not a number ({json.dumps(self.value)[:40]})")
        if not math.isfinite(self.value):
            self.fail("is not a finite number")
        return self.value

    def pos(self):
        """A number that is divided by, so it must be above zero."""
        value = self.num()
        if value <= 0:
            self.fail(f"is {value}, where a ratio needs a number above zero")
        return value

    def str(self):
        if not isinstance(self.value, str):
            self.fail(f"is not a string ({json.dumps(self.value)[:40]})")
        return self.value

    def items(self):
        if not isinstance(self.value, list):
            self.fail("is not a list")
        if not self.value:
            self.fail("is an empty list")
        return [Node(v, self.file, f"{self.path}[{i}]") for i, v in enumerate(self.value)]

    def nums(self):
        return [item.num() for item in self.items()]

    def find(self, key, wanted):
        """The element of this list whose `key` field equals `wanted`."""
        for item in self.items():
            if item[key].value == wanted:
                return item
        self.fail(f"has no element with {key} = {json.dumps(wanted)}")


class Sources:
    """The results files of one Docs folder, each read once when first asked for."""

    def __init__(self, docs_dir):
        self.docs_dir = docs_dir
        self.loaded = {}

    def __getitem__(self, name):
        if name not in self.loaded:
            shown = f"Docs/{name}"
            path = os.path.join(self.docs_dir, name)
            try:
                with open(path, encoding="utf-8") as handle:
                    value = json.load(handle)
            except FileNotFoundError:
                raise RenderError(f"{shown}: missing file") from None
            except (OSError, UnicodeDecodeError) as error:
                raise RenderError(f"{shown}: cannot read: {error}") from None
            except json.JSONDecodeError as error:
                raise RenderError(f"{shown}: not valid JSON: {error}") from None
            self.loaded[name] = Node(value, shown, "")
        return self.loaded[name]


# Formatting. Each helper is named for what it prints; tables pick one per cell.

def sig(value, digits=3):
    """`value` to `digits` significant digits, trailing zeros dropped: 85.4, 152, 2.4."""
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def k(value, digits=3):
    """A rate in thousands or millions: 85.4k, 152k, 1.06M (below 1,000: as is)."""
    if abs(value) >= 999_500:
        return sig(value / 1e6, digits) + "M"
    if abs(value) >= 1000:
        return sig(value / 1e3, digits) + "k"
    return sig(value, digits)


def grouped(value):
    """A whole number with thousands separators: 3,446."""
    return f"{round(value):,}"


def fixed(value, decimals):
    return f"{value:.{decimals}f}"


def times(value, decimals=2):
    return f"{value:.{decimals}f}×"


def ratio(value):
    """A ratio at the precision its size calls for: 0.07×, 8.3×, 10×."""
    if value >= 10:
        return f"{value:.0f}×"
    if value >= 1:
        return f"{value:.1f}×"
    return f"{value:.2f}×"


def millis(seconds):
    return f"{seconds * 1000:.0f} ms"


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def span(values, fmt):
    """`low–high` of the values as `fmt` prints them (one value when they agree)."""
    low, high = fmt(min(values)), fmt(max(values))
    return low if low == high else f"{low}–{high}"


def span_fixed(values, decimals):
    """`span` of the values with `decimals` decimals each: 1.21–1.35, or 42 for 0."""
    return span(values, lambda v: fixed(v, decimals))


def short_of(shown, goal):
    """How far a figure falls short of a goal, in whole per cent of the goal, from
    the figure as the table shows it (so the two never disagree)."""
    return f"{round((1 - shown / goal) * 100)} %"


def over(shown, goal):
    return f"{round((shown / goal - 1) * 100)} %"


def table(header, rows, align=None):
    """A Markdown table; `align` is one of "l"/"r" per column (left by default)."""
    align = align or "l" * len(header)
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(rule) + "|"]
    for row in rows:
        if len(row) != len(header):
            raise RenderError(f"internal: a row of {len(row)} cells under {len(header)} headers")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def source_note(node, name):
    """The line under a table whose tool writes no results file: where its numbers
    live, and the conditions they were measured under (its `measuring` field)."""
    node["command"].str()
    return f"From [`{name}`]({name}): {node['measuring'].str()}."
