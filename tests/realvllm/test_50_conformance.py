"""engine-sim held to real vLLM's surface: the same requests go to engine-sim
(REALVLLM_ENGINE_SIM_URL, serving the same model name) and straight to vLLM instance 0,
and what comes back is compared by shape: the status code, every JSON object's keys and
the JSON type of every value (paths like $.choices[].delta.content), SSE framing (only
`data:` fields, events in order: role, tokens, finish, usage, [DONE]), error bodies,
/v1/models, /health, /version, /tokenize, /kv_event_sources, and the /metrics families
the router reads (routing/metrics_snapshot.cc) with their sample names, types and label
names. Values that depend on the model or the clock (text, ids, timings, token counts)
are not compared; error `type` and `code` are.

A difference fails unless conformance_allowlist.txt lists it with a reason; an entry that
no longer matches a difference fails too, so the list stays true."""
import json
import os
import re

import httpx
import pytest

from conftest import TIMEOUT, chat_body, words

HERE = os.path.dirname(os.path.abspath(__file__))
ALLOWLIST = os.path.join(HERE, "conformance_allowlist.txt")

# The /metrics families the router reads (routing/metrics_snapshot.cc) and those an
# operator's dashboards and the gateway's tests read from vLLM.
ROUTER_FAMILIES = {
    "vllm:num_requests_running": "gauge",
    "vllm:num_requests_waiting": "gauge",
    "vllm:kv_cache_usage_perc": "gauge",
    "vllm:prefix_cache_queries": "counter",
    "vllm:prefix_cache_hits": "counter",
    "vllm:prompt_tokens": "counter",
    "vllm:prompt_tokens_cached": "counter",
    "vllm:generation_tokens": "counter",
    "vllm:num_preemptions": "counter",
    "vllm:request_success": "counter",
    "vllm:time_to_first_token_seconds": "histogram",
    "vllm:inter_token_latency_seconds": "histogram",
    "vllm:e2e_request_latency_seconds": "histogram",
    "vllm:request_queue_time_seconds": "histogram",
    "vllm:cache_config_info": "gauge",
}
# cache_config_info labels the router reads.
CACHE_CONFIG_LABELS = {"block_size", "num_gpu_blocks", "enable_prefix_caching"}


# ---------------------------------------------------------------- the allow-list

def load_allowlist():
    """{(case, what): reason}. Lines: `case | what | reason`; # comments. A `what` ending
    in `*` covers every difference of the case that starts with the rest."""
    out = {}
    with open(ALLOWLIST) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = [p.strip() for p in line.split("|")]
            assert len(parts) == 3 and all(parts), f"{ALLOWLIST}:{n}: want `case | what | reason`"
            out[(parts[0], parts[1])] = parts[2]
    return out


class Differences:
    """Collects differences per case; at the end, those not allowed fail, and so do
    allow-list entries that matched nothing."""

    def __init__(self):
        self.allowed = load_allowlist()
        self.used = set()
        self.unexplained = []

    def add(self, case, what, detail):
        for key in self.allowed:
            c, w = key
            if c == case and (w == what or (w.endswith("*") and what.startswith(w[:-1]))):
                self.used.add(key)
                return
        self.unexplained.append(f"{case} | {what} | ({detail})")


@pytest.fixture(scope="module")
def diffs():
    d = Differences()
    yield d
    # Checked in test_zz_*, below, so a failure is reported as a test failure.


# ---------------------------------------------------------------- shapes

