#!/usr/bin/env python3
"""Renders the tables of Docs/BENCHMARKS.md from the committed results files.

    python3 Scripts/render-benchmarks.py            rewrite the rendered blocks in place
    python3 Scripts/render-benchmarks.py --check    change nothing; exit 1 with a diff when
                                                    the file differs from what the JSON renders

Every table of numbers in BENCHMARKS.md sits between `<!-- rendered: NAME -->`
and `<!-- /rendered -->` (each marker alone on its line), and every measured
figure in a sentence is an inline span `<!-- rendered: NAME -->1.39×<!-- /rendered -->`
on one line (`<!-- rendered: perf PROFILE.SITE -->…` for a profile's share).
Both are rebuilt from Docs/*.json (the tools' results files, and for tools
that write none, the small files named for them), so neither a table nor a
sentence can drift from its numbers; a ratio of two figures is computed here.
The text outside the markers is never touched; a marker inside a `code span`
is quoted, not rendered. `--docs DIR` renders DIR/BENCHMARKS.md from DIR's JSON instead (the
tests use it). A missing or malformed field stops with an error naming the
file and the field (exit 2). Standard library only: CI runs it before any
build.
"""
import os
import sys

sys.dont_write_bytecode = True  # leave no __pycache__ beside the sources
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from benchrender import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv, os.path.dirname(HERE)))
