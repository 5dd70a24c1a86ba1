#!/usr/bin/env python3
"""A second reader of the outbox store's and the key store's files, written
from Docs/STORE-FORMAT.md and Docs/FORMAT.md (Python 3, standard library;
the log's frames are read by Scripts/logreader.py).

Usage:
  storereader.py queue DIR      a plain queue's records (and SCHEDULE) as JSON
  storereader.py keys DIR       a key store's records as JSON
  storereader.py durable DIR    a durable queue's records as JSON
  storereader.py check VECTORS  each vector (Tests/StoreVectors) against its expected.json

Plain queues only: a sealed queue's records are AES-GCM boxes, which the
standard library cannot open. Exit status: 0 agreement, 1 a disagreement
or a record that does not decode, 2 bad usage.
"""
import base64
import hashlib
import hmac
import json
import os
import struct
import sys
import unicodedata
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import logreader  # noqa: E402  (the log's frames: FORMAT.md)
import vectorcheck  # noqa: E402  (the `check` loop both format readers share)

# Times a record may hold (ms since 1970): 0001-01-01T00:00:00Z to the end of
# 9999 plus 100 × 365 days (STORE-FORMAT.md, "The outbox store's records").
TIME_MIN = -62_135_596_800_000
TIME_MAX = 253_402_300_799_999 + 100 * 365 * 86_400_000
SEQUENCE_LIMIT = (1 << 63) - 1
MESSAGE_LIMIT = 2048
ENTRY, COMPLETION = 0x45, 0x43  # "E", "C"
QUARANTINED, PENDING = 3, 0


class Damage(Exception):
    """Bytes no store writes: the reader refuses them rather than guess."""


class Reader:
    def __init__(self, data):
        self.data, self.at = bytes(data), 0

    def take(self, count):
        if count < 0 or count > len(self.data) - self.at:
            raise Damage(f"{count} bytes wanted at byte {self.at}, {len(self.data) - self.at} left")
        self.at += count
        return self.data[self.at - count:self.at]

    def left(self):
        return len(self.data) - self.at

    def unpack(self, fmt):
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))[0]

    def u8(self): return self.unpack("B")
    def u16(self): return self.unpack("H")
    def u32(self): return self.unpack("I")
    def u64(self): return self.unpack("Q")
    def i16(self): return self.unpack("h")
    def i32(self): return self.unpack("i")
    def i64(self): return self.unpack("q")

    def text(self, raw):
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise Damage(f"invalid UTF-8 before byte {self.at}")

    def str(self):  # u32 length and UTF-8
        return self.text(self.take(self.u32()))

    def opt_str(self):  # u8 presence (0 or 1), then str
        flag = self.u8()
        if flag not in (0, 1):
            raise Damage(f"presence flag {flag}")
        return self.str() if flag else None

    def time(self, what):
        value = self.i64()
        if not TIME_MIN <= value <= TIME_MAX:
            raise Damage(f"{what} of {value} ms is not a time a store writes")
        return value

    def count(self, value, each):
        if value > self.left() // each:
            raise Damage(f"a count of {value}, more than the {self.left()} bytes left can hold")
        return value

    def end(self):
        if self.left():
            raise Damage(f"{self.left()} bytes left over")


def ascending(names):
    """Strictly increasing in Swift's String order: Unicode scalar values of
    the canonically composed (NFC) form."""
    keys = [unicodedata.normalize("NFC", n) for n in names]
    return all(a < b for a, b in zip(keys, keys[1:]))


# ---- The outbox store's records ---------------------------------------------