def json_type(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "str"
    if isinstance(v, list):
        return "array"
    return "object"


def shape(v, path="$", out=None):
    """{path: set of JSON types}; array elements share the path `<array>[]`."""
    out = {} if out is None else out
    out.setdefault(path, set()).add(json_type(v))
    if isinstance(v, dict):
        for k, x in v.items():
            shape(x, f"{path}.{k}", out)
    elif isinstance(v, list):
        for x in v:
            shape(x, f"{path}[]", out)
    return out


def compare_shapes(diffs, case, real, sim):
    a, b = shape(real), shape(sim)
    for path in sorted(set(a) | set(b)):
        if path not in b:
            diffs.add(case, f"{path} missing", f"vLLM: {sorted(a[path])}")
        elif path not in a:
            diffs.add(case, f"{path} extra", f"engine-sim: {sorted(b[path])}")
        elif a[path] != b[path]:
            diffs.add(case, f"{path} type", f"vLLM {sorted(a[path])}, engine-sim {sorted(b[path])}")


def compare_value(diffs, case, what, real, sim):
    if real != sim:
        diffs.add(case, what, f"vLLM {real!r}, engine-sim {sim!r}")


# ---------------------------------------------------------------- the two servers

class Pair:
    def __init__(self, cluster):
        url = os.environ.get("REALVLLM_ENGINE_SIM_URL")
        if not url:
            pytest.fail("REALVLLM_ENGINE_SIM_URL is not set: run tests/realvllm/run.sh")
        self.model = cluster.model
        self.real = httpx.Client(base_url=cluster.vllm_url(0), timeout=TIMEOUT)
        self.sim = httpx.Client(base_url=url, timeout=TIMEOUT)

    def both(self, method, path, **kw):
        return (self.real.request(method, path, **kw), self.sim.request(method, path, **kw))

    def both_stream(self, path, body, headers=None):
        out = []
        for c in (self.real, self.sim):
            with c.stream("POST", path, json=body, headers=headers or {}) as r:
                out.append((r.status_code, r.headers.get("content-type", ""), r.read().decode()))
        return out


@pytest.fixture(scope="module")
def pair(cluster):
    p = Pair(cluster)
    yield p
    p.real.close()
    p.sim.close()


def body_json(r):
    try:
        return r.json()
    except ValueError:
        return {"<not json>": r.text}


def compare_json_call(diffs, case, real, sim):
    compare_value(diffs, case, "status", real.status_code, sim.status_code)
    ct = lambda r: r.headers.get("content-type", "").split(";")[0]  # noqa: E731
    compare_value(diffs, case, "content-type", ct(real), ct(sim))
    compare_shapes(diffs, case, body_json(real), body_json(sim))


# ---------------------------------------------------------------- plain endpoints

def test_models(pair, diffs):
    real, sim = pair.both("GET", "/v1/models")
    assert real.status_code == 200
    compare_json_call(diffs, "models", real, sim)
    for name, r in (("vLLM", real), ("engine-sim", sim)):
        assert [m["id"] for m in r.json()["data"]] == [pair.model], name


def test_health(pair, diffs):
    real, sim = pair.both("GET", "/health")
    assert real.status_code == 200
    compare_value(diffs, "health", "status", real.status_code, sim.status_code)
    compare_value(diffs, "health", "body", real.text, sim.text)


def test_version(pair, diffs):
    real, sim = pair.both("GET", "/version")
    assert real.status_code == 200
    compare_json_call(diffs, "version", real, sim)


def test_kv_event_sources(pair, diffs):
    real, sim = pair.both("GET", "/kv_event_sources")
    assert real.status_code == 200
    compare_json_call(diffs, "kv_event_sources", real, sim)


@pytest.mark.parametrize("case,body", [
    ("tokenize.prompt", {"prompt": "Hello tokenizer, count me."}),
    ("tokenize.messages", {"messages": [{"role": "user", "content": "Count me."}]}),
    ("tokenize.token_strs", {"prompt": "Hello again.", "return_token_strs": True}),
])
def test_tokenize(pair, diffs, case, body):
    real, sim = pair.both("POST", "/tokenize", json={"model": pair.model, **body})
    assert real.status_code == 200, real.text
    compare_json_call(diffs, case, real, sim)
    for name, r in (("vLLM", real), ("engine-sim", sim)):
        j = r.json()
        assert j["count"] == len(j["tokens"]) > 0, (name, j)


# ---------------------------------------------------------------- generation, whole

def completion_body(model, **extra):
    return {"model": model, "prompt": words(5001, 40), "max_tokens": 4, "ignore_eos": True,
            **extra}


@pytest.mark.parametrize("case,path,make", [
    ("chat", "/v1/chat/completions", lambda m: chat_body(m, words(5002, 40), 4)),
    ("completions", "/v1/completions", lambda m: completion_body(m)),
])
def test_whole_response(pair, diffs, case, path, make):
    body = make(pair.model)
    real, sim = pair.both("POST", path, json=body)
    assert real.status_code == 200, real.text
    compare_json_call(diffs, case, real, sim)
    for name, r in (("vLLM", real), ("engine-sim", sim)):
        u = r.json()["usage"]
        assert u["completion_tokens"] == 4 and u["total_tokens"] == u["prompt_tokens"] + 4, name


# ---------------------------------------------------------------- generation, streamed

def sse_framing(text):
    """(events as lists of (field, value), problems): the SSE wire format as sent."""
    problems = []
    if not text.endswith("\n\n"):
        problems.append("stream does not end with a blank line")
    events = []
    for block in text.split("\n\n"):
        if not block:
            continue
        fields = []
        for line in block.split("\n"):
            field, sep, value = line.partition(":")
            if not sep:
                problems.append(f"line without a colon: {line!r}")
            elif not value.startswith(" "):
                problems.append(f"no space after the colon: {line!r}")
            fields.append((field, value[1:]))
        events.append(fields)
    return events, problems


def chunk_kind(c):
    choices = c.get("choices")
    if choices == []:
        return "usage"
    ch = choices[0]
    if ch.get("finish_reason"):
        return "finish"
    if "role" in (ch.get("delta") or {}):
        return "role"
    return "token"


def stream_summary(text):
    """(kind sequence, runs of tokens collapsed, {kind: [chunks]}, framing problems)."""
    events, problems = sse_framing(text)
    kinds, by_kind = [], {}
    for fields in events:
        names = [f for f, _ in fields]
        if names != ["data"]:
            problems.append(f"event with fields {names}, want only one data field")
            continue
        data = fields[0][1]
        if data == "[DONE]":
            kind = "[DONE]"
        else:
            c = json.loads(data)
            kind = chunk_kind(c)
            by_kind.setdefault(kind, []).append(c)
        if not (kinds and kinds[-1] == kind == "token"):
            kinds.append(kind)
    return kinds, by_kind, problems


@pytest.mark.parametrize("case,path,make", [
    ("chat.stream", "/v1/chat/completions",
     lambda m: chat_body(m, words(5003, 40), 4, stream=True,
                         stream_options={"include_usage": True})),
    ("chat.stream.no_usage", "/v1/chat/completions",
     lambda m: chat_body(m, words(5004, 40), 4, stream=True)),
    ("completions.stream", "/v1/completions",
     lambda m: completion_body(m, stream=True, stream_options={"include_usage": True})),
])
def test_streamed_response(pair, diffs, case, path, make):
    (rs, rct, rtext), (ss, sct, stext) = pair.both_stream(path, make(pair.model))
    assert rs == 200, rtext
    compare_value(diffs, case, "status", rs, ss)
    compare_value(diffs, case, "content-type", rct, sct)
    rk, rchunks, rprob = stream_summary(rtext)
    sk, schunks, sprob = stream_summary(stext)
    assert not rprob, rprob  # vLLM itself frames SSE as this test expects
    for p in sprob:
        diffs.add(case, "framing", p)
    # Token chunks are left out of the order: vLLM sends one per engine step's output, and
    # under CPU contention several steps' tokens arrive merged (even into the finish chunk).
    compare_value(diffs, case, "event order", [k for k in rk if k != "token"],
                  [k for k in sk if k != "token"])
    for kind in sorted(set(rchunks) & set(schunks)):
        # Union of the shapes of every chunk of this kind, per server.
        compare_shapes(diffs, f"{case}.{kind}", rchunks[kind], schunks[kind])


# ---------------------------------------------------------------- Anthropic Messages

# Anthropic's API requires the header, and engine-sim (playing an Anthropic provider in
# the gateway's tests) does too; vLLM accepts requests with or without it.
ANTHROPIC_HEADERS = {"anthropic-version": "2023-06-01"}


def messages_body(model, stream):
    return {"model": model, "max_tokens": 4, "stream": stream,
            "messages": [{"role": "user", "content": words(5005, 30)}]}


def test_messages_whole(pair, diffs):
    real, sim = pair.both("POST", "/v1/messages", json=messages_body(pair.model, False),
                          headers=ANTHROPIC_HEADERS)
    assert real.status_code == 200, real.text
    compare_json_call(diffs, "messages", real, sim)


def anthropic_summary(text):
    """(event names in order with runs of deltas collapsed, {type: [data]}, problems)."""
    events, problems = sse_framing(text)
    names, by_type = [], {}
    for fields in events:
        if [f for f, _ in fields] != ["event", "data"]:
            problems.append(f"event with fields {[f for f, _ in fields]}, want event, data")
            continue
        name, data = fields[0][1], json.loads(fields[1][1])
        if data.get("type") != name:
            problems.append(f"event {name!r} carries data of type {data.get('type')!r}")
        by_type.setdefault(name, []).append(data)
        if not (names and names[-1] == name == "content_block_delta"):
            names.append(name)
    return names, by_type, problems


def test_messages_streamed(pair, diffs):
    case = "messages.stream"
    (rs, rct, rtext), (ss, sct, stext) = pair.both_stream(
        "/v1/messages", messages_body(pair.model, True), ANTHROPIC_HEADERS)
    assert rs == 200, rtext
    compare_value(diffs, case, "status", rs, ss)
    compare_value(diffs, case, "content-type", rct, sct)
    rn, rdata, rprob = anthropic_summary(rtext)
    sn, sdata, sprob = anthropic_summary(stext)
    assert not rprob, rprob
    for p in sprob:
        diffs.add(case, "framing", p)
    delta = "content_block_delta"  # as for chat chunks: their number follows the engine's steps
    compare_value(diffs, case, "event order", [n for n in rn if n != delta],
                  [n for n in sn if n != delta])
    for name in sorted(set(rdata) & set(sdata)):
        compare_shapes(diffs, f"{case}.{name}", rdata[name], sdata[name])


# ---------------------------------------------------------------- errors

ERRORS = [
    # (case, method, path, body or raw bytes)
    ("error.unknown_model", "POST", "/v1/chat/completions",
     {"model": "no-such-model", "messages": [{"role": "user", "content": "x"}]}),
    ("error.bad_json", "POST", "/v1/chat/completions", b'{"model": '),
    ("error.too_long", "POST", "/v1/completions", "TOO_LONG"),
    ("error.stream_options_without_stream", "POST", "/v1/chat/completions",
     {"messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": True}}),
    ("error.max_tokens_zero", "POST", "/v1/completions", {"prompt": "x", "max_tokens": 0}),
    ("error.unknown_path", "GET", "/v1/no-such-path", None),
    ("error.wrong_method", "GET", "/v1/chat/completions", None),
]


