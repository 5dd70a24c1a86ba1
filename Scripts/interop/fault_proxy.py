"""A loopback HTTP/1.1 fault proxy: what a phone losing its network looks like
to a client, while the server goes on.

Each request on a client connection is forwarded to the upstream server over
a connection of its own pairing; with probability `rate` it meets a fault:

- close-before-answer: the request is forwarded whole, then the client's
  connection is closed (FIN) if no answer byte has come back within
  `drop_after` seconds — while the server is still applying it. The proxy
  keeps the upstream connection and reads the answer to its end, as a
  server whose client vanished in the network would write it into the void.
- close-mid-answer: the whole answer is read from upstream; the client gets
  its head and half of its body, then a FIN.
- rst-after-apply: the whole answer is read from upstream (the write was
  applied); the client gets a TCP reset and nothing else.

`mix` draws one of the three for each faulted request. An upstream
connection the server closed while idle is replaced before the next request;
one it closes as a request arrives leaves the client without an answer, and
is counted as an `upstream-closed` fault (never drawn). Decisions come from a
seeded random generator, so a run can be repeated. Loopback only.

Besides the faults, the report says what the client could see of them and
of the server's answers, so tests compare the client with what was on the
wire rather than with timing: `replayed_answers` counts the whole 2xx
answers marked as replays (`Idempotent-Replayed: true`) the client got, and
`unnoticeable_cuts` the close-mid-answer faults on a non-2xx answer whose
body ends with the connection (no Content-Length: Django's WSGI server), which
look whole to HTTP.
"""

from __future__ import annotations

import asyncio
import random
import socket
import struct
from collections import Counter

FAULTS = ("close-before-answer", "close-mid-answer", "rst-after-apply")


class ProxyClosed(Exception):
    """The client or the upstream went away mid-message."""


async def read_head(reader: asyncio.StreamReader) -> bytes | None:
    """The bytes up to and including the blank line; None at a clean EOF."""
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as error:
        if not error.partial:
            return None
        raise ProxyClosed("connection closed inside a message head") from None
    except asyncio.LimitOverrunError:
        raise ProxyClosed("message head too large") from None


def header(head: bytes, name: bytes) -> bytes | None:
    for line in head.split(b"\r\n")[1:]:
        if b":" in line:
            key, value = line.split(b":", 1)
            if key.strip().lower() == name:
                return value.strip()
    return None


async def read_body(reader: asyncio.StreamReader, head: bytes, is_response: bool, request_method: bytes = b"") -> tuple[bytes, bool]:
    """The message body (as framed on the wire) and whether the connection
    ends with it (a close-delimited response)."""
    if is_response:
        code = status(head)
        if request_method == b"HEAD" or code in (204, 304) or 100 <= code < 200:
            return b"", False
    encoding = (header(head, b"transfer-encoding") or b"").lower()
    length = header(head, b"content-length")
    try:
        if b"chunked" in encoding:
            body = bytearray()
            while True:
                size_line = await reader.readuntil(b"\r\n")
                body += size_line
                size = int(size_line.split(b";")[0].strip(), 16)
                if size == 0:
                    body += await reader.readuntil(b"\r\n")  # no trailers expected
                    return bytes(body), False
                body += await reader.readexactly(size + 2)
        if length is not None:
            return await reader.readexactly(int(length)), False
        if is_response:
            return await reader.read(), True
        return b"", False
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
        raise ProxyClosed("connection closed inside a message body") from None


def status(head: bytes) -> int:
    return int(head.split(b" ", 2)[1])


def is_replay(head: bytes) -> bool:
    """Marked as a replayed answer, as the tested middlewares mark them."""
    return (header(head, b"idempotent-replayed") or b"").lower() in (b"true", b"1", b"yes")


