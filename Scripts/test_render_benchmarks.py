"""Tests of Scripts/render-benchmarks.py: every case runs the script as CI does,
on a copy of Docs/ (its JSON and BENCHMARKS.md) in a temporary folder.

    python3 -m unittest Scripts/test_render_benchmarks.py
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

SCRIPTS = os.path.dirname(os.path.abspath(__file__))
RENDER = os.path.join(SCRIPTS, "render-benchmarks.py")
DOCS = os.path.join(os.path.dirname(SCRIPTS), "Docs")
OPEN, CLOSE = "<!-- rendered: ", "<!-- /rendered -->"


def outside_blocks(text):
    """The document with every rendered block's and inline span's content left out (markers kept)."""
    out, inside = [], False
    for line in text.split("\n"):
        if line.startswith(OPEN):
            inside = True
            out.append(line)
        elif line == CLOSE:
            inside = False
            out.append(line)
        elif not inside:
            out.append(re.sub(r"(<!-- rendered: [^>]* -->).*?(<!-- /rendered -->)", r"\1\2", line))
    return "\n".join(out)


class RenderBenchmarksTests(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="render-benchmarks-")
        self.addCleanup(shutil.rmtree, self.dir)
        for path in glob.glob(os.path.join(DOCS, "*.json")) + [os.path.join(DOCS, "BENCHMARKS.md")]:
            shutil.copy(path, self.dir)

    def run_script(self, *args):
        return subprocess.run([sys.executable, RENDER, *args, "--docs", self.dir],
                              capture_output=True, text=True)

    def read(self, name="BENCHMARKS.md"):
        with open(os.path.join(self.dir, name), encoding="utf-8") as handle:
            return handle.read()

    def write(self, text, name="BENCHMARKS.md"):
        with open(os.path.join(self.dir, name), "w", encoding="utf-8") as handle:
            handle.write(text)

    def edit_json(self, name, change):
        data = json.loads(self.read(name))
        change(data)
        self.write(json.dumps(data, indent=2), name)

    def written_enqueue(self, data):
        comparison = next(c for c in data["comparisons"] if c["id"] == "written.1p.enqueue")
        return next(r for r in comparison["results"] if r.get("isOurs"))

    def test_the_committed_file_is_what_its_json_renders(self):
        result = self.run_script("--check")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_a_changed_number_in_the_json_changes_the_rendered_file(self):
        before = self.read()
        self.assertIn("**85.4k/s**", before)
        self.edit_json("benchmark-results.json",
                       lambda data: self.written_enqueue(data).update(throughput=91234.5))
        stale = self.run_script("--check")
        self.assertEqual(stale.returncode, 1)
        self.assertEqual(self.read(), before, "--check must change nothing")
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        after = self.read()
        self.assertIn("**91.2k/s**", after)
        self.assertNotIn("**85.4k/s**", after)
        self.assertIn("missed: 0.61× the rate", after)

    def test_the_engine_table_follows_rocksdb_and_its_verdict(self):
        def faster_rocksdb(data):
            comparison = next(c for c in data["comparisons"] if c["id"] == "engine.durable.64w.append")
            rocks = next(r for r in comparison["results"] if r["name"].startswith("RocksDB"))
            rocks.update(throughput=400000.0, oursOverThis=0.5)
        self.edit_json("benchmark-engine.json", faster_rocksdb)
        self.assertEqual(self.run_script("--check").returncode, 1)
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        after = self.read()
        self.assertIn("400k/s", after)
        self.assertIn("ours 0.50×", after)
        self.assertIn("missed: 0.50× RocksDB", after)

    def test_the_engine_table_says_when_rocksdb_was_not_measured(self):
        def without_rocksdb(data):
            for comparison in data["comparisons"]:
                comparison["results"] = [r for r in comparison["results"] if not r["name"].startswith("RocksDB")]
        self.edit_json("benchmark-engine.json", without_rocksdb)
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("RocksDB not measured", self.read())

    def test_the_queue_table_follows_its_rows_and_verdicts(self):
        def faster_queue(data):
            comparison = next(c for c in data["comparisons"] if c["id"] == "queue.durable.8p4c")
            for row in comparison["results"]:
                if row["name"].startswith("SQLite"):
                    row.update(throughput=1234.0, oursOverThis=12.5)
            latency = next(c for c in data["comparisons"] if c["id"] == "queue.written.latency")
            next(r for r in latency["results"] if r.get("isOurs")).update(p99Micros=5.0)
        self.assertIn("× the bound", self.read())
        self.edit_json("benchmark-queue.json", faster_queue)
        self.assertEqual(self.run_script("--check").returncode, 1)
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        after = self.read()
        self.assertIn("SQLite FULL: 1.23k/s (ours 12.50×)", after)
        row = next(line for line in after.split("\n") if line.startswith("| `durable`, 8 producers"))
        self.assertTrue(row.endswith("| met |"), row)
        self.assertIn("p99 5 µs", after)
        self.assertNotIn("× the bound", after)

    def test_the_queue_table_says_when_rocksdb_was_not_measured(self):
        def without_rocksdb(data):
            for comparison in data["comparisons"]:
                comparison["results"] = [r for r in comparison["results"] if not r["name"].startswith("RocksDB")]
        self.edit_json("benchmark-queue.json", without_rocksdb)
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("RocksDB not measured", self.read())

    def test_check_fails_on_a_hand_edited_number_inside_a_block(self):
        text = self.read()
        edited = text.replace("| 20 ms | 16 | 400 | 0.55 |", "| 20 ms | 16 | 400 | 0.45 |")
        self.assertNotEqual(edited, text)
        self.write(edited)
        result = self.run_script("--check")
        self.assertEqual(result.returncode, 1)
        self.assertIn("-| 20 ms | 16 | 400 | 0.45 |", result.stdout)
        self.assertIn("+| 20 ms | 16 | 400 | 0.55 |", result.stdout)
        self.assertIn("python3 Scripts/render-benchmarks.py", result.stdout.splitlines()[-1])
        self.assertEqual(self.read(), edited, "--check must change nothing")

    def test_a_missing_field_names_the_file_and_the_field(self):
        self.edit_json("benchmark-results.json", lambda data: self.written_enqueue(data).pop("p50Micros"))
        before = self.read()
        result = self.run_script()
        self.assertEqual(result.returncode, 2)
        self.assertIn("Docs/benchmark-results.json", result.stderr)
        self.assertIn("comparisons[4].results[0].p50Micros", result.stderr)
        self.assertNotIn("Traceback", result.stderr)
        self.assertEqual(self.read(), before, "an error must change nothing")

    def test_a_mistyped_field_and_a_missing_file_are_clear_errors(self):
        self.edit_json("server-benchmark.json", lambda data: data["stored"][2].update(keys="1M"))
        result = self.run_script("--check")
        self.assertEqual(result.returncode, 2)
        self.assertIn("Docs/server-benchmark.json: field `stored` has no element with keys = 1000000",
                      result.stderr)
        os.remove(os.path.join(self.dir, "drain-cpu.json"))
        self.edit_json("server-benchmark.json", lambda data: data["stored"][2].update(keys=1000000))
        result = self.run_script()
        self.assertEqual(result.returncode, 2)
        self.assertIn("Docs/drain-cpu.json: missing file", result.stderr)
        self.write("{ not json", "drain-cpu.json")
        result = self.run_script()
        self.assertIn("Docs/drain-cpu.json: not valid JSON", result.stderr)
        self.assertNotIn("Traceback", result.stderr)

    def test_prose_outside_the_markers_is_untouched(self):
        text = self.read()
        prose = text.replace("## The machine\n", "## The machine\n\nHand-written: 12,345 of 6.7 µs.\n")
        stale = prose.replace("| 20 ms | 16 | 400 | 0.55 |", "| 20 ms | 16 | 400 | 9.99 |")
        self.write(stale)
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        after = self.read()
        self.assertEqual(outside_blocks(after), outside_blocks(stale))
        self.assertIn("Hand-written: 12,345 of 6.7 µs.", after)
        self.assertEqual(after, prose)

    def test_rendering_twice_is_idempotent(self):
        self.edit_json("drain-over-latency.json", lambda data: data["large"].update(seconds=7.5))
        self.assertEqual(self.run_script().returncode, 0)
        once = self.read()
        self.assertIn("≤ 7 s: missed", once)
        self.assertEqual(self.run_script().returncode, 0)
        self.assertEqual(self.read(), once)
        self.assertEqual(self.run_script("--check").returncode, 0)

    def test_bad_markers_are_clear_errors(self):
        text = self.read()
        self.write(text.replace("<!-- rendered: spool -->", "<!-- rendered: spools -->"))
        result = self.run_script("--check")
        self.assertEqual(result.returncode, 2)
        self.assertIn("no table is named `spools`", result.stderr)
        cut = text.index(OPEN + "postgres -->")
        self.write(text[:cut] + OPEN + "postgres -->\nno end\n")
        result = self.run_script("--check")
        self.assertEqual(result.returncode, 2)
        self.assertIn("`postgres` is never closed", result.stderr)


    # Inline spans: figures inside sentences, rendered like the tables.

    def test_a_changed_number_in_the_json_changes_the_sentence(self):
        before = self.read()
        sentence = "**Written enqueue (<!-- rendered: written-rate -->85.4k/s<!-- /rendered -->; goal"
        self.assertIn(sentence, before)
        self.edit_json("benchmark-results.json",
                       lambda data: self.written_enqueue(data).update(throughput=91234.5))
        self.assertEqual(self.run_script("--check").returncode, 1)
        self.assertEqual(self.run_script().returncode, 0)
        after = self.read()
        self.assertIn("**Written enqueue (<!-- rendered: written-rate -->91.2k/s<!-- /rendered -->; goal", after)
        self.assertNotIn(sentence, after)
        self.assertEqual(outside_blocks(after), outside_blocks(before), "only the figures may change")

    def test_a_derived_figure_follows_both_cells_it_is_computed_from(self):
        span = "<!-- rendered: postgres-cost -->8–10×<!-- /rendered -->"
        self.assertIn(span, self.read())

        def halve_postgres(data):
            for row in data["postgres"]:
                if row["processes"] > 0:
                    for one in row["rounds"]:
                        one["requestsPerSecond"] /= 2
        self.edit_json("server-benchmark-postgres.json", halve_postgres)
        self.assertEqual(self.run_script().returncode, 0)
        after = self.read()
        self.assertIn("<!-- rendered: postgres-cost -->15–20×<!-- /rendered -->", after)
        self.assertIn("<!-- rendered: postgres-shares -->0.05–0.06<!-- /rendered -->", after)

    def test_check_fails_on_a_hand_edited_inline_figure(self):
        text = self.read()
        edited = text.replace("<!-- rendered: ack-ratio -->4.5×<!-- /rendered -->",
                              "<!-- rendered: ack-ratio -->9.5×<!-- /rendered -->")
        self.assertNotEqual(edited, text)
        self.write(edited)
        result = self.run_script("--check")
        self.assertEqual(result.returncode, 1)
        self.assertIn("rendered: ack-ratio -->9.5×", result.stdout)
        self.assertIn("rendered: ack-ratio -->4.5×", result.stdout)
        self.assertEqual(self.read(), edited, "--check must change nothing")

    def test_a_profile_share_is_read_from_its_file(self):
        self.edit_json("perf-profiles.json",
                       lambda data: data["profiles"]["ack"]["shares"].update(pwrite=15.25))
        self.assertEqual(self.run_script().returncode, 0)
        self.assertIn("take <!-- rendered: perf ack.pwrite -->15.2 %<!-- /rendered --> of the CPU", self.read())

    def test_bad_inline_spans_are_clear_errors(self):
        text = self.read()
        self.write(text.replace("<!-- rendered: ack-ratio -->", "<!-- rendered: ack-ratios -->"))
        result = self.run_script("--check")
        self.assertEqual(result.returncode, 2)
        self.assertIn("no inline figure is named `ack-ratios`", result.stderr)
        self.write(text.replace("<!-- rendered: perf ack.pwrite -->", "<!-- rendered: perf ack.nowhere -->"))
        result = self.run_script("--check")
        self.assertEqual(result.returncode, 2)
        self.assertIn("Docs/perf-profiles.json: missing field `profiles.ack.shares.nowhere`", result.stderr)
        self.write(text.replace("4.5×<!-- /rendered --> SQLite NORMAL", "4.5× SQLite NORMAL"))
        result = self.run_script("--check")
        self.assertEqual(result.returncode, 2)
        self.assertIn("neither a block", result.stderr)
        self.assertNotIn("Traceback", result.stderr)
        self.write(text + "\nQuoted, not a span: `<!-- rendered: nothing -->…<!-- /rendered -->`.\n")
        self.assertEqual(self.run_script("--check").returncode, 0)


if __name__ == "__main__":
    unittest.main()
