#!/usr/bin/env python3
"""CPU time of `outbox drain` against a third-party Idempotency-Key server
(drop-server.py) that drops every 20th connection after applying the write,
side by side with the same drain against the same server without drops
(Docs/BENCHMARKS.md, "Drain CPU under connection drops").

    swift build -c release --product outbox
    python3 Benchmarks/scripts/drain-cpu.py --rounds 5 --count 1000

Each round enqueues --count entries into a fresh queue, starts the server,
runs `outbox drain --until-empty` and reads the drain's own user and system
CPU from the kernel (wait4's rusage: the server is not counted). Rounds
alternate between the two servers, so noise hits both alike.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time, urllib.request

parser = argparse.ArgumentParser()
parser.add_argument("--outbox", default=".build/release/outbox")
parser.add_argument("--count", type=int, default=1000)
parser.add_argument("--rounds", type=int, default=5)
parser.add_argument("--drop-every", type=int, default=20)
args = parser.parse_args()
here = os.path.dirname(os.path.abspath(__file__))


results = {"drops": [], "none": []}
for round_ in range(args.rounds):
    for name, drop in (("drops", args.drop_every), ("none", 0)):
        port = 8100 + round_ * 2 + (name == "none")
        with tempfile.TemporaryDirectory() as work:
            queue = os.path.join(work, "q")
            subprocess.run([args.outbox, "enqueue", queue, "--count", str(args.count), "--size", "64"],
                           check=True, stdout=subprocess.DEVNULL)
            server = subprocess.Popen([sys.executable, os.path.join(here, "drop-server.py"), "--port", str(port),
                                       "--drop-every", str(drop)])
            try:
                for _ in range(100):
                    try:
                        urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=1).read()
                        break
                    except OSError:
                        time.sleep(0.05)
                started = time.monotonic()
                drain = subprocess.Popen([args.outbox, "drain", queue, "--base-url", f"http://127.0.0.1:{port}",
                                          "--until-empty", "--timeout", "300", "--json"], stdout=subprocess.PIPE)
                out = drain.stdout.read()
                _, status, usage = os.wait4(drain.pid, 0)
                wall = time.monotonic() - started
                stats = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/stats").read())
            finally:
                server.terminate()
                server.wait()
        summary = json.loads(out)
        row = {"user": usage.ru_utime, "sys": usage.ru_stime, "cpu": usage.ru_utime + usage.ru_stime, "wall": wall,
               "delivered": summary["delivered"], "interrupted": summary["interrupted"],
               "remaining": summary["remaining"], "dropped": stats["dropped"], "emptyBodies": stats["emptyBodies"],
               "mismatched": stats["mismatched"]}
        results[name].append(row)
        print(name, json.dumps(row), flush=True)

for name in ("none", "drops"):
    rows = results[name]
    print(f"{name:5s} median cpu {statistics.median(r['cpu'] for r in rows):.2f} s "
          f"(user {statistics.median(r['user'] for r in rows):.2f}, sys {statistics.median(r['sys'] for r in rows):.2f}), "
          f"wall {statistics.median(r['wall'] for r in rows):.2f} s")
ratios = [d["cpu"] / n["cpu"] for d, n in zip(results["drops"], results["none"])]
print(f"cpu ratio drops/none, pair by pair: {', '.join(f'{r:.2f}' for r in ratios)}; median {statistics.median(ratios):.2f}")