def read_failures(r, status, dependencies):
    fields = r.u8()
    if fields & ~7:
        raise Damage(f"unknown failure fields {fields}")
    if fields == 0:
        return None
    last = None
    if fields & 1:
        cause = r.u8()
        if not 1 <= cause <= 17:
            raise Damage(f"unknown cause {cause}")
        fate = parent = None
        if cause == 13:
            fate, parent = r.u8(), r.take(16).hex()
            if not 1 <= fate <= 6:
                raise Damage(f"unknown fate {fate}")
            if status != QUARANTINED or parent not in dependencies:
                raise Damage("a dependency failure on an entry not quarantined, or naming no dependency of it")
        status_code = r.i32()
        if status_code != -1 and not 100 <= status_code <= 999:
            raise Damage(f"HTTP status {status_code}")
        message = r.opt_str()
        if message is not None and len(message.encode()) > MESSAGE_LIMIT:
            raise Damage("a message over 2,048 bytes")
        last = {"cause": cause, "fate": fate, "parent": parent, "httpStatus": status_code, "message": message}
    first = r.time("the first answer") if fields & 2 else None
    unknown = r.time("the unknown outcome") if fields & 4 else None
    return {"last": last, "firstAnswer": first, "outcomeUnknownSince": unknown}


def read_body(value, key, partition):
    r = Reader(value)
    if r.u8() != 1:
        raise Damage("unknown body version")
    flags = r.u8()
    if flags & ~6:
        raise Damage(f"unknown body flags {flags}")
    body = {"id": r.take(16).hex()}
    if bytes.fromhex(body["id"]) != key[1:]:
        raise Damage("a body under another entry's key")
    body["sequence"] = r.u64()
    if body["sequence"] > SEQUENCE_LIMIT:
        raise Damage("a sequence number no store reaches")
    body["createdAt"] = r.time("the creation time")
    body["priority"] = r.i16()
    body["maxAttempts"] = r.u16()
    if body["maxAttempts"] == 0:
        raise Damage("max attempts 0")
    body["type"], body["scope"], body["coalescingKey"] = r.str(), r.opt_str(), r.opt_str()
    body["partition"] = r.str()
    if body["partition"] != partition:
        raise Damage(f"an entry of partition {body['partition']!r} in {partition!r}'s queue")
    body["dependencies"] = [r.take(16).hex() for _ in range(r.count(r.u16(), 16))]
    body["idempotencyKey"] = r.str()
    body["keySuppliedByApp"] = bool(flags & 2)
    body["method"] = r.str()
    payload_file = r.take(61) if flags & 4 else None
    body["endpoint"] = r.str()
    body["headers"] = [[r.str(), r.str()] for _ in range(r.u16())]
    if not ascending([name for name, _ in body["headers"]]):
        raise Damage("header names out of order or repeated")
    body["payload"] = r.take(r.u32())
    if payload_file is not None and (body["payload"] or payload_file[0] not in (1, 2)):
        raise Damage("a payload both in the record and in a file, or an unknown layout")
    r.end()
    body["payload"] = base64.b64encode(body["payload"]).decode()
    return body


def read_state(annotation, body):
    if annotation is None:
        return None  # never changed since its enqueue: pending, no attempt, due at once
    r = Reader(annotation)
    if r.u8() != 4:
        raise Damage("unknown state version")
    status = r.u8()
    if status > 5:
        raise Damage(f"unknown status {status}")
    state = {"status": status, "attempts": r.u16(), "when": r.time("the state's time")}
    state["failures"] = read_failures(r, status, body["dependencies"])
    r.end()
    return state


def read_completion(value, key):
    r = Reader(value)
    version = r.u8()
    if version not in (1, 2):
        raise Damage(f"unknown completion version {version}")
    out = {"id": key[1:].hex(), "syncedAt": r.time("the delivery time"), "serverID": r.opt_str(), "appKey": None}
    if version == 2:
        out["appKey"] = r.opt_str()
        if out["appKey"] is None:
            raise Damage("a version 2 completion without its key")
    r.end()
    return out


def live_records(directory):
    """(key bytes, value bytes, annotation bytes or None, expiry) of every live key, in sequence order."""
    _, entries = logreader.read_log(directory, salvage=False)
    for e in entries:
        key = e["key"].encode() if "key" in e else base64.b64decode(e["keyBase64"])
        note = base64.b64decode(e["annotation"]) if "annotation" in e else None
        yield key, base64.b64decode(e["payload"]), note, e.get("expiresAt")


