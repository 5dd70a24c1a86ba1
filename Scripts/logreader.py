#!/usr/bin/env python3
"""An independent reader of OutboxLog directories, written from Docs/FORMAT.md.

Python 3 standard library only; it never writes to the log. It reads a log as
`outbox log verify` and `outbox log dump --salvage` do (read-only, stepping
over damage) and prints the same JSON:

    Scripts/logreader.py verify DIR     # the recovery report, one JSON object
    Scripts/logreader.py dump DIR       # one JSON object per live key
    Scripts/logreader.py check VECTORS  # compares with every test vector's expected.json

Exit status of `verify`: 0 clean, 1 damage found, 2 the log cannot be read
(an unknown format version). `check` exits 1 if any vector disagrees.
"""

import base64
import json
import os
import re
import struct
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vectorcheck  # noqa: E402  (the `check` loop both format readers share)

SEGMENT_MAGIC = b"OBXLOG\r\n"
INTENT_MAGIC = b"OBXCMPT\n"
HEADER_SIZE = 48
FRAME_HEADER = 28
MAX_FRAME = 1 << 30
MAX_KEY = 1024
VALUE, ANNOTATION, TOMBSTONE, MARKER = 1, 2, 3, 4
CONTINUES, CONTINUATION, EXPIRES = 1, 2, 4
EXPIRY_SIZE = 8
VERSION = 2
SEGMENT_NAME = re.compile(r"^([0-9]{20})\.seg$")


class OpenError(Exception):
    """The log cannot be opened: `code` is "corruption" or "unsupported format"."""

    def __init__(self, code, file, offset):
        super().__init__(f"{code}: {file} at {offset}")
        self.code, self.file, self.offset = code, file, offset


def u16(b, o): return struct.unpack_from("<H", b, o)[0]
def u32(b, o): return struct.unpack_from("<I", b, o)[0]
def u64(b, o): return struct.unpack_from("<Q", b, o)[0]


# ---- Segment header: FORMAT.md, "Reading a header, step by step" ----------

def read_header(data):
    """Returns (header, None), (None, problem) for damage, or (("unsupported", version), None)."""
    if len(data) < 12 or data[:8] != SEGMENT_MAGIC:
        return None, "bad magic"
    version, size = u16(data, 8), u16(data, 10)
    if size < HEADER_SIZE or len(data) < size:
        return None, "bad header size"
    if zlib.crc32(data[:size - 4]) != u32(data, size - 4):
        return None, "bad checksum"
    if version != VERSION:
        return ("unsupported", version), None
    flags, base, cover_end, salt, reserved = u32(data, 12), u64(data, 16), u64(data, 24), u64(data, 32), u32(data, 40)
    rewritten = flags & 1 != 0
    if size != HEADER_SIZE or flags & ~1 or salt == 0 or reserved != 0 or base == 0:
        return None, "inconsistent"
    if (rewritten and cover_end < base) or (not rewritten and cover_end != 0):
        return None, "inconsistent cover end"
    if base >= SEQUENCE_LIMIT or cover_end > SEQUENCE_LIMIT:
        return None, "beyond the sequence limit"
    return {"base": base, "cover_end": cover_end if rewritten else None, "salt": salt,
            "seed": zlib.crc32(struct.pack("<Q", salt))}, None


# ---- Frames: "Decoding a frame, step by step" -------------------------------

def decode(data, o, seed):
    """("ok", frame) | ("incomplete", None) | ("invalid", None)."""
    n = len(data) - o
    if n < FRAME_HEADER:
        return "incomplete", None
    length = u32(data, o + 4)
    if length < FRAME_HEADER or length > MAX_FRAME:
        return "invalid", None
    if length > n:
        return "incomplete", None
    if zlib.crc32(data[o + 4:o + length], seed) != u32(data, o):
        return "invalid", None
    kind, flags, k = data[o + 8], data[o + 9], u16(data, o + 10)
    expires = flags & EXPIRES != 0
    key_start = FRAME_HEADER + (EXPIRY_SIZE if expires else 0)
    if kind not in (1, 2, 3, 4) or flags & ~7 or key_start + k > length or k > MAX_KEY:
        return "invalid", None
    if (kind != MARKER and k == 0) or (expires and kind in (TOMBSTONE, MARKER)) \
            or (kind == TOMBSTONE and length != FRAME_HEADER + k) or (kind == MARKER and length != FRAME_HEADER):
        return "invalid", None
    expiry = struct.unpack_from("<q", data, o + FRAME_HEADER)[0] if expires else None
    return "ok", {"offset": o, "length": length, "kind": kind, "flags": flags, "sequence": u64(data, o + 12),
                  "watermark": u64(data, o + 20), "expiry": expiry,
                  "key": bytes(data[o + key_start:o + key_start + k]),
                  "payload": bytes(data[o + key_start + k:o + length])}


