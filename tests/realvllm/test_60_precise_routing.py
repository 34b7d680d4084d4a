"""Precise prefix routing on real vLLM (docs/kv-events.md): a gateway that follows both
instances' KV events (vLLM's own ZeroMQ publisher, --kv-events-config from
scripts/vllm-serve.sh) and tokenizes with the model folder's tokenizer and chat template
sends a request to the instance whose cache holds its prefix, though the gateway never saw
the request that put it there; the hit it expected (x-kinference-matched-tokens) is the hit
vLLM reports (usage.prompt_tokens_details.cached_tokens)."""
import os
import re
import shutil
import subprocess
import tempfile

import httpx
import pytest

from conftest import TIMEOUT, chat_body, metric, parse_prometheus, wait_for, words

BLOCK = 128  # vLLM's CPU block size


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


@pytest.fixture(scope="module")
def precise(cluster):
    """A second gateway over the same instances, routing with the precise index."""
    binary = os.environ.get("REALVLLM_KINFERENCE_BIN")
    if not binary:
        pytest.fail("REALVLLM_KINFERENCE_BIN is not set: run tests/realvllm/run.sh")
    n = cluster.n
    quoted = lambda xs: "[" + ", ".join(f'"{x}"' for x in xs) + "]"  # noqa: E731
    tmp = tempfile.mkdtemp(prefix="kinference-precise-")
    config = os.path.join(tmp, "gateway.yaml")
    with open(config, "w") as f:
        f.write(f"""listen: {{address: 127.0.0.1, port: 0}}
strategy: predicted-ttft
scrape_interval_s: 0.25
request_timeout_s: 300
pools:
  - name: precise
    model: {cluster.model}
    endpoints: {quoted(cluster.vllm_url(i) for i in range(n))}
    kv_events:
      tokenizer: {cluster.env["VLLM_MODEL_DIR"]}
      endpoints: {quoted(cluster.env[f"VLLM_KV_ENDPOINT_{i}"] for i in range(n))}
      replay_endpoints: {quoted(cluster.env[f"VLLM_KV_REPLAY_ENDPOINT_{i}"] for i in range(n))}
      topic: {cluster.env.get("VLLM_KV_TOPIC", "kv")}
""")
    log_path = os.path.join(tmp, "gateway.log")
    log = open(log_path, "w")
    proc = subprocess.Popen([binary, "gateway", "--config", config], stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def port():
        m = re.search(r"listening on [\d.]+:(\d+)", read(log_path))
        if not m and proc.poll() is not None:
            pytest.fail("precise gateway exited: " + read(log_path)[-2000:])
        return m and int(m.group(1))

    client = None
    try:
        url = f"http://127.0.0.1:{wait_for(port, 60, what='the precise gateway')}"
        client = httpx.Client(base_url=url, timeout=TIMEOUT)

        # Live: the gateway has each instance's history from its replay socket (an
        # instance that has cached nothing answers with the end marker alone).
        def live():
            m = parse_prometheus(client.get("/metrics").text)
            return all(metric(m, "kinference_kv_events_live", endpoint=f"precise/{i}") == 1
                       for i in range(n))
        wait_for(live, 60, what="both instances' KV event feeds live")
        yield client, log_path
    finally:
        if client is not None:
            client.close()
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def tokens(cluster, text):
    r = httpx.post(cluster.vllm_url(0) + "/tokenize",
                   json={"model": cluster.model, "prompt": text}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    return r.json()["count"]


@pytest.mark.parametrize("instance", [1, 0])
def test_prefix_cached_behind_the_gateways_back_is_found_through_kv_events(
        cluster, precise, instance):
    client, log_path = precise
    prefix = words(600 + instance, 1500)
    n = tokens(cluster, prefix)
    assert n > 8 * BLOCK
    blocks_before = metric(parse_prometheus(client.get("/metrics").text),
                           "kinference_kv_index_blocks", endpoint=f"precise/{instance}")
    # Straight to one instance: the gateway learns of it only from that vLLM's events.
    direct = httpx.post(cluster.vllm_url(instance) + "/v1/chat/completions",
                        json=chat_body(cluster.model, prefix + " first question", 4),
                        timeout=TIMEOUT)
    assert direct.status_code == 200, direct.text

    def indexed():
        m = parse_prometheus(client.get("/metrics").text)
        return metric(m, "kinference_kv_index_blocks",
                      endpoint=f"precise/{instance}") >= blocks_before + n // BLOCK - 1
    wait_for(indexed, 30, what=f"instance {instance}'s BlockStored events in the index")

    r = client.post("/v1/chat/completions",
                    json=chat_body(cluster.model, prefix + " second question", 4))
    assert r.status_code == 200, r.text
    assert r.headers.get("x-kinference-prefix-index") == "precise", dict(r.headers)
    assert r.headers["x-kinference-endpoint"] == f"precise/{instance}", (
        dict(r.headers), read(log_path)[-2000:])
    cached = r.json()["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert cached >= (n // BLOCK - 1) * BLOCK, f"{cached} of ~{n} prompt tokens cached"
    # The router's token ids and block hashes are vLLM's: the hit it predicted is the hit.
    assert int(r.headers["x-kinference-matched-tokens"]) == cached, dict(r.headers)
