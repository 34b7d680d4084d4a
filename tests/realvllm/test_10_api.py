"""Chat, completions and Anthropic Messages through the gateway to real vLLM, streamed and
not: the shapes a client gets, the endpoint header, and usage as vLLM reports it."""
import json

from conftest import chat_body, json_events, sse_events


def test_models_lists_the_served_model(cluster):
    r = cluster.client.get("/v1/models")
    assert r.status_code == 200
    ids = [m["id"] for m in r.json()["data"]]
    assert cluster.model in ids


def test_chat_non_streamed(cluster):
    r = cluster.post("/v1/chat/completions", chat_body(cluster.model, "Say something.", 8))
    assert r.status_code == 200, r.text
    assert r.headers["x-kinference-endpoint"].startswith(cluster.pool + "/")
    assert float(r.headers["x-kinference-predicted-ttft-ms"]) >= 0
    body = r.json()
    assert body["object"] == "chat.completion"
    assert body["model"] == cluster.model
    choice = body["choices"][0]
    assert choice["message"]["role"] == "assistant"
    assert isinstance(choice["message"]["content"], str)
    assert choice["finish_reason"] == "length"
    usage = body["usage"]
    assert usage["completion_tokens"] == 8  # ignore_eos: exactly max_tokens
    assert usage["prompt_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + 8
    assert usage["prompt_tokens_details"]["cached_tokens"] >= 0


def test_chat_streamed(cluster):
    body = chat_body(cluster.model, "Stream something.", 6, stream=True,
                     stream_options={"include_usage": True})
    with cluster.client.stream("POST", "/v1/chat/completions", json=body) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        events = list(sse_events(r.iter_lines()))
    assert events[-1] == (None, "[DONE]")
    chunks = json_events(events)
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    finishes = [ch["finish_reason"] for c in chunks for ch in c["choices"] if ch["finish_reason"]]
    assert finishes == ["length"]
    # The usage chunk comes last, with no choices (stream_options.include_usage).
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["completion_tokens"] == 6


def test_completions_non_streamed(cluster):
    r = cluster.post("/v1/completions", {"model": cluster.model, "prompt": "Once upon a time",
                                         "max_tokens": 5, "ignore_eos": True})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["object"] == "text_completion"
    assert isinstance(body["choices"][0]["text"], str)
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 5


def test_completions_streamed(cluster):
    body = {"model": cluster.model, "prompt": "Once upon a time", "max_tokens": 5,
            "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True}}
    with cluster.client.stream("POST", "/v1/completions", json=body) as r:
        assert r.status_code == 200
        events = list(sse_events(r.iter_lines()))
    assert events[-1] == (None, "[DONE]")
    chunks = json_events(events)
    assert all(c["object"] == "text_completion" for c in chunks)
    assert chunks[-1]["usage"]["completion_tokens"] == 5
    text = "".join(ch["text"] for c in chunks for ch in c["choices"])
    assert isinstance(text, str)


def test_messages_translated_to_vllm(cluster):
    body = {"model": cluster.model, "max_tokens": 7,
            "messages": [{"role": "user", "content": "Hello from the Messages API."}]}
    r = cluster.post("/v1/messages", body, {"anthropic-version": "2023-06-01"})
    assert r.status_code == 200, r.text
    assert r.headers["x-kinference-endpoint"].startswith(cluster.pool + "/")
    msg = r.json()
    assert msg["type"] == "message" and msg["role"] == "assistant"
    assert msg["content"][0]["type"] == "text"
    assert msg["usage"]["input_tokens"] > 0
    # The tiny model may emit its end-of-text token early; never more than max_tokens.
    assert 1 <= msg["usage"]["output_tokens"] <= 7
    assert msg["stop_reason"] in ("max_tokens", "end_turn")


def test_messages_streamed(cluster):
    body = {"model": cluster.model, "max_tokens": 7, "stream": True,
            "messages": [{"role": "user", "content": "Stream from the Messages API."}]}
    with cluster.client.stream("POST", "/v1/messages", json=body,
                               headers={"anthropic-version": "2023-06-01"}) as r:
        assert r.status_code == 200
        events = list(sse_events(r.iter_lines()))
    names = [e for e, _ in events]
    assert names[0] == "message_start"
    assert names[-1] == "message_stop"
    assert "message_delta" in names
    for name, data in events:
        assert json.loads(data)["type"] == name
    delta = [json.loads(d) for e, d in events if e == "message_delta"][-1]
    assert delta["delta"]["stop_reason"] in ("max_tokens", "end_turn")
    assert 1 <= delta["usage"]["output_tokens"] <= 7


def test_bad_request_gets_vllm_error_relayed(cluster):
    # max_tokens beyond the model's context: vLLM answers 400 in OpenAI's error shape.
    r = cluster.post("/v1/chat/completions", chat_body(cluster.model, "x", 10**7))
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert isinstance(err["message"], str) and err["message"]
