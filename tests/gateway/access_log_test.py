#!/usr/bin/env python3
"""The gateway's logs, request ids and upstream keys, end to end (a real gateway in front
of a real engine-sim started with --require-api-key, as a vLLM with --api-key, reached both
as a local pool with the key from a file and as an external provider with the key from the
environment):

  - `--log-format json`: every stderr line is one JSON object; one access-log line
    ("logger": "access") per request with request id, tenant, models requested and served,
    endpoint, strategy, predicted and observed TTFT, tokens, status, outcome, duration;
    requests refused before routing (a wrong key) get one too; an upstream's 4xx is logged
    as its answer (`error`: "upstream answered 400");
  - x-request-id: a client's valid id is returned, used in the access log and in
    /debug/decisions, and forwarded upstream (the engine names its response
    "chatcmpl-<x-request-id>", as vLLM does); an invalid one is replaced by a generated
    id ("kgw-" and 32 hex digits); every response carries one;
  - the pool's key reaches the engine (which answers 401 without it);
  - /metrics has kinference_build_info;
  - secrets: neither the tenant's API key, nor the provider's key, nor an Authorization
    header value appears in any log line (stdout or stderr), at log level debug.
  - SIGUSR1 makes the level one step more verbose, SIGUSR2 one less (logged).

Usage: access_log_test.py KINFERENCE_BIN
"""
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

BIN = sys.argv[1]
TENANT_KEY = "sk-tenant-SECRET-4f1b2c3d9e"
POOL_KEY = "sk-pool-SECRET-31c0ffee77"
MODEL = "google/gemma-3-27b-it"
failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg, flush=True)
    if not cond:
        failures.append(msg)