def read_queue(directory):
    with open(os.path.join(directory, "PARTITION"), "rb") as f:
        raw = f.read()
    if raw[:1] == b"\xa5":
        raise Damage("a sealed queue: this reader reads plain ones only")
    partition = Reader(raw).text(raw)
    entries, completions, others = [], [], []
    for key, value, note, _ in live_records(directory):
        if key[0] == ENTRY and len(key) == 17:
            body = read_body(value, key, partition)
            body["state"] = read_state(note, body)
            entries.append(body)
        elif key[0] == COMPLETION and len(key) == 17:
            completions.append(read_completion(value, key))
        else:
            others.append({"key": key.hex(), "value": value.hex()})
    out = {"queue": {"partition": partition, "entries": sorted(entries, key=lambda e: e["sequence"]),
                     "completions": sorted(completions, key=lambda c: c["id"]), "otherRecords": others}}
    schedule = os.path.join(directory, "SCHEDULE")
    if os.path.exists(schedule):
        with open(schedule, "rb") as f:
            out["checkpoint"] = read_schedule(f.read())
    return out


# ---- The outbox store's checkpoint (SCHEDULE) -------------------------------

def read_schedule(data):
    r = Reader(data)
    if r.take(8) != b"OBXSCHD\n":
        raise Damage("not a store checkpoint")
    version, flags, size = r.u16(), r.u16(), r.u32()
    if len(data) < size or zlib.crc32(data[:size - 4]) != struct.unpack_from("<I", data, size - 4)[0]:
        raise Damage("the header fails its CRC")
    if version != 4 or flags & ~1:
        raise Damage(f"version {version} or flags {flags}")
    if flags & 1:
        raise Damage("a sealed checkpoint: this reader reads plain ones only")
    next_sequence, body_size, body_crc = r.u64(), r.u64(), r.u32()
    if not 1 <= next_sequence <= SEQUENCE_LIMIT:
        raise Damage("a next sequence number no store writes")
    position = {"sequence": r.u64(), "segments": []}
    for _ in range(r.u32()):
        position["segments"].append({"base": r.u64(), "salt": r.u64()})
    if r.at != size - 4:
        raise Damage("the header's size does not match its fields")
    body = data[size:]
    if len(body) != body_size or zlib.crc32(body) != body_crc:
        raise Damage("the body fails its size or CRC")
    out = {"version": version, "nextSequence": next_sequence, "position": position}
    out.update(read_schedule_body(Reader(body), next_sequence))
    return out


