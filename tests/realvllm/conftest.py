"""Fixtures and helpers for the real-vLLM suite (tests/realvllm/run.sh starts two vLLM
instances and a gateway in front of them, then runs pytest with):
  REALVLLM_GATEWAY_URL  the gateway
  REALVLLM_GATEWAY_LOG  its log file
  REALVLLM_ENV          scripts/vllm-serve.sh's env file (URLs, pids, logs per instance)
  REALVLLM_POOL         the pool name; endpoint i of the pool is vLLM instance i
"""
import json
import os
import random
import re
import time

import httpx
import pytest

TIMEOUT = httpx.Timeout(120.0, connect=10.0)


def read_env(path):
    env = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if "=" in line:
                k, v = line.split("=", 1)
                env[k] = v.strip('"')
    return env


class Cluster:
    """The gateway and the vLLM instances behind it."""

    def __init__(self):
        for k in ("REALVLLM_GATEWAY_URL", "REALVLLM_ENV", "REALVLLM_GATEWAY_LOG"):
            if not os.environ.get(k):
                pytest.fail(f"{k} is not set: run tests/realvllm/run.sh")
        self.url = os.environ["REALVLLM_GATEWAY_URL"]
        self.gateway_log = os.environ["REALVLLM_GATEWAY_LOG"]
        self.pool = os.environ.get("REALVLLM_POOL", "real")
        self.env = read_env(os.environ["REALVLLM_ENV"])
        self.model = self.env["VLLM_MODEL"]
        self.n = int(self.env["VLLM_N"])
        self.client = httpx.Client(base_url=self.url, timeout=TIMEOUT)

    def vllm_url(self, i):
        return self.env[f"VLLM_URL_{i}"]

    def vllm_pid(self, i):
        return int(self.env[f"VLLM_PID_{i}"])

    def vllm_log(self, i):
        with open(self.env[f"VLLM_LOG_{i}"], errors="replace") as f:
            return f.read()

    def instance_of(self, endpoint_id):
        """vLLM instance index of a gateway endpoint id ("<pool>/<i>")."""
        pool, _, i = endpoint_id.rpartition("/")
        assert pool == self.pool, endpoint_id
        return int(i)

    def post(self, path, body, headers=None):
        return self.client.post(path, json=body, headers=headers or {})

    def vllm_metrics(self, i):
        text = httpx.get(self.vllm_url(i) + "/metrics", timeout=TIMEOUT).text
        return parse_prometheus(text)

    def gateway_metrics(self):
        return parse_prometheus(self.client.get("/metrics").text)


@pytest.fixture(scope="session")
def cluster():
    c = Cluster()
    yield c
    c.client.close()


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_prometheus(text):
    """{(name, frozenset(labels.items())): value} of every sample line."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        assert m, f"malformed sample line: {line!r}"
        labels = frozenset(_LABEL.findall(m.group(3) or ""))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def metric(samples, name, **labels):
    """Sum of the samples of `name` whose labels include `labels`."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= set(ls))


def sse_events(lines):
    """Yields (event, data) per SSE event from an iterator of lines."""
    event, data = None, []
    for line in lines:
        if line == "":
            if data or event:
                yield event, "\n".join(data)
            event, data = None, []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                event = value
            elif field == "data":
                data.append(value)
    if data or event:
        yield event, "\n".join(data)


def words(seed, n):
    """n pseudo-random lower-case words, fixed by seed: prompt text no other test sends."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return " ".join("".join(rng.choice(letters) for _ in range(rng.randint(2, 8)))
                    for _ in range(n))


def wait_for(predicate, timeout_s=60.0, interval_s=0.2, what="condition"):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(interval_s)


def chat_body(model, content, max_tokens=8, stream=False, **extra):
    body = {"model": model, "messages": [{"role": "user", "content": content}],
            "max_tokens": max_tokens, "ignore_eos": True, "stream": stream}
    body.update(extra)
    return body


def json_events(events):
    """The parsed JSON of every data event but [DONE]."""
    return [json.loads(d) for _, d in events if d != "[DONE]"]
