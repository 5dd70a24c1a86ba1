"""Renders the tables of Docs/BENCHMARKS.md from the committed results files.

Each block between `<!-- rendered: NAME -->` and `<!-- /rendered -->` is
replaced with what BLOCKS[NAME] renders; everything outside the markers is
left byte for byte as it is.
"""
import difflib
import os
import re
import sys

from . import drains, measured, runs, server, store
from .data import RenderError, Sources

BLOCKS = {
    "measured": measured.measured_line,
    "store-goals": store.store_goals,
    "preallocation-runs": runs.preallocation_runs,
    "preallocation-kills": runs.preallocation_kills,
    "engine": runs.engine,
    "crash-goals": runs.crash_goals,
    "spool": runs.spool,
    "drain-cpu": drains.drain_cpu,
    "drain-cpu-verdict": drains.drain_cpu_verdict,
    "drain-latency": drains.drain_latency,
    "drain-latency-goal": drains.drain_latency_goal,
    "drain-latency-large": drains.drain_latency_large,
    "drain-kills": drains.drain_kills,
    "enqueue-streams": drains.enqueue_streams,
    "server-goals": server.server_goals,
    "postgres": server.postgres,
}

OPEN = re.compile(r"^<!-- rendered: ([A-Za-z0-9-]+) -->$")
CLOSE = "<!-- /rendered -->"
HINT = "python3 Scripts/render-benchmarks.py"


def render_document(text, docs_dir, shown="Docs/BENCHMARKS.md"):
    """The document with every rendered block rebuilt from the results in `docs_dir`."""
    sources = Sources(docs_dir)
    out, lines, index = [], text.split("\n"), 0
    while index < len(lines):
        line = lines[index]
        match = OPEN.match(line)
        if not match:
            if line == CLOSE or line.startswith("<!-- rendered"):
                raise RenderError(f"{shown}:{index + 1}: a marker without its opening or not of the "
                                  f"form `<!-- rendered: NAME -->`: {line}")
            out.append(line)
            index += 1
            continue
        name, start = match.group(1), index
        if name not in BLOCKS:
            raise RenderError(f"{shown}:{index + 1}: no table is named `{name}` "
                              f"(known: {', '.join(sorted(BLOCKS))})")
        index += 1
        while index < len(lines) and lines[index] != CLOSE:
            if OPEN.match(lines[index]):
                raise RenderError(f"{shown}:{index + 1}: a block opens inside `{name}` (line {start + 1})")
            index += 1
        if index == len(lines):
            raise RenderError(f"{shown}:{start + 1}: `{name}` is never closed with `{CLOSE}`")
        out += [line, "", BLOCKS[name](sources), "", CLOSE]
        index += 1
    return "\n".join(out)


def main(argv, repo_root):
    args = argv[1:]
    check = args[:1] == ["--check"]
    if check:
        args = args[1:]
    docs_dir = os.path.join(repo_root, "Docs")
    if args[:1] == ["--docs"] and len(args) == 2:
        docs_dir, args = args[1], []
    if args:
        print("usage: render-benchmarks.py [--check] [--docs DIR]", file=sys.stderr)
        return 2
    path = os.path.join(docs_dir, "BENCHMARKS.md")
    try:
        try:
            with open(path, encoding="utf-8") as handle:
                current = handle.read()
        except OSError as error:
            raise RenderError(f"Docs/BENCHMARKS.md: cannot read: {error}") from None
        rendered = render_document(current, docs_dir)
    except RenderError as error:
        print(f"render-benchmarks: {error}", file=sys.stderr)
        return 2
    if check:
        if rendered == current:
            return 0
        diff = difflib.unified_diff(current.splitlines(keepends=True), rendered.splitlines(keepends=True),
                                    "Docs/BENCHMARKS.md (committed)", "Docs/BENCHMARKS.md (rendered from the JSON)")
        sys.stdout.writelines(diff)
        print(f"\nDocs/BENCHMARKS.md's tables differ from the results files; run `{HINT}` to update.")
        return 1
    if rendered != current:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(rendered)
    return 0