def read_schedule_body(r, next_sequence):
    names = {}
    for _ in range(r.count(r.u32(), 8)):
        name_id, name = r.u32(), r.str()
        if name_id == 0 or name_id in names or name in names.values():
            raise Damage(f"name id {name_id} is 0, repeated, or its name is under another id")
        names[name_id] = name
    used, entries, keys = set(), [], {}
    for _ in range(r.count(r.u64(), 64)):
        e = {"id": r.take(16).hex(), "sequence": r.u64()}
        if e["sequence"] >= next_sequence:
            raise Damage(f"entry {e['id']} is numbered at or past the next sequence number")
        e["when"], e["createdAt"] = r.time("the entry's time"), r.time("the creation time")
        e["storedBytes"] = r.u32()
        scope, kind, coalescing = r.u32(), r.u32(), r.u32()
        for name_id in (scope, kind, coalescing):
            if name_id and name_id not in names:
                raise Damage(f"unknown name id {name_id}")
            used.add(name_id)
        e["type"], e["scope"], e["coalescingKey"] = names.get(kind), names.get(scope), names.get(coalescing)
        e["priority"], e["attempts"], e["maxAttempts"], e["status"] = r.i16(), r.u16(), r.u16(), r.u8()
        flags = r.u8()
        if e["status"] > 5 or flags & ~31 or flags & 16:
            raise Damage(f"status {e['status']} or flags {flags} (a log key in a plain checkpoint)")
        e["unchanged"] = bool(flags & 1)
        if e["unchanged"] and not (coalescing and e["status"] == PENDING):
            raise Damage("the unchanged flag on an entry other than a pending one with a coalescing key")
        e["dependencies"] = []
        if flags & 2:
            count = r.count(r.u16(), 16)
            if count == 0:
                raise Damage("an empty dependency list")
            e["dependencies"] = [r.take(16).hex() for _ in range(count)]
        e["appKey"] = r.str() if flags & 4 else None
        if e["appKey"] is not None and keys.setdefault(e["appKey"], e["id"]) != e["id"]:
            raise Damage("two entries hold one app key")
        e["failures"] = read_failures(r, e["status"], e["dependencies"]) if flags & 8 else None
        if flags & 8 and e["failures"] is None:
            raise Damage("a failure with no field")
        entries.append(e)
    if set(names) - used:
        raise Damage("a name no entry uses")
    ids = {e["id"]: e for e in entries}
    if len(ids) != len(entries):
        raise Damage("an entry appears twice")
    completions = read_schedule_completions(r, ids, keys)
    r.end()
    return {"names": {str(k): v for k, v in names.items()},
            "entries": sorted(entries, key=lambda e: e["sequence"]),
            "completions": sorted(completions, key=lambda c: c["id"])}


def read_schedule_completions(r, entries, keys):
    completions = {}
    for _ in range(r.count(r.u64(), 25)):
        c = {"id": r.take(16).hex(), "syncedAt": r.time("the delivery time")}
        flags = r.u8()
        if flags & ~21 or flags & 16:
            raise Damage(f"completion flags {flags} (a log key in a plain checkpoint)")
        c["serverID"] = r.str() if flags & 1 else None
        c["appKey"] = r.str() if flags & 4 else None
        if c["id"] in entries:
            if entries[c["id"]]["appKey"] != c["appKey"]:
                raise Damage("a completion holds another key than its entry")
        elif c["appKey"] is not None and keys.setdefault(c["appKey"], c["id"]) != c["id"]:
            raise Damage("a completion holds another id's app key")
        if c["id"] in completions:
            raise Damage("a completion appears twice")
        completions[c["id"]] = c
    return list(completions.values())


# ---- The key store's records -------------------------------------------------

def read_key_record(value):
    r = Reader(value)

    def str16(): return r.text(r.take(r.u16()))

    if r.u8() != 1:
        raise Damage("unknown key record version")
    kind = r.u8()
    if kind not in (1, 2, 3):
        raise Damage(f"unknown kind {kind}")
    out = {"kind": kind, "key": str16(), "fingerprint": r.take(r.u16()).hex(),
           "since": None, "owner": None, "reason": None, "response": None}
    if kind == 1:
        status, headers = r.u16(), []
        for _ in range(r.u16()):
            headers.append([str16(), str16()])
        if not ascending([name for name, _ in headers]):
            raise Damage("headers out of order or repeated")
        out["response"] = {"status": status, "headers": headers,
                           "body": base64.b64encode(r.take(r.u32())).decode()}
    elif kind == 2:
        out["since"], out["owner"] = r.i64(), str16()
    else:
        out["since"], out["reason"] = r.i64(), r.u8()
        if out["reason"] not in (1, 2, 3):
            raise Damage(f"unknown reason {out['reason']}")
    r.end()
    return out


def read_keys(directory):
    with open(os.path.join(directory, "keys.secret"), "rb") as f:
        secret = f.read()
    records = []
    for key, value, _, expiry in live_records(directory):
        record = read_key_record(value)
        if expiry is None:
            raise Damage(f"the record of {record['key']!r} has no expiry")
        namespace = b"s" if record["kind"] == 1 else b"u"
        digest = hmac.new(secret, record["key"].encode(), hashlib.sha256).digest()[:12]
        if key != namespace + digest:
            raise Damage(f"the record of {record['key']!r} is not under its key's digest")
        record.update({"logKey": key.hex(), "expiresAt": expiry})
        records.append(record)
    return {"keys": records}