@pytest.mark.parametrize("case,method,path,body", ERRORS, ids=[e[0] for e in ERRORS])
def test_error(pair, diffs, case, method, path, body):
    kw = {}
    if isinstance(body, bytes):
        kw = {"content": body, "headers": {"content-type": "application/json"}}
    elif body == "TOO_LONG":
        kw = {"json": {"model": pair.model, "prompt": "x", "max_tokens": 10_000_000}}
    elif body is not None:
        kw = {"json": {"model": pair.model, **body} if "model" not in body else body}
    real, sim = pair.both(method, path, **kw)
    assert real.status_code >= 400, real.text
    compare_json_call(diffs, case, real, sim)
    rj, sj = body_json(real), body_json(sim)
    if isinstance(rj.get("error"), dict) and isinstance(sj.get("error"), dict):
        for k in ("type", "code"):
            compare_value(diffs, case, f"error.{k}", rj["error"].get(k), sj["error"].get(k))


# ---------------------------------------------------------------- /metrics

_TYPE = re.compile(r"^# TYPE (\S+) (\S+)")
_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+\S+')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"')


def metric_families(text):
    """{family: {"types": {name: type}, "samples": {name: set of label-name tuples}}} for
    the families in ROUTER_FAMILIES (a family also owns its _total, _created, _bucket,
    _sum and _count names)."""
    def family_of(name):
        for f in ROUTER_FAMILIES:
            if name == f or (name.startswith(f + "_") and
                             name[len(f) + 1:] in ("total", "created", "bucket", "sum", "count")):
                return f
        return None
    out = {}
    for line in text.splitlines():
        m = _TYPE.match(line)
        if m:
            f = family_of(m.group(1))
            if f:
                out.setdefault(f, {"types": {}, "samples": {}})["types"][m.group(1)] = m.group(2)
            continue
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        f = family_of(m.group(1)) if m else None
        if f:
            labels = tuple(sorted(_LABEL.findall(m.group(2) or "")))
            out.setdefault(f, {"types": {}, "samples": {}})["samples"].setdefault(
                m.group(1), set()).add(labels)
    return out


