#!/usr/bin/env python3
"""Where the CPU time of a profiled run goes, before and after a change:
an SVG of horizontal stacked bars, one per `perf record` data file, split
by the shared object the samples fell in (the Swift runtime, this package's
code, the kernel, libc, zlib, the rest).

    perf record -F 999 -g -o before.perf -- .build/release/outbox-compare --only drain --drainers c4 --ours-only
    ... (change, rebuild) ...
    perf record -F 999 -g -o after.perf -- ...same command...
    python3 scripts/perf-share-chart.py --title "..." \
        "before: 38k entries/s=before.perf" "after: 65k entries/s=after.perf" > ../Docs/chart.svg

Reads `perf report --no-children --sort dso --stdio -g none` of each file.
"""
import argparse
import html
import subprocess
import sys

GROUPS = [
    ("Swift runtime and standard library", ("libswiftCore", "libswift_Concurrency", "libswiftDispatch", "libdispatch", "libFoundation"), "#d29922"),
    ("this package's code (the benchmark binary)", ("outbox-compare", "outbox"), "#1f6feb"),
    ("kernel (syscalls, futex waits and wakes, I/O)", ("[kernel",), "#8250df"),
    ("libc (malloc, memmove, locks)", ("libc.so",), "#57606a"),
    ("zlib (CRC-32)", ("libz.so",), "#2da44e"),
]
OTHER = ("other", "#bbbbbb")


def shares(path):
    output = subprocess.run(
        ["perf", "report", "-i", path, "--no-children", "--sort", "dso", "--stdio", "-g", "none"],
        capture_output=True, text=True, check=True).stdout
    totals = {name: 0.0 for name, _, _ in GROUPS}
    totals[OTHER[0]] = 0.0
    for line in output.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "%" not in line:
            continue
        percent, _, dso = line.partition("%")
        try:
            value = float(percent)
        except ValueError:
            continue
        dso = dso.strip()
        for name, prefixes, _ in GROUPS:
            if any(dso.startswith(prefix) for prefix in prefixes):
                totals[name] += value
                break
        else:
            totals[OTHER[0]] += value
    return totals


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--title", required=True)
    parser.add_argument("--subtitle", default="")
    parser.add_argument("bars", nargs="+", help='"LABEL=FILE.perf", top to bottom')
    arguments = parser.parse_args()
    bars = []
    for bar in arguments.bars:
        label, _, path = bar.rpartition("=")
        if not label:
            sys.exit(f"perf-share-chart: expected LABEL=FILE, got {bar!r}")
        bars.append((label, shares(path)))

    width, left, right, bar_height, gap = 900, 260, 30, 34, 18
    top = 70
    legend_top = top + len(bars) * (bar_height + gap) + 10
    height = legend_top + 22 * (len(GROUPS) + 1) + 10
    plot = width - left - right
    colors = {name: color for name, _, color in GROUPS}
    colors[OTHER[0]] = OTHER[1]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="13">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="24" text-anchor="middle" font-size="16" font-weight="bold">{html.escape(arguments.title)}</text>',
           f'<text x="{width / 2}" y="44" text-anchor="middle" fill="#57606a">{html.escape(arguments.subtitle)}</text>']
    for row, (label, totals) in enumerate(bars):
        y = top + row * (bar_height + gap)
        out.append(f'<text x="{left - 10}" y="{y + bar_height / 2 + 5}" text-anchor="end">{html.escape(label)}</text>')
        x = left
        whole = sum(totals.values()) or 1
        for name in list(colors):
            value = totals.get(name, 0) / whole * 100
            if value <= 0:
                continue
            span = plot * value / 100
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{span:.1f}" height="{bar_height}" fill="{colors[name]}">'
                       f'<title>{html.escape(name)}: {value:.1f} %</title></rect>')
            if span > 34:
                out.append(f'<text x="{x + span / 2:.1f}" y="{y + bar_height / 2 + 5}" text-anchor="middle" fill="white">{value:.0f} %</text>')
            x += span
    for index, name in enumerate(list(colors)):
        y = legend_top + index * 22
        out.append(f'<rect x="{left}" y="{y}" width="14" height="14" fill="{colors[name]}"/>')
        out.append(f'<text x="{left + 22}" y="{y + 12}">{html.escape(name)}</text>')
    out.append("</svg>")
    print("\n".join(out))


if __name__ == "__main__":
    main()
