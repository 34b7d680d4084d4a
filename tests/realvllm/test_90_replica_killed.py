"""A vLLM replica killed (SIGKILL, its whole process group) in the middle of a stream: the
client's stream ends cleanly with an error event, and the gateway stops routing there.
Runs last: it leaves one replica dead."""
import json
import os
import signal

from conftest import chat_body, metric, sse_events, wait_for


def test_replica_killed_mid_stream(cluster):
    body = chat_body(cluster.model, "Keep talking.", 20000, stream=True)
    with cluster.client.stream("POST", "/v1/chat/completions", json=body) as r:
        assert r.status_code == 200
        endpoint = r.headers["x-kinference-endpoint"]
        victim = cluster.instance_of(endpoint)
        events = []
        killed = False
        for ev in sse_events(r.iter_lines()):
            events.append(ev)
            if not killed and len(events) >= 10:
                os.killpg(cluster.vllm_pid(victim), signal.SIGKILL)
                killed = True
    assert killed, "the stream ended before the replica could be killed"
    # The stream ended (no hang) with an error object in OpenAI's shape, not a finish_reason.
    payloads = [json.loads(d) for _, d in events if d != "[DONE]"]
    assert "error" in payloads[-1], f"last event: {events[-1]}"
    assert payloads[-1]["error"]["message"]
    assert not any(ch.get("finish_reason") for p in payloads[:-1] for ch in p.get("choices", []))

    # The gateway marks the endpoint unhealthy after failed scrapes ...
    wait_for(lambda: metric(cluster.gateway_metrics(), "kinference_endpoint_healthy",
                            endpoint=endpoint) == 0,
             60, what=f"{endpoint} marked unhealthy")
    # ... and every later request goes to the survivor and succeeds.
    for k in range(6):
        r = cluster.post("/v1/chat/completions", chat_body(cluster.model, f"after {k}", 4))
        assert r.status_code == 200, r.text
        assert r.headers["x-kinference-endpoint"] != endpoint
