#!/usr/bin/env python3
"""Gateway memory and latency under 10x overload, and how fast latency recovers (issue #12).

Starts two engine-sims (l40s-27b-fp8 at --time-scale) and a gateway in front of them with
`max_in_flight` per endpoint (--max-in-flight; 0 = no limit, the engines queue everything)
and the default admission queue (256 waiters, 10 model seconds). Three phases, closed loop:
  baseline  --light clients send short requests (max_tokens 16) for --phase seconds;
  overload  --clients clients send long ones (max_tokens --long-tokens, ignore_eos) for
            --phase seconds, while the light clients go on;
  recovery  the light clients alone again, for 2 x --phase seconds.
The overload clients stop sending when it ends, and their requests still in flight are
abandoned (connections closed). Every second it samples the gateway's RSS (VmRSS) and the
light clients' latency (whole response, p50 per second).

Prints one JSON line: RSS at start, peak and end; outcome counts of the overload requests
(status -> count) and whether every 429/503 had Retry-After; the light requests' latency p50
in the baseline, during the overload and in each 5 s of the recovery; and the seconds after
the overload until a 5 s window's p50 is within 1.5x of the baseline's.

With --idle-after S, the light clients stop too and RSS is sampled S seconds more with no
load at all (the long requests still in flight abandoned first): `rss_mb_idle_after` is
the last sample, whether memory went back after the overload (issue 24).

Usage: benchmarks/overload.py KINFERENCE_BINARY [--clients 200] [--light 4] [--phase 20]
       [--max-in-flight 16] [--time-scale 20] [--long-tokens 2000] [--idle-after 0]
Processes it starts are stopped by pid; temp files go to a mktemp directory.
"""
import argparse
import http.client
import json
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time

from loopback import free_port, rss_mb, start_engine_sim, start_gateway  # benchmarks/loopback.py


def body(max_tokens, ignore_eos):
    return json.dumps({"model": "m", "max_tokens": max_tokens, "ignore_eos": ignore_eos,
                       "messages": [{"role": "user", "content": "tell me a story"}]})


heavy_conns = set()  # the long requests' connections (closed by --idle-after)


