"""Prefix caching seen through the gateway: a repeated long prefix is served from vLLM's
prefix cache (usage.prompt_tokens_details.cached_tokens), and predicted-ttft sends the
second request of a shared prefix where the first went."""
from conftest import chat_body, metric, words

BLOCK = 128  # vLLM's CPU block size; prefix caching counts full blocks only


def prefix_tokens(cluster, text):
    """Tokens of `text` under the model's tokenizer (vLLM's /tokenize)."""
    import httpx
    r = httpx.post(cluster.vllm_url(0) + "/tokenize", json={"model": cluster.model,
                                                           "prompt": text})
    assert r.status_code == 200, r.text
    return r.json()["count"]


def test_repeated_prefix_reports_cached_tokens(cluster):
    prefix = words(101, 1500)
    n = prefix_tokens(cluster, prefix)
    assert n > 8 * BLOCK, "the prefix must span many KV blocks"
    first = cluster.post("/v1/chat/completions",
                         chat_body(cluster.model, prefix + " first question", 4))
    assert first.status_code == 200, first.text
    assert first.json()["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    # Straight to the same instance, so only vLLM's cache is under test here.
    i = cluster.instance_of(first.headers["x-kinference-endpoint"])
    import httpx
    second = httpx.post(cluster.vllm_url(i) + "/v1/chat/completions",
                        json=chat_body(cluster.model, prefix + " second question", 4),
                        timeout=120)
    assert second.status_code == 200, second.text
    cached = second.json()["usage"]["prompt_tokens_details"]["cached_tokens"]
    # Every full block of the shared prefix (chat template included) but the partial last one.
    assert cached % BLOCK == 0
    assert cached >= (n // BLOCK - 1) * BLOCK


def test_second_request_of_a_shared_prefix_follows_the_cache(cluster):
    gw_cached_before = metric(cluster.gateway_metrics(), "kinference_cached_tokens_total")
    landed = []
    total_cached = 0
    for k in range(4):
        prefix = words(200 + k, 1500)
        n = prefix_tokens(cluster, prefix)
        headers = {"x-kinference-strategy": "predicted-ttft"}
        first = cluster.post("/v1/chat/completions",
                             chat_body(cluster.model, prefix + f" question {k}a", 4), headers)
        second = cluster.post("/v1/chat/completions",
                              chat_body(cluster.model, prefix + f" question {k}b", 4), headers)
        assert first.status_code == 200 and second.status_code == 200
        e1 = first.headers["x-kinference-endpoint"]
        e2 = second.headers["x-kinference-endpoint"]
        assert e1 == e2, f"prefix {k}: first went to {e1}, second to {e2}"
        landed.append(e1)
        cached = second.json()["usage"]["prompt_tokens_details"]["cached_tokens"]
        assert cached >= (n // BLOCK - 1) * BLOCK, f"prefix {k}: {cached} of ~{n} cached"
        total_cached += cached
    # The gateway accounts what vLLM reported.
    gw_cached = metric(cluster.gateway_metrics(), "kinference_cached_tokens_total")
    assert gw_cached - gw_cached_before >= total_cached
