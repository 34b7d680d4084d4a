"""The official `anthropic` SDK against the gateway's POST /v1/messages: messages streamed
and not, the `messages.stream()` helper, usage with cache_read_input_tokens, tools, and
the SDK's error classes for 400 and 404."""
import anthropic
import pytest

NO_EOS = {"ignore_eos": True}  # vLLM extra, passed through: generate exactly max_tokens


def test_create(anthropic_client, model):
    m = anthropic_client.messages.create(
        model=model, max_tokens=6, system="You are terse.",
        messages=[{"role": "user", "content": "Hello there"}],
        metadata={"user_id": "sdk-test"}, extra_body=NO_EOS)
    assert m.type == "message"
    assert m.role == "assistant"
    assert m.id.startswith("msg_")
    assert m.model == model
    assert m.content[0].type == "text" and m.content[0].text
    assert m.stop_reason == "max_tokens"
    assert m.stop_sequence is None
    assert m.usage.output_tokens == 6
    assert m.usage.input_tokens > 0
    assert m.usage.cache_creation_input_tokens == 0


def test_create_stream_event_sequence(anthropic_client, model):
    stream = anthropic_client.messages.create(
        model=model, max_tokens=5, stream=True,
        system=[{"type": "text", "text": "Be brief."}],
        messages=[{"role": "user", "content": [{"type": "text", "text": "Count"}]}],
        extra_body=NO_EOS)
    events = list(stream)
    types = [e.type for e in events]
    assert types[0] == "message_start"
    assert types[1] == "content_block_start"
    assert types[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(types[2:-3]) == {"content_block_delta"}
    assert events[0].message.content == []
    text = "".join(e.delta.text for e in events if e.type == "content_block_delta")
    assert text
    delta = events[-2]
    assert delta.delta.stop_reason == "max_tokens"
    assert delta.usage.output_tokens == 5
    assert delta.usage.input_tokens > 0
    # message_start already carries the prompt's tokens (vLLM's continuous usage), and
    # message_delta's cumulative usage splits the same count into uncached and cached.
    start = events[0].message.usage
    assert start.input_tokens > 0
    assert start.input_tokens == delta.usage.input_tokens + (delta.usage.cache_read_input_tokens or 0)


def test_stream_helper_final_message(anthropic_client, model):
    with anthropic_client.messages.stream(
            model=model, max_tokens=7, messages=[{"role": "user", "content": "Tell me"}],
            extra_body=NO_EOS) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text
    assert final.content[0].type == "text"
    assert final.content[0].text == text
    assert final.stop_reason == "max_tokens"
    assert final.usage.output_tokens == 7
    assert final.usage.input_tokens > 0


def test_cache_read_input_tokens(anthropic_client, model, long_prompt):
    def ask():
        return anthropic_client.messages.create(
            model=model, max_tokens=2, messages=[{"role": "user", "content": long_prompt}])

    first = ask()
    assert first.usage.cache_read_input_tokens == 0
    second = ask()
    u = second.usage
    assert u.cache_read_input_tokens > 0
    # Cached prompt tokens are counted once: input_tokens is only the uncached part.
    assert u.input_tokens + u.cache_read_input_tokens == first.usage.input_tokens
    with anthropic_client.messages.stream(
            model=model, max_tokens=2,
            messages=[{"role": "user", "content": long_prompt}]) as stream:
        streamed = stream.get_final_message().usage
    assert streamed.cache_read_input_tokens > 0
    assert streamed.input_tokens + streamed.cache_read_input_tokens == first.usage.input_tokens


def test_tools_and_tool_results_are_accepted(anthropic_client, model):
    tools = [{"name": "get_weather", "description": "Weather for a city",
              "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    m = anthropic_client.messages.create(
        model=model, max_tokens=4, tools=tools, tool_choice={"type": "auto"},
        stop_sequences=["\n\n"],
        messages=[
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                 "input": {"city": "Paris"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Sunny, 21C"},
                {"type": "text", "text": "Thanks"}]},
        ])
    assert m.stop_reason in ("end_turn", "max_tokens", "stop_sequence")
    assert m.content and m.content[0].type == "text"


def test_error_classes(anthropic_client, model):
    with pytest.raises(anthropic.NotFoundError) as e:
        anthropic_client.messages.create(
            model="no-such-model", max_tokens=2, messages=[{"role": "user", "content": "hi"}])
    assert e.value.status_code == 404
    assert e.value.body["type"] == "error"
    assert e.value.body["error"]["type"] == "not_found_error"
    with pytest.raises(anthropic.BadRequestError) as e:
        anthropic_client.messages.create(model=model, max_tokens=2, messages=[])
    assert e.value.status_code == 400
    assert e.value.body["error"]["type"] == "invalid_request_error"
    with pytest.raises(anthropic.BadRequestError):
        anthropic_client.messages.create(
            model=model, max_tokens=0, messages=[{"role": "user", "content": "hi"}])
