#!/usr/bin/env python3
"""Gateway memory while many clients upload large bodies they never finish.

Starts a gateway (a `tenants` section with `anonymous_tenant`, so requests without a key
are read; one pool whose endpoint nobody serves: no request gets that far), opens
--connections connections that each send a POST /v1/chat/completions header announcing
--declared-mib MiB and then --send-mib MiB of it, and holds them open. Samples the
gateway's RSS (VmRSS) before, once every connection has sent what it could (or was
answered), and after they close. Connections the gateway refuses get their answer's status
line recorded (e.g. 503 with max_buffered_body_bytes); the body of a refused request is
drained unread by the gateway for 2 s, then its connection closed.

Usage: benchmarks/upload_flood.py KINFERENCE_BINARY [--connections 40] [--send-mib 29]
       [--declared-mib 30] [--config-extra 'max_buffered_body_bytes: 0']
--config-extra lines are appended to the gateway config (e.g. to turn the caps off and
measure without them). Prints one JSON line: rss_mb idle, held (peak of the samples while
held) and after; answers by status line; connections that were still sending when held.
Processes it starts are stopped by pid; temp files go to a mktemp directory.
"""
import argparse
import json
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time

from loopback import free_port, rss_mb, start_gateway  # benchmarks/loopback.py


def upload(port, declared, send, results, i, done):
    s = socket.create_connection(("127.0.0.1", port))
    results[i] = {"sock": s, "status": None}
    head = ("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {declared}\r\n\r\n").encode()
    chunk = b"x" * (1 << 20)
    try:
        s.sendall(head)
        left = send
        s.settimeout(0.0)
        while left > 0:
            # Stop sending once the gateway answered (a refusal); it then drains and closes.
            try:
                got = s.recv(4096)
                if got:
                    results[i]["status"] = got.split(b"\r\n", 1)[0].decode()
                    break
            except BlockingIOError:
                pass
            s.settimeout(30)
            s.sendall(chunk[:min(left, len(chunk))])
            s.settimeout(0.0)
            left -= min(left, len(chunk))
        if results[i]["status"] is None:
            s.settimeout(1.0)
            try:
                got = s.recv(4096)
                if got:
                    results[i]["status"] = got.split(b"\r\n", 1)[0].decode()
            except (socket.timeout, BlockingIOError):
                pass
    except OSError as e:
        results[i]["status"] = results[i]["status"] or f"send failed: {e.strerror or e}"
    done.release()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--connections", type=int, default=40)
    ap.add_argument("--send-mib", type=int, default=29)
    ap.add_argument("--declared-mib", type=int, default=30)
    ap.add_argument("--config-extra", action="append", default=[])
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="kinference-upload-flood-")
    port = free_port()
    config = "\n".join([
        f"listen: {{address: 127.0.0.1, port: {port}}}",
        "tenants:",
        "  anonymous_tenant: free",
        "  keys: [{sha256: '" + "0" * 64 + "', tenant: acme}]",
        "pools:",
        f"  - {{name: p, model: m, endpoints: ['http://127.0.0.1:{free_port()}']}}",
        *args.config_extra, ""])
    gw = start_gateway(args.binary, tmp, config, port)
    try:
        time.sleep(1)
        idle = rss_mb(gw.pid)
        results = [None] * args.connections
        done = threading.Semaphore(0)
        for i in range(args.connections):
            threading.Thread(target=upload, daemon=True,
                             args=(port, args.declared_mib << 20, args.send_mib << 20, results,
                                   i, done)).start()
        held = idle
        for _ in range(args.connections):
            while not done.acquire(timeout=0.2):
                held = max(held, rss_mb(gw.pid))
        for _ in range(10):  # held a while: what stays resident
            held = max(held, rss_mb(gw.pid))
            time.sleep(0.2)
        answers = {}
        for r in results:
            key = r["status"] or "no answer (held)"
            answers[key] = answers.get(key, 0) + 1
        for r in results:
            r["sock"].close()
        time.sleep(3)
        after = rss_mb(gw.pid)
        print(json.dumps({"connections": args.connections, "send_mib": args.send_mib,
                          "declared_mib": args.declared_mib, "config_extra": args.config_extra,
                          "rss_mb": {"idle": round(idle, 1), "held": round(held, 1),
                                     "after": round(after, 1)},
                          "answers": answers}))
    finally:
        gw.send_signal(signal.SIGKILL)
        gw.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
