#!/usr/bin/env python3
"""A drain over a real round trip: `outbox drain` of N unscoped entries to
`outbox serve --latency L`, for each latency and concurrency, beside the
ideal N·L/concurrency (every slot busy, nothing but the round trip).

    swift build -c release --product outbox
    python3 Benchmarks/scripts/drain-over-latency.py                # the table (Markdown)
    python3 Benchmarks/scripts/drain-over-latency.py --svg chart.svg  # and the chart

Each point is a fresh queue and a fresh server (keys in memory), drained
with `--until-empty --unscoped-delivery concurrent --concurrency C`; the
time is the drain's own (`seconds` in its JSON summary: open, send every
entry, close). At 0 ms the server is the bound, so no ideal is given.
"""
import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def serve(outbox, latency_ms):
    process = subprocess.Popen(
        [outbox, "serve", "--port", "0", "--in-memory-keys", "--latency", f"{latency_ms}ms"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = process.stdout.readline()
    match = re.match(r"listening on (http://\S+)", line)
    if not match:
        process.kill()
        sys.exit(f"outbox serve did not start: {line}")
    return process, match.group(1)


def point(outbox, count, latency_ms, concurrency):
    work = tempfile.mkdtemp(prefix="outbox-drain-latency-")
    server, url = serve(outbox, latency_ms)
    try:
        subprocess.run([outbox, "enqueue", f"{work}/q", "--count", str(count), "--size", "64",
                        "--endpoint", "POST /messages"], check=True, stdout=subprocess.DEVNULL)
        drain = subprocess.run(
            [outbox, "drain", f"{work}/q", "--base-url", url, "--until-empty", "--timeout", "600", "--json",
             "--concurrency", str(concurrency), "--unscoped-delivery", "concurrent"],
            check=True, capture_output=True, text=True)
        summary = json.loads(drain.stdout.splitlines()[0])
        if summary["delivered"] != count:
            sys.exit(f"only {summary['delivered']} of {count} delivered: {summary}")
        return summary["seconds"]
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)


def chart(rows, latencies, concurrencies):
    """Grouped bars: for each latency, one bar per concurrency of the share
    of the ideal rate reached (1.0 = every slot busy the whole time)."""
    width, height, left, bottom, top = 640, 300, 50, 40, 30
    plot_w, plot_h = width - left - 20, height - bottom - top
    groups = [l for l in latencies if l > 0]
    colors = ["#1f6feb", "#2da44e", "#d29922", "#8250df"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
           f'<text x="{left}" y="18">share of the ideal rate (N·L/concurrency), outbox drain to outbox serve --latency L</text>']
    for tick in (0, 0.25, 0.5, 0.75, 0.9, 1.0):
        y = top + plot_h * (1 - tick)
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="{"#cf222e" if tick == 0.9 else "#ddd"}"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>')
    group_w = plot_w / len(groups)
    bar_w = group_w * 0.7 / len(concurrencies)
    for g, latency in enumerate(groups):
        x0 = left + g * group_w + group_w * 0.15
        out.append(f'<text x="{x0 + group_w * 0.35:.1f}" y="{top + plot_h + 16}" text-anchor="middle">{latency} ms</text>')
        for c, concurrency in enumerate(concurrencies):
            share = rows[(latency, concurrency)]["share"]
            bar_h = plot_h * min(share, 1.05)
            x = x0 + c * bar_w
            out.append(f'<rect x="{x:.1f}" y="{top + plot_h - bar_h:.1f}" width="{bar_w - 2:.1f}" height="{bar_h:.1f}" fill="{colors[c % len(colors)]}">'
                       f'<title>{html.escape(f"{latency} ms, concurrency {concurrency}: {share:.2f}")}</title></rect>')
    for c, concurrency in enumerate(concurrencies):
        x = left + c * 110
        out.append(f'<rect x="{x}" y="{height - 14}" width="10" height="10" fill="{colors[c % len(colors)]}"/>')
        out.append(f'<text x="{x + 14}" y="{height - 5}">concurrency {concurrency}</text>')
    out.append("</svg>")
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outbox", default=os.environ.get("OUTBOX", ".build/release/outbox"))
    parser.add_argument("--count", type=int, default=400)
    parser.add_argument("--latencies", default="0,20,50,200")
    parser.add_argument("--concurrencies", default="1,4,16")
    parser.add_argument("--svg")
    arguments = parser.parse_args()
    latencies = [int(x) for x in arguments.latencies.split(",")]
    concurrencies = [int(x) for x in arguments.concurrencies.split(",")]
    rows = {}
    print(f"| latency | concurrency | entries | drain (s) | ideal N·L/c (s) | entries/s | share of ideal |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for latency in latencies:
        for concurrency in concurrencies:
            seconds = point(arguments.outbox, arguments.count, latency, concurrency)
            ideal = arguments.count * latency / 1000 / concurrency
            share = ideal / seconds if latency > 0 else None
            rows[(latency, concurrency)] = {"seconds": seconds, "share": share}
            print(f"| {latency} ms | {concurrency} | {arguments.count} | {seconds:.2f} | "
                  f"{f'{ideal:.2f}' if latency else '—'} | {arguments.count / seconds:.0f} | "
                  f"{f'{share:.2f}' if share is not None else '— (server-bound)'} |", flush=True)
    if arguments.svg:
        with open(arguments.svg, "w") as handle:
            handle.write(chart(rows, latencies, concurrencies) + "\n")


if __name__ == "__main__":
    main()
