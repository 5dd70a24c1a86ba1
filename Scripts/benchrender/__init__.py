"""Renders the tables and the measured figures of Docs/BENCHMARKS.md from the
committed results files.

Each block between `<!-- rendered: NAME -->` and `<!-- /rendered -->`, each
marker alone on its line, is replaced with what BLOCKS[NAME] renders. Inside
a line, `<!-- rendered: NAME -->…<!-- /rendered -->` is an inline span: the
text between the markers is replaced with what SPANS[NAME] renders (or, for
`<!-- rendered: NAME ARG -->`, what ARG_SPANS[NAME] renders for ARG), so a
figure quoted in a sentence comes from the JSON like the tables. Everything
outside the markers is left byte for byte as it is.
"""
import difflib
import os
import re
import sys

from . import drains, engine_goals, measured, queue, rocksdb, runs, server, spans, store
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
    "engine-goals": engine_goals.engine_goals,
    "engine-rocksdb": rocksdb.engine_rocksdb,
    "queue": queue.queue_table,
}
SPANS = spans.SPANS
ARG_SPANS = spans.ARG_SPANS

OPEN = re.compile(r"^<!-- rendered: ([A-Za-z0-9-]+) -->$")
CLOSE = "<!-- /rendered -->"
CODE = re.compile(r"`[^`]*`")  # a marker in a code span is quoted, not a span
SPAN = re.compile(r"(?<!`)<!-- rendered: ([A-Za-z0-9-]+)(?: ([A-Za-z0-9.-]+))? -->(.*?)<!-- /rendered -->")
HINT = "python3 Scripts/render-benchmarks.py"


def render_document(text, docs_dir, shown="Docs/BENCHMARKS.md"):
    """The document with every rendered block rebuilt from the results in `docs_dir`."""
    sources = Sources(docs_dir)
    out, lines, index = [], text.split("\n"), 0
    while index < len(lines):
        line = lines[index]
        match = OPEN.match(line)
        if not match:
            if line == CLOSE:
                raise RenderError(f"{shown}:{index + 1}: a marker without its opening: {line}")
            out.append(render_spans(line, sources, f"{shown}:{index + 1}"))
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


def render_spans(line, sources, where):
    """The line with every inline span's text rendered from the JSON."""
    rest = CODE.sub("", SPAN.sub("", line))
    if "<!-- rendered" in rest or "<!-- /rendered" in rest:
        raise RenderError(f"{where}: a marker that is neither a block (alone on its line) nor an inline "
                          f"span `<!-- rendered: NAME -->…<!-- /rendered -->` on one line: {line}")

    def one(match):
        name, arg = match.group(1), match.group(2)
        if arg is None and name in SPANS:
            text = SPANS[name](sources)
        elif arg is not None and name in ARG_SPANS:
            text = ARG_SPANS[name](sources, arg)
        else:
            known = sorted(SPANS) + [f"{n} ARG" for n in sorted(ARG_SPANS)]
            raise RenderError(f"{where}: no inline figure is named `{name}{' ' + arg if arg else ''}` "
                              f"(known: {', '.join(known)})")
        if "\n" in text or "<!--" in text:
            raise RenderError(f"internal: inline figure `{name}` renders a newline or a marker")
        return f"<!-- rendered: {name}{' ' + arg if arg else ''} -->{text}{CLOSE}"

    return SPAN.sub(one, line)


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
        print(f"\nDocs/BENCHMARKS.md's tables or inline figures differ from the results files; "
              f"run `{HINT}` to update.")
        return 1
    if rendered != current:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(rendered)
    return 0