# ---- One segment: batches, sequence rules, resynchronisation ----------------

SEQUENCE_LIMIT = 1 << 63  # every sequence number, base and cover end is below it


def sequence_ok(header, seq, previous, allow_gap):
    base, end = header["base"], header["cover_end"]
    if seq >= SEQUENCE_LIMIT:
        return False
    if end is not None:
        return base <= seq < end and (previous is None or seq > previous)
    if previous is None:
        return seq == base or (allow_gap and seq > base)
    return seq == previous + 1 or (allow_gap and seq > previous)


def scan_run(data, header, start, previous, resuming):
    """Consecutive committed frames from `start`. The stop, if any, is
    (cut, frame): where committed data ends, and the frame the damage is reported at."""
    run = {"records": [], "last": None, "watermark": 0, "stop": None, "orphan_bytes": 0}
    pos, last_frame, allow_gap, orphans = start, previous, resuming, resuming
    batch, batch_start = [], start

    def stop(frame_level):
        cut = batch_start if batch else pos
        run["stop"] = (cut, pos if frame_level else cut)
        return run

    while pos < len(data):
        status, f = decode(data, pos, header["seed"])
        if status != "ok":
            return stop(True)
        if orphans:
            if f["flags"] & CONTINUATION:
                # One out of order is the damage itself: checked before it
                # is skipped, so the search resumes right after it.
                if f["sequence"] >= SEQUENCE_LIMIT or (last_frame is not None and f["sequence"] <= last_frame):
                    return stop(True)
                pos += f["length"]
                run["orphan_bytes"] += f["length"]
                last_frame, allow_gap = f["sequence"], True
                continue
            orphans = False
        if not sequence_ok(header, f["sequence"], last_frame, allow_gap):
            return stop(True)
        if bool(f["flags"] & CONTINUATION) != bool(batch):
            # A continuation without its start is this frame's fault; an
            # interrupted batch is the batch's.
            return stop(not batch)
        allow_gap, last_frame = False, f["sequence"]
        run["watermark"] = max(run["watermark"], f["watermark"])
        if not batch:
            batch_start = pos
        batch.append(f)
        pos += f["length"]
        if f["flags"] & CONTINUES:
            continue
        run["records"] += batch
        batch = []
        run["last"] = f["sequence"]
    if batch:
        return stop(False)
    return run


def resynchronize(data, header, after, previous):
    floor = previous if previous is not None else header["base"] - 1
    for c in range(after + 1, len(data) - FRAME_HEADER + 1):
        status, f = decode(data, c, header["seed"])
        if status == "ok" and floor < f["sequence"] < SEQUENCE_LIMIT:
            return c
    return None


def analyze(data, header, name):
    leading = scan_run(data, header, HEADER_SIZE, None, False)
    result = {"leading": leading, "damage": None}
    if leading["stop"] is None:
        return result
    cut, frame = leading["stop"]
    damage = {"cut": cut, "frame": frame, "later": [], "watermark": 0, "highest": None, "skipped": [],
              "zero_tail": False}
    if cut == frame and not any(data[frame:]):
        # Zeros from a frame boundary to the end of the file: space allocated
        # ahead and never written (FORMAT.md). Clean in the newest appended
        # segment; damage in any other.
        damage["zero_tail"] = True
        damage["skipped"].append((name, frame, len(data) - frame))
        result["damage"] = damage
        return result
    previous = leading["last"]
    while True:
        nxt = resynchronize(data, header, frame, previous)
        damage["skipped"].append((name, frame, (len(data) if nxt is None else nxt) - frame))
        if frame > cut:
            damage["skipped"].append((name, cut, frame - cut))  # intact frames of the discarded batch
        if nxt is None:
            break
        run = scan_run(data, header, nxt, previous, True)
        if run["orphan_bytes"]:
            damage["skipped"].append((name, nxt, run["orphan_bytes"]))
        damage["later"] += run["records"]
        damage["watermark"] = max(damage["watermark"], run["watermark"])
        if run["last"] is not None:
            damage["highest"] = max(damage["highest"] or 0, run["last"])
            previous = run["last"]
        if run["stop"] is None:
            break
        cut, frame = run["stop"]
        frame = max(frame, nxt)
    result["damage"] = damage
    return result


# ---- The directory: intent, chain, torn tail --------------------------------

def read_intent(data):
    """The intent as (inputs, outputs), "damaged", or raises OpenError for a newer version."""
    if len(data) < 24 or data[:8] != INTENT_MAGIC or zlib.crc32(data[:-4]) != u32(data, len(data) - 4):
        return "damaged"
    if u16(data, 8) != 1:
        raise OpenError("unsupported format", "COMPACTION", None)
    flags, n, m = u16(data, 10), u32(data, 12), u32(data, 16)
    if flags & ~1 or 20 + 16 * (n + m) + 4 != len(data):
        return "damaged"
    pairs = [(u64(data, 20 + 16 * i), u64(data, 28 + 16 * i)) for i in range(n + m)]
    return pairs[:n], pairs[n:]