def reset(writer: asyncio.StreamWriter) -> None:
    """Closes with a TCP reset (SO_LINGER 0)."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.transport.abort()


class FaultProxy:
    def __init__(self, upstream_port: int, rate: float, fault: str, drop_after: float, seed: int) -> None:
        if fault != "mix" and fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}: one of {', '.join(FAULTS)} or mix")
        self.upstream_port = upstream_port
        self.rate = rate
        self.fault = fault
        self.drop_after = drop_after
        self.random = random.Random(seed)
        self.requests = 0
        self.faults: Counter[str] = Counter()
        self.faulted_keys: set[str] = set()
        self.replayed_answers = 0
        self.unnoticeable_cuts = 0
        self.server: asyncio.base_events.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self.serve, "127.0.0.1", 0, limit=1 << 20)
        return self.server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    def draw(self) -> str | None:
        if self.random.random() >= self.rate:
            return None
        return self.random.choice(FAULTS) if self.fault == "mix" else self.fault

    async def serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            while True:
                head = await read_head(client_reader)
                if head is None:
                    return
                body, _ = await read_body(client_reader, head, is_response=False)
                self.requests += 1
                fault = self.draw()
                if upstream is not None and upstream[0].at_eof():
                    # The server closed the idle connection (uvicorn after 5 s
                    # of keep-alive): a proxy opens another, as nginx would.
                    upstream[1].close()
                    upstream = None
                if upstream is None:
                    upstream = await asyncio.open_connection("127.0.0.1", self.upstream_port, limit=1 << 20)
                up_reader, up_writer = upstream
                try:
                    up_writer.write(head + body)
                    await up_writer.drain()
                except (ConnectionError, OSError):
                    # Reset by the server (not a FIN, which at_eof saw):
                    # the client is left without an answer, a fault it sees.
                    self.note("upstream-closed", head)
                    return
                method = head.split(b" ", 1)[0]
                if fault == "close-before-answer":
                    first = asyncio.ensure_future(up_reader.read(1))
                    done, _ = await asyncio.wait({first}, timeout=self.drop_after)
                    if not done:
                        self.note(fault, head)
                        client_writer.close()  # FIN, while the server is still applying
                        await self.drain_answer(first, up_reader, up_writer, method)
                        return
                    # The answer started in time: no fault after all.
                    rest_head = await read_head(up_reader)
                    answer_head = first.result() + (rest_head or b"")
                else:
                    try:
                        answer_head = await read_head(up_reader)
                    except (ConnectionError, OSError):
                        answer_head = None
                if not answer_head:
                    # The client sees its connection closed without an answer:
                    # a fault it can see, counted as one (the server closing
                    # as the request arrived; not drawn).
                    self.note("upstream-closed", head)
                    raise ProxyClosed("upstream closed without an answer")
                answer_body, closes = await read_body(up_reader, answer_head, is_response=True, request_method=method)
                if fault == "rst-after-apply":
                    self.note(fault, head)
                    reset(client_writer)
                    return
                if fault == "close-mid-answer":
                    self.note(fault, head)
                    if closes and not 200 <= status(answer_head) < 300:
                        self.unnoticeable_cuts += 1
                    client_writer.write(answer_head + answer_body[: max(1, len(answer_body) // 2)])
                    await client_writer.drain()
                    client_writer.close()
                    return
                client_writer.write(answer_head + answer_body)
                await client_writer.drain()
                if 200 <= status(answer_head) < 300 and is_replay(answer_head):
                    self.replayed_answers += 1
                if closes or (header(answer_head, b"connection") or b"").lower() == b"close":
                    return
        except (ProxyClosed, ConnectionError, OSError):
            return
        finally:
            if not client_writer.is_closing():
                client_writer.close()
            if upstream is not None:
                upstream[1].close()

    @staticmethod
    async def drain_answer(first: asyncio.Future, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, method: bytes) -> None:
        """Reads the answer the client will never see to its end."""
        try:
            start = await first
            if not start:
                return
            rest = await read_head(reader)
            await read_body(reader, start + (rest or b""), is_response=True, request_method=method)
        except (ProxyClosed, ConnectionError, OSError):
            pass

    def note(self, fault: str, head: bytes) -> None:
        self.faults[fault] += 1
        key = header(head, b"idempotency-key")
        if key is not None:
            self.faulted_keys.add(key.decode("latin-1"))

    def report(self) -> dict:
        return {
            "requests": self.requests,
            "faults": dict(self.faults),
            "faulted_keys": sorted(self.faulted_keys),
            "replayed_answers": self.replayed_answers,
            "unnoticeable_cuts": self.unnoticeable_cuts,
        }
