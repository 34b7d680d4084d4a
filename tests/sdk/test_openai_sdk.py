"""The official `openai` SDK against the gateway: chat and completions, streamed and
not, usage with cached prompt tokens, and the SDK's error classes for 400 and 404."""
import openai
import pytest

NO_EOS = {"ignore_eos": True}  # vLLM extra: generate exactly max_tokens


def test_chat_completion(openai_client, model):
    r = openai_client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Hello there"}], max_tokens=6,
        extra_body=NO_EOS)
    assert r.object == "chat.completion"
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].message.content
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 6
    assert r.usage.prompt_tokens > 0


def test_chat_completion_stream_with_usage(openai_client, model):
    stream = openai_client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Stream to me"}], max_tokens=5,
        stream=True, stream_options={"include_usage": True}, extra_body=NO_EOS)
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finish == ["length"]
    assert chunks[-1].choices == []
    assert chunks[-1].usage.completion_tokens == 5


def test_chat_stream_without_usage_has_none(openai_client, model):
    stream = openai_client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "No usage please"}], max_tokens=3,
        stream=True)
    assert all(c.usage is None for c in stream)


def test_completions(openai_client, model):
    r = openai_client.completions.create(model=model, prompt="Once upon a time", max_tokens=4,
                                         extra_body=NO_EOS)
    assert r.object == "text_completion"
    assert r.choices[0].text
    assert r.usage.completion_tokens == 4
    stream = openai_client.completions.create(model=model, prompt="Once upon a time",
                                              max_tokens=4, stream=True, extra_body=NO_EOS)
    assert "".join(c.choices[0].text for c in stream if c.choices)


def test_cached_tokens_on_repeat(openai_client, model, long_prompt):
    def ask():
        return openai_client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": long_prompt}], max_tokens=2)

    first = ask()
    second = ask()
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert second.usage.prompt_tokens == first.usage.prompt_tokens
    assert 2 * cached > second.usage.prompt_tokens


def test_error_classes(openai_client, model):
    with pytest.raises(openai.NotFoundError) as e:
        openai_client.chat.completions.create(
            model="no-such-model", messages=[{"role": "user", "content": "hi"}], max_tokens=2)
    assert e.value.status_code == 404
    with pytest.raises(openai.BadRequestError) as e:
        openai_client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "hi"}], max_tokens=0)
    assert e.value.status_code == 400