def read_log(directory, salvage=True):
    """Reads the log read-only. Returns (report, entries); raises OpenError."""
    names = sorted(os.listdir(directory))
    report = {"segments": 0, "records": 0, "liveKeys": 0, "nextSequence": 1, "truncatedTail": None,
              "skipped": [], "interruptedCompaction": None, "removedTemporaryFiles": [], "clean": True}
    segments, compacting = {}, {}

    def load(name, base):
        with open(os.path.join(directory, name), "rb") as f:
            data = f.read()
        header, _ = read_header(data)
        if isinstance(header, tuple):
            raise OpenError("unsupported format", name, 8)
        # Check 10: a header naming another base leaves the file unusable,
        # but its salt still identifies it to a compaction intent.
        return {"name": name, "base": base, "data": data, "salt": header["salt"] if header else None,
                "header": header if header and header["base"] == base else None}

    for name in names:
        match = SEGMENT_NAME.match(name)
        if match:
            segments[int(match.group(1))] = load(name, int(match.group(1)))
        elif name.endswith(".tmp") and (name == "COMPACTION.tmp" or SEGMENT_NAME.match(name[:-4])):
            report["removedTemporaryFiles"].append(name)
        elif name.endswith(".compacting") and SEGMENT_NAME.match(name[:-len(".compacting")]):
            base = int(name[:20])
            compacting[base] = load(name, base)
    effective = dict(segments)
    if "COMPACTION" in names:
        with open(os.path.join(directory, "COMPACTION"), "rb") as f:
            data = f.read()
        intent = read_intent(data)
        if intent == "damaged":
            if not salvage:
                raise OpenError("corruption", "COMPACTION", 0)
            report["skipped"].append(("COMPACTION", 0, len(data)))
        else:
            inputs, outputs = intent
            output_salts = {salt for _, salt in outputs}
            for base, _ in inputs:
                if base in effective and (effective[base]["salt"] or 0) not in output_salts:
                    del effective[base]
            for base, salt in outputs:
                if base in compacting and compacting[base]["salt"] == salt:
                    effective[base] = compacting[base]
                elif base not in effective or effective[base]["salt"] != salt:
                    raise OpenError("corruption", "%020d.seg" % base, None)
            report["interruptedCompaction"] = "completed"
    elif compacting:
        report["interruptedCompaction"] = "rolledBack"

    ordered = [effective[b] for b in sorted(effective)]
    events = []  # (file, offset) of every damage in chain order: a strict open fails on the first
    damaged_reports = []
    records, highest, previous, newest_base = [], 0, None, 0
    torn = None
    for position, seg in enumerate(ordered):
        header, name = seg["header"], seg["name"]
        if header is None:
            events.append((name, 0))
            damaged_reports.append([(name, 0, len(seg["data"]))])
            previous = {"header": None, "damaged": True}
            continue
        if previous is not None and not previous["damaged"]:
            prev = previous["header"]
            expected = prev["cover_end"] if prev["cover_end"] is not None else \
                (previous["last"] + 1 if previous["last"] is not None else None)
            if expected is not None and header["base"] < expected:
                events.append((name, 0))
                damaged_reports.append([(name, 0, len(seg["data"]))])
                previous = {"header": header, "damaged": True}
                continue
            if expected is None or header["base"] > expected:
                events.append((name, 0))
                if not salvage:
                    previous = {"header": header, "damaged": True}
                    continue
                report["skipped"].append((name, 0, 0))
        newest = position == len(ordered) - 1
        analysis = analyze(seg["data"], header, name)
        leading, damage = analysis["leading"], analysis["damage"]
        report["segments"] += 1
        records += leading["records"]
        if leading["last"] is not None:
            highest = max(highest, leading["last"])
        if header["cover_end"] is not None:
            highest = max(highest, header["cover_end"] - 1)
        damaged = False
        if damage is not None and damage["zero_tail"] and newest and header["cover_end"] is None:
            damage = None  # the newest segment's space allocated ahead
        if damage is not None:
            first_lost = (leading["last"] if leading["last"] is not None else header["base"] - 1) + 1
            unsynced = not damage["later"] or damage["watermark"] < first_lost
            if newest and header["cover_end"] is None and unsynced:
                torn = {"file": name, "offset": damage["cut"], "bytes": len(seg["data"]) - damage["cut"],
                        "unreachableRecords": sum(1 for r in damage["later"] if r["kind"] != MARKER)}
            else:
                damaged = True
                events.append((name, damage["frame"]))
                damaged_reports.append(damage["skipped"])
                records += damage["later"]
                if damage["highest"] is not None:
                    highest = max(highest, damage["highest"])
        previous = {"header": header, "damaged": damaged,
                    "last": leading["last"] if leading["last"] is not None else
                    (header["cover_end"] - 1 if header["cover_end"] is not None else None)}
        newest_base = header["base"]

    if events and not salvage:
        file, offset = events[0]
        raise OpenError("corruption", file, offset)
    for ranges in damaged_reports:
        report["skipped"] += ranges
    report["nextSequence"] = max(highest + 1, newest_base)

    index = {}
    for r in records:
        if r["kind"] == VALUE:
            index[r["key"]] = {"value": r, "annotation": None}
        elif r["kind"] == ANNOTATION and r["key"] in index:
            index[r["key"]]["annotation"] = r
        elif r["kind"] == TOMBSTONE:
            index.pop(r["key"], None)
    report["records"] = sum(1 for r in records if r["kind"] != MARKER)
    report["liveKeys"] = len(index)
    report["truncatedTail"] = torn
    report["clean"] = torn is None and not report["skipped"]
    report["skipped"] = [{"file": f, "offset": o, "bytes": b} for f, o, b in report["skipped"]]
    return report, [entry_json(e) for e in sorted(index.values(), key=lambda e: e["value"]["sequence"])]