def test_metrics(pair, diffs):
    # After the generation tests above, so every counter has moved on both.
    real, sim = pair.both("GET", "/metrics")
    assert real.status_code == 200 and sim.status_code == 200
    compare_value(diffs, "metrics", "content-type", real.headers.get("content-type"),
                  sim.headers.get("content-type"))
    rf, sf = metric_families(real.text), metric_families(sim.text)
    for fam in ROUTER_FAMILIES:
        assert fam in rf, f"vLLM has no {fam}: update ROUTER_FAMILIES"
        if fam not in sf:
            diffs.add("metrics", f"{fam} missing", "no such family")
            continue
        r, s = rf[fam], sf[fam]
        for name in sorted(set(r["types"]) | set(s["types"])):
            compare_value(diffs, "metrics", f"{name} TYPE", r["types"].get(name),
                          s["types"].get(name))
        for name in sorted(set(r["samples"]) | set(s["samples"])):
            rl = {n for ls in r["samples"].get(name, ()) for n in ls}
            sl = {n for ls in s["samples"].get(name, ()) for n in ls}
            if name not in s["samples"]:
                diffs.add("metrics", f"{name} missing", f"labels {sorted(rl)}")
            elif name not in r["samples"]:
                diffs.add("metrics", f"{name} extra", f"labels {sorted(sl)}")
            elif fam == "vllm:cache_config_info":
                # An info gauge: engine-sim carries the labels the router reads.
                missing = CACHE_CONFIG_LABELS - sl
                if missing or not sl <= rl:
                    diffs.add("metrics", f"{name} labels",
                              f"missing {sorted(missing)}, not in vLLM {sorted(sl - rl)}")
            elif rl != sl:
                diffs.add("metrics", f"{name} labels", f"vLLM {sorted(rl)}, engine-sim {sorted(sl)}")
    # The router's reading of the block size and the KV usage unit on both.
    for name, text in (("vLLM", real.text), ("engine-sim", sim.text)):
        usage = [float(l.split()[-1]) for l in text.splitlines()
                 if l.startswith("vllm:kv_cache_usage_perc{")]
        assert usage and all(0.0 <= u <= 1.0 for u in usage), (name, usage)


# ---------------------------------------------------------------- the verdict

def test_zz_no_unexplained_differences(diffs):
    """Runs last in this module (pytest keeps file order)."""
    assert not diffs.unexplained, (
        "engine-sim differs from vLLM; fix engine-sim or add to "
        "tests/realvllm/conformance_allowlist.txt with a reason:\n  " +
        "\n  ".join(diffs.unexplained))


def test_zz_allowlist_has_no_stale_entries(diffs):
    stale = sorted(set(diffs.allowed) - diffs.used)
    assert not stale, "allow-list entries that match no difference any more: " + repr(stale)