# ---- Commands ----------------------------------------------------------------

def differences(expected, actual, path=""):
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = []
        for key in sorted(set(expected) | set(actual)):
            here = f"{path}.{key}" if path else key
            if key not in expected or key not in actual:
                out.append(f"{here}: {'not expected' if key not in expected else 'not decoded'}")
            else:
                out += differences(expected[key], actual[key], here)
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{path}: expected {len(expected)} items, decoded {len(actual)}"]
        return [d for i, (a, b) in enumerate(zip(expected, actual)) for d in differences(a, b, f"{path}[{i}]")]
    if expected != actual or type(expected) is not type(actual):
        return [f"{path}: expected {json.dumps(expected)}, decoded {json.dumps(actual)}"]
    return []


# ---- The durable queue's records (OutboxQueue) ------------------------------

def read_durable_queue(directory):
    """A DurableQueue's two logs: elements (an 8-byte key; the append time,
    then the element's bytes) and consumers (9 bytes: version 1, then the
    committed position), as STORE-FORMAT.md says."""
    elements = []
    for key, value, note, expiry in live_records_with_sequence(os.path.join(directory, "elements")):
        key, sequence = key
        if len(key) != 8 or note is not None or expiry is not None:
            raise Damage(f"element record {key.hex()}: an 8-byte key, no annotation and no expiry expected")
        if len(value) < 8:
            raise Damage(f"element at {sequence}: {len(value)} bytes, shorter than its 8-byte header")
        appended = struct.unpack("<q", value[:8])[0]
        elements.append({"position": sequence, "key": key.hex(), "appendedAt": appended,
                         "bytes": base64.b64encode(value[8:]).decode()})
    consumers = []
    for (key, _), value, note, _ in live_records_with_sequence(os.path.join(directory, "consumers")):
        if not 1 <= len(key) <= 255 or len(value) != 9 or value[0] != 1 or note is not None:
            raise Damage(f"consumer {key.hex()}: {len(value)} bytes, not 9 of version 1")
        consumers.append({"name": key.hex(), "committed": struct.unpack("<Q", value[1:])[0]})
    return {"durableQueue": {"elements": sorted(elements, key=lambda e: e["position"]),
                             "consumers": sorted(consumers, key=lambda c: c["name"])}}


def live_records_with_sequence(directory):
    """((key bytes, sequence), value bytes, annotation bytes or None, expiry) of every live key."""
    _, entries = logreader.read_log(directory, salvage=False)
    for e in entries:
        key = e["key"].encode() if "key" in e else base64.b64decode(e["keyBase64"])
        note = base64.b64decode(e["annotation"]) if "annotation" in e else None
        yield (key, e["sequence"]), base64.b64decode(e["payload"]), note, e.get("expiresAt")


def read_store(directory):
    if os.path.isdir(os.path.join(directory, "elements")):
        return read_durable_queue(directory)
    return read_keys(directory) if os.path.exists(os.path.join(directory, "keys.secret")) else read_queue(directory)


def compare_vector(folder, expected):
    """The disagreements of this reader with one store vector's expected.json."""
    expected.pop("summary", None)
    try:
        return differences(expected, read_store(os.path.join(folder, "files")))
    except (Damage, logreader.OpenError) as error:
        return [f"does not decode: {error}"]


def check(vectors):
    return vectorcheck.check_vectors(vectors, compare_vector, "store vectors")


def main(argv):
    if len(argv) != 3 or argv[1] not in ("queue", "keys", "durable", "check"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    command, path = argv[1], argv[2]
    if command == "check":
        return check(path)
    try:
        readers = {"queue": read_queue, "keys": read_keys, "durable": read_durable_queue}
        print(json.dumps(readers[command](path), indent=2, sort_keys=True))
    except (Damage, logreader.OpenError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