def entry_json(entry):
    value, note = entry["value"], entry["annotation"]
    out = {"sequence": value["sequence"], "type": "value", "length": len(value["payload"]),
           "payload": base64.b64encode(value["payload"]).decode()}
    try:
        out["key"] = value["key"].decode("utf-8")
    except UnicodeDecodeError:
        out["keyBase64"] = base64.b64encode(value["key"]).decode()
    if value["expiry"] is not None:
        out["expiresAt"] = value["expiry"]
    if note is not None:
        out["annotation"] = base64.b64encode(note["payload"]).decode()
        out["annotationSequence"] = note["sequence"]
        if note["expiry"] is not None:
            out["annotationExpiresAt"] = note["expiry"]
    return out


# ---- Commands ---------------------------------------------------------------

def verify(directory):
    try:
        report, _ = read_log(directory)
    except OpenError as error:
        return {"error": {"code": error.code, "file": error.file, "offset": error.offset}}, \
            1 if error.code == "corruption" else 2
    return report, 0 if report["clean"] else 1


def strict(directory):
    try:
        read_log(directory, salvage=False)
        return {"ok": True}
    except OpenError as error:
        return {"error": {"code": error.code, "file": error.file, "offset": error.offset}}


def comparable_report(report):
    """The fields another reader must agree on (FORMAT.md, "What a reader reports")."""
    if "error" in report:
        return {"error": report["error"]}
    keys = ["segments", "records", "liveKeys", "nextSequence", "interruptedCompaction", "removedTemporaryFiles", "clean"]
    out = {key: report[key] for key in keys}
    tail = report["truncatedTail"]
    out["truncatedTail"] = None if tail is None else {k: tail[k] for k in ("file", "offset", "bytes", "unreachableRecords")}
    out["skipped"] = sorted((s["file"], s["offset"], s["bytes"]) for s in report["skipped"])
    return out


def compare_vector(folder, expected):
    """The disagreements of this reader with one vector's expected.json."""
    log = os.path.join(folder, "log")
    if not os.path.isdir(log):
        # Git keeps no empty directory: a vector without log/ is an empty log.
        log = tempfile.mkdtemp(prefix="outbox-vector-")
    report, status = verify(log)
    problems = []
    if status != expected["verify"]["exitCode"]:
        problems.append(f"verify exit {status}, expected {expected['verify']['exitCode']}")
    mine, theirs = comparable_report(report), comparable_report(expected["verify"]["json"])
    if mine != theirs:
        problems.append(f"verify {json.dumps(mine)}\n    expected {json.dumps(theirs)}")
    if "error" not in report:
        _, entries = read_log(log)
        if entries != expected["dump"]["entries"]:
            problems.append(f"dump {json.dumps(entries)}\n    expected {json.dumps(expected['dump']['entries'])}")
    outcome = strict(log)
    if outcome != expected["strict"]:
        problems.append(f"strict open {json.dumps(outcome)}, expected {json.dumps(expected['strict'])}")
    return problems


def check(vectors):
    return vectorcheck.check_vectors(vectors, compare_vector, "vectors")


def main(argv):
    if len(argv) != 3 or argv[1] not in ("verify", "dump", "check"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    command, path = argv[1], argv[2]
    if command == "check":
        return check(path)
    if command == "verify":
        report, status = verify(path)
        print(json.dumps(report))
        return status
    try:
        _, entries = read_log(path)
    except OpenError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1 if error.code == "corruption" else 2
    for entry in entries:
        print(json.dumps(entry))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
