"""A client that goes away mid-stream: the gateway cancels its upstream call and vLLM
aborts the request (its engine log names it; it stops generating and is not counted as
a finished request)."""
import re

from conftest import chat_body, metric, sse_events, wait_for

MAX_TOKENS = 20000  # far more than a client reads before it disconnects


def test_client_disconnect_aborts_the_request_in_vllm(cluster):
    body = chat_body(cluster.model, "A long answer, please.", MAX_TOKENS, stream=True)
    with cluster.client.stream("POST", "/v1/chat/completions", json=body) as r:
        assert r.status_code == 200
        i = cluster.instance_of(r.headers["x-kinference-endpoint"])
        before = cluster.vllm_metrics(i)
        got = 0
        for _, data in sse_events(r.iter_lines()):
            if data != "[DONE]":
                got += 1
            if got >= 20:
                break
    # Leaving the block closed the connection. The gateway logs the disconnect with its
    # request id, which it sent upstream as x-request-id; vLLM logs the abort under it.
    def gateway_saw_it():
        with open(cluster.gateway_log, errors="replace") as f:
            ids = re.findall(r"request (kgw-[0-9a-f]+): client disconnected", f.read())
        return ids[-1] if ids else None

    rid = wait_for(gateway_saw_it, 30, what="the gateway's disconnect log line")
    wait_for(lambda: re.search(r"Aborted request\(s\) [^\n]*" + re.escape(rid) + r"\b",
                               cluster.vllm_log(i)),
             60, what=f"vLLM's abort of {rid}")
    wait_for(lambda: metric(cluster.vllm_metrics(i), "vllm:num_requests_running") == 0,
             60, what="vLLM to stop running the request")
    after = cluster.vllm_metrics(i)
    generated = (metric(after, "vllm:generation_tokens_total")
                 - metric(before, "vllm:generation_tokens_total"))
    assert generated < MAX_TOKENS
    # An abort is not a finished request: no e2e latency sample, no finished_reason count.
    assert (metric(after, "vllm:e2e_request_latency_seconds_count")
            == metric(before, "vllm:e2e_request_latency_seconds_count"))
    assert (metric(after, "vllm:request_success_total")
            == metric(before, "vllm:request_success_total"))