def wait_port(path, marker, proc):
    for _ in range(600):
        m = re.search(marker + r" listening on [\d.]+:(\d+)", open(path).read())
        if m:
            return int(m.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    sys.exit(f"{marker} did not start:\n" + open(path).read())


def post(port, body, headers):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
                                 data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json", **headers})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def main():
    tmp = tempfile.mkdtemp(prefix="kinference-logs-")
    procs = []
    try:
        eng_out = os.path.join(tmp, "engine.out")
        eng = subprocess.Popen([BIN, "engine-sim", "--port", "0", "--time-scale", "50",
                                "--require-api-key", POOL_KEY],
                               stdout=open(eng_out, "w"), stderr=subprocess.DEVNULL)
        procs.append(eng)
        eport = wait_port(eng_out, "engine-sim", eng)
        os.makedirs(os.path.join(tmp, "policies"))
        with open(os.path.join(tmp, "policies", "p.yaml"), "w") as f:
            f.write(f"""apiVersion: kinference.io/v1alpha1
kind: InferencePolicy
metadata: {{name: everything}}
spec:
  mode: enforce
  match: {{models: ["{MODEL}"]}}
  constraints: {{exclude: {{classes: [provider]}}}}
""")
        sha = hashlib.sha256(TENANT_KEY.encode()).hexdigest()
        key_file = os.path.join(tmp, "pool.key")
        with open(key_file, "w") as f:
            f.write(POOL_KEY + "\n")
        with open(os.path.join(tmp, "gateway.yaml"), "w") as f:
            f.write(f"""listen: {{address: 127.0.0.1, port: 0}}
time_scale: 50
scrape_interval_s: 1
pools:
  - {{name: sim, model: {MODEL}, endpoints: ["http://127.0.0.1:{eport}"],
      api_key_file: "{key_file}"}}
providers:
  - name: simprov
    model: {MODEL}
    serves_model: provider-model
    base_url: http://127.0.0.1:{eport}/v1
    api_key_env: KINF_TEST_PROVIDER_KEY
tenants:
  keys: [{{sha256: "{sha}", tenant: acme}}]
policies: {{files: [policies/p.yaml], debug_admin_tenants: [acme]}}
""")
        gw_out, gw_err = os.path.join(tmp, "gateway.out"), os.path.join(tmp, "gateway.err")
        # The engine-sim plays the provider too, so the provider's key is the engine's.
        env = dict(os.environ, KINF_TEST_PROVIDER_KEY=POOL_KEY)
        gw = subprocess.Popen([BIN, "gateway", "--config", os.path.join(tmp, "gateway.yaml"),
                               "--log-format", "json", "--log-level", "debug"],
                              stdout=open(gw_out, "w"), stderr=open(gw_err, "w"), env=env)
        procs.append(gw)
        port = wait_port(gw_out, "gateway", gw)
        auth = {"authorization": "Bearer " + TENANT_KEY}
        chat = {"model": MODEL, "messages": [{"role": "user", "content": "hello there"}],
                "max_tokens": 8}
        st, h, body = post(port, chat, {**auth, "x-request-id": "client-id-123"})
        check(st == 200, f"chat with a client id through the keyed pool: 200 (got {st} {body})")
        check(h.get("x-request-id") == "client-id-123", f"client id returned ({h})")
        rid = json.loads(body).get("id") if st == 200 else None
        check(rid == "chatcmpl-client-id-123", f"client id forwarded upstream (response id {rid})")
        st, h, _ = post(port, dict(chat, stream=True), {**auth, "x-request-id": "bad id!"})
        gen = h.get("x-request-id", "")
        check(st == 200 and re.fullmatch(r"kgw-[0-9a-f]{32}", gen) is not None,
              f"invalid client id replaced by a generated one ({gen!r})")
        st, h, _ = post(port, dict(chat, model="provider-model"), auth)
        check(st == 200, f"provider request with its key: 200 (got {st})")
        st, h, _ = post(port, chat, {"authorization": "Bearer sk-wrong-SECRET-key",
                                     "x-request-id": "refused-1"})
        check(st == 401, f"wrong key: 401 (got {st})")
        st, h, _ = post(port, dict(chat, model="no-such-model"), {**auth, "x-request-id": "nf-1"})
        check(st == 404 and h.get("x-request-id") == "nf-1",
              f"unknown model: 404 with the id ({st}, {h.get('x-request-id')})")
        # The engine refuses an empty messages list (400), as vLLM does; its OpenAI-shaped
        # error reaches the client.
        st, h, body = post(port, dict(chat, messages=[]), {**auth, "x-request-id": "up-400"})
        err = json.loads(body).get("error", {}) if st == 400 else {}
        check(st == 400 and "messages" in str(err.get("message")),
              f"empty messages: the upstream's 400 and its message (got {st} {body})")
        req = urllib.request.Request(f"http://127.0.0.1:{port}/debug/decisions", headers=auth)
        decisions = urllib.request.urlopen(req, timeout=30).read().decode()
        check("client-id-123" in decisions, "the client id is in /debug/decisions")
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read()
        check(re.search(rb'^kinference_build_info\{version="[^"]+",revision="[^"]+",'
                        rb'build_type="[^"]*"\} 1$', metrics, re.M) is not None,
              "kinference_build_info in /metrics")
        # Each signal once the previous one's change is logged, not after a fixed pause: a
        # gateway that had not run by then got SIGUSR1, SIGUSR2 and SIGTERM together, and
        # its drain (nothing in flight) stopped it before it took the SIGUSR2 (one change
        # logged of two, shown with SIGSTOP/SIGCONT around the three signals).
        for sig, changes in ((signal.SIGUSR1, 1), (signal.SIGUSR2, 2)):
            gw.send_signal(sig)
            for _ in range(300):  # hang guard, not a bound
                if open(gw_err).read().count("log level changed") >= changes:
                    break
                time.sleep(0.1)
        gw.send_signal(signal.SIGTERM)
        gw.wait(timeout=30)

        lines = open(gw_err).read().splitlines()
        objs = []
        for line in lines:
            try:
                objs.append(json.loads(line))
            except ValueError:
                check(False, f"stderr line is JSON: {line!r}")
        access = [o for o in objs if o.get("logger") == "access"]
        check(len(access) == 6, f"one access line per request (6): got {len(access)}")
        by_id = {o.get("request_id"): o for o in access}
        a = by_id.get("client-id-123", {})
        for k in ("time", "level", "tenant", "model_requested", "model_served", "endpoint",
                  "strategy", "predicted_ttft_s", "ttft_s", "prompt_tokens", "cached_tokens",
                  "completion_tokens", "status", "outcome", "duration_s"):
            check(k in a, f"access line has {k}")
        check(a.get("tenant") == "acme" and a.get("status") == 200 and
              a.get("outcome") == "success" and a.get("endpoint") == "sim/0",
              f"access line values ({a})")
        check(gen in by_id, "the generated id is in the access log")
        r = by_id.get("refused-1", {})
        check(r.get("status") == 401 and r.get("outcome") == "refused",
              f"refused request logged ({r})")
        u = by_id.get("up-400", {})
        check(u.get("status") == 400 and u.get("outcome") == "error" and
              u.get("error") == "upstream answered 400",
              f"upstream 400 logged as the upstream's answer, not 'no healthy endpoint' ({u})")
        prov = [o for o in access if o.get("model_requested") == "provider-model"]
        check(prov and prov[0].get("endpoint") == "provider/simprov", f"provider line ({prov})")
        levels = [o.get("log_level") for o in objs if o.get("msg") == "log level changed"]
        check(levels == ["trace", "debug"], f"SIGUSR1 then SIGUSR2: trace, debug ({levels})")

        everything = open(gw_err).read() + open(gw_out).read()
        for secret in (TENANT_KEY, POOL_KEY, "sk-wrong-SECRET-key", "SECRET", "Bearer"):
            check(secret not in everything, f"{secret!r} never logged")
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
        if failures:
            for n in ("gateway.err", "gateway.out"):
                path = os.path.join(tmp, n)
                if os.path.exists(path):
                    print(f"--- {n}\n" + open(path).read()[-4000:])
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        sys.exit(f"{len(failures)} failure(s)")


if __name__ == "__main__":
    main()
