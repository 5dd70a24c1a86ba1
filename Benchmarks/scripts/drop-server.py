#!/usr/bin/env python3
"""An Idempotency-Key server that is not ours, for measuring `outbox drain`
against connection drops (Docs/BENCHMARKS.md, "Drain CPU under connection drops").

Every write is applied once per key and answered 201 {"id": N}; a key sent
again with a different request (method, path, body) gets 422, as the IETF
draft says. With --drop-every N, every N-th request is applied and then the
connection is closed without an answer (what a server crash after commit, a
load balancer's idle timeout or a mobile network drop looks like).
GET /stats prints what was applied. Loopback only; stops on SIGTERM.
"""
import argparse, hashlib, json, socket, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()
keys = {}          # key -> (fingerprint, response body)
stats = {"requests": 0, "applied": 0, "dropped": 0, "replayed": 0, "mismatched": 0, "emptyBodies": 0}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = json.dumps(stats, sort_keys=True).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        key = self.headers.get("Idempotency-Key") or ""
        fingerprint = hashlib.sha256(self.command.encode() + b" " + self.path.encode() + b" " + body).hexdigest()
        with lock:
            stats["requests"] += 1
            if not body:
                stats["emptyBodies"] += 1
            drop = args.drop_every > 0 and stats["requests"] % args.drop_every == 0
            if key in keys:
                if keys[key][0] != fingerprint:
                    stats["mismatched"] += 1
                    status, answer = 422, {"type": "key-reused", "title": "Idempotency-Key reused"}
                else:
                    stats["replayed"] += 1
                    status, answer = 201, keys[key][1]
            else:
                stats["applied"] += 1
                answer = {"id": stats["applied"]}
                keys[key] = (fingerprint, answer)
                status = 201
            if drop:
                stats["dropped"] += 1
        if drop:
            self.connection.shutdown(socket.SHUT_RDWR)
            self.connection.close()
            self.close_connection = True
            return
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_PUT = do_POST


parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, default=8099)
parser.add_argument("--drop-every", type=int, default=0)
args = parser.parse_args()
class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that went away (its timeout) is not news


Server(("127.0.0.1", args.port), Handler).serve_forever()