def client(port, payload, stop, record, timeout, conns=None):
    conn = None
    while not stop.is_set():
        start = time.time()
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
                conn.connect()
                if conns is not None:
                    conns.add(conn)
            conn.request("POST", "/v1/chat/completions", payload,
                         {"Content-Type": "application/json"})
            r = conn.getresponse()
            r.read()
            record(start, time.time(), r.status, r.getheader("Retry-After"))
            if r.status >= 400:
                time.sleep(0.05)
        except Exception:
            record(start, time.time(), "error", None)
            if conn is not None:
                conn.close()
            conn = None
            time.sleep(0.05)
    if conn is not None:
        conn.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--light", type=int, default=4)
    ap.add_argument("--phase", type=float, default=20)
    ap.add_argument("--max-in-flight", type=int, default=16)
    ap.add_argument("--time-scale", type=float, default=20)
    ap.add_argument("--long-tokens", type=int, default=2000)
    ap.add_argument("--idle-after", type=float, default=0)
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="overload-")
    procs = []
    try:
        sims = []
        for i in range(2):
            proc, url = start_engine_sim(a.binary, tmp, f"sim{i}", a.time_scale)
            procs.append(proc)
            sims.append(url)
        gw_port = free_port()
        gw = start_gateway(
            a.binary, tmp,
            f"listen: {{address: 127.0.0.1, port: {gw_port}}}\n"
            f"time_scale: {a.time_scale}\nrequest_timeout_s: 100000\n"
            f"pools:\n  - name: p\n    model: m\n    max_in_flight: {a.max_in_flight}\n"
            f"    endpoints: [{', '.join(sims)}]\n", gw_port)
        procs.append(gw)
        rss_start = rss_mb(gw.pid)

        lock = threading.Lock()
        light, heavy = [], []

        def rec(into):
            def f(start, end, status, retry_after):
                with lock:
                    into.append((start, end, status, retry_after))
            return f

        stop_light, stop_heavy = threading.Event(), threading.Event()
        threads = [threading.Thread(target=client, daemon=True,
                                    args=(gw_port, body(16, False), stop_light, rec(light), 600))
                   for _ in range(a.light)]
        for t in threads:
            t.start()
        samples = []
        t0 = time.time()

        def sample_until(t_end):
            while time.time() < t_end:
                time.sleep(1)
                samples.append((round(time.time() - t0, 1), round(rss_mb(gw.pid), 1)))

        sample_until(t0 + a.phase)
        t_over = time.time()
        heavy_threads = [threading.Thread(target=client, daemon=True,
                                          args=(gw_port, body(a.long_tokens, True), stop_heavy,
                                                rec(heavy), 600, heavy_conns))
                         for _ in range(a.clients)]
        for t in heavy_threads:
            t.start()
        sample_until(t_over + a.phase)
        t_rec = time.time()
        stop_heavy.set()
        # Abandon the long requests still in flight: their threads are daemons blocked in
        # reads; the gateway sees their connections close when the process exits below.
        sample_until(t_rec + 2 * a.phase)
        stop_light.set()
        rss_end = rss_mb(gw.pid)
        idle_samples = []
        if a.idle_after > 0:
            for c in list(heavy_conns):  # abandon the long requests still in flight
                try:
                    c.sock and c.sock.shutdown(2)
                except OSError:
                    pass
            t_idle = time.time()
            while time.time() < t_idle + a.idle_after:
                time.sleep(1)
                idle_samples.append((round(time.time() - t_idle, 1), round(rss_mb(gw.pid), 1)))
            # Heap and stacks (anonymous) apart from the binary's and libraries' pages.
            with open(f"/proc/{gw.pid}/status") as f:
                kinds = {l.split(":")[0]: int(l.split()[1]) / 1024.0 for l in f
                         if l.startswith(("RssAnon:", "RssFile:"))}
            idle_samples_kinds = {"rss_anon_mb_idle_after": round(kinds.get("RssAnon", 0), 1),
                                  "rss_file_mb_idle_after": round(kinds.get("RssFile", 0), 1)}

        def p50(lo, hi):
            v = [e - s for s, e, st, _ in light if lo <= e < hi and st == 200]
            return round(statistics.median(v), 4) if v else None

        base = p50(t0, t_over)
        windows = []
        recovered_after = None
        w = t_rec
        while w + 5 <= t_rec + 2 * a.phase + 0.01:
            m = p50(w, w + 5)
            windows.append(m)
            if recovered_after is None and m is not None and base and m <= 1.5 * base:
                recovered_after = round(w + 5 - t_rec, 1)
            w += 5
        outcomes = {}
        retry_missing = 0
        for _, _, st, ra in heavy:
            outcomes[str(st)] = outcomes.get(str(st), 0) + 1
            if st in (429, 503) and not ra:
                retry_missing += 1
        print(json.dumps({
            "max_in_flight": a.max_in_flight, "clients": a.clients, "light": a.light,
            "phase_s": a.phase, "time_scale": a.time_scale,
            "rss_mb_start": round(rss_start, 1),
            "rss_mb_peak": max(r for _, r in samples), "rss_mb_end": round(rss_end, 1),
            "overload_outcomes": outcomes, "overload_429_503_without_retry_after": retry_missing,
            "light_p50_s_baseline": base, "light_p50_s_overload": p50(t_over, t_rec),
            "light_p50_s_recovery_5s_windows": windows,
            "recovered_after_s": recovered_after,
            "light_errors": sum(1 for _, _, st, _ in light if st != 200),
            "rss_samples": samples,
            **({"rss_mb_idle_after": idle_samples[-1][1], **idle_samples_kinds,
                "rss_idle_samples": idle_samples} if idle_samples else {})}))
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGKILL)
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
