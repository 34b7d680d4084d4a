#!/usr/bin/env python3
"""Gateway memory with clients that stop reading a stream (issue #12, backpressure).

Starts one engine-sim (fast clock) and a gateway in front of it, opens N connections that
each POST a long streamed chat completion (ignore_eos, max_tokens tokens) and then never
read, and samples the gateway's RSS (VmRSS) every second for DURATION seconds. Without
backpressure the gateway reads the whole generation and buffers it for the client; with
it the upstream read pauses at backpressure.client_buffer_bytes and, after
client_stall_timeout_s, the request is cancelled and the client closed.

Usage: benchmarks/slow_readers.py KINFERENCE_BINARY [--clients 20] [--duration 40]
       [--max-tokens 20000] [--time-scale 100] [--stall-timeout 30]
Prints one JSON line: rss_mb at start, peak and end, the gateway's stall counter, and
the tokens the engine generated for these requests (vllm:generation_tokens from its
/metrics at the end: nobody read any of them, the clients read nothing) with the time
they stopped growing (the upstream requests cancelled or finished; issue 25 item 13).
Processes it starts are stopped by pid; temp files go to a mktemp directory.
"""
import argparse
import json
import shutil
import signal
import socket
import sys
import tempfile
import time
import urllib.request

from loopback import free_port, rss_mb, start_engine_sim, start_gateway  # benchmarks/loopback.py


def metric(port, name):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + " ") or line.startswith(name + "{"):
                    return float(line.rsplit(" ", 1)[1])
    except Exception:
        pass
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--duration", type=float, default=40)
    ap.add_argument("--max-tokens", type=int, default=20000)
    ap.add_argument("--time-scale", type=float, default=100)
    ap.add_argument("--stall-timeout", type=float, default=30)
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="slow-readers-")
    procs = []
    socks = []
    try:
        sim, sim_url = start_engine_sim(a.binary, tmp, "sim", a.time_scale)
        procs.append(sim)
        gw_port = free_port()
        config = (f"listen: {{address: 127.0.0.1, port: {gw_port}}}\n"
                  f"time_scale: {a.time_scale}\n"
                  f"request_timeout_s: 100000\n"
                  f"pools:\n  - {{name: p, model: m, endpoints: [\"{sim_url}\"]}}\n")
        # Older binaries refuse unknown keys: add the backpressure block only if asked.
        if a.stall_timeout > 0:
            config += f"backpressure: {{client_stall_timeout_s: {a.stall_timeout}}}\n"
        gw = start_gateway(a.binary, tmp, config, gw_port)
        procs.append(gw)
        start = rss_mb(gw.pid)
        body = json.dumps({"model": "m", "stream": True, "max_tokens": a.max_tokens,
                           "ignore_eos": True,
                           "messages": [{"role": "user", "content": "write a long story"}]})
        for _ in range(a.clients):
            s = socket.create_connection(("127.0.0.1", gw_port))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
            s.sendall((f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                       f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                       + body).encode())
            socks.append(s)  # never read
        peak = start
        samples = []
        t0 = time.time()
        sim_port = int(sim_url.rsplit(":", 1)[1])
        tokens, tokens_last_grew_s = 0, 0.0
        while time.time() - t0 < a.duration:
            time.sleep(1)
            r = rss_mb(gw.pid)
            samples.append(round(r, 1))
            peak = max(peak, r)
            t = metric(sim_port, "vllm:generation_tokens_total") or 0
            if t > tokens:
                tokens, tokens_last_grew_s = t, round(time.time() - t0, 1)
        end = rss_mb(gw.pid)
        print(json.dumps({"clients": a.clients, "duration_s": a.duration,
                          "max_tokens": a.max_tokens, "rss_mb_start": round(start, 1),
                          "rss_mb_peak": round(peak, 1), "rss_mb_end": round(end, 1),
                          "client_stalls_total": metric(gw_port, "kinference_client_stalls_total"),
                          "engine_generation_tokens": tokens,
                          "engine_tokens_last_grew_s": tokens_last_grew_s,
                          "samples": samples}))
    finally:
        for s in socks:
            s.close()
        for p in reversed(procs):
            p.send_signal(signal.SIGKILL)
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
