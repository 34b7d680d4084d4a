"""An Anthropic provider behind the gateway (engine-sim's /v1/messages, see run.sh), with
the official SDKs: engine-sim's Anthropic mode itself, the anthropic SDK through the
gateway (native passthrough), and the openai SDK through the gateway (translated)."""
import os

import anthropic
import openai
import pytest

NO_EOS = {"ignore_eos": True}  # passed to engine-sim: generate exactly max_tokens


@pytest.fixture(scope="session")
def claude_model():
    return os.environ.get("KINFERENCE_ANTHROPIC_MODEL", "sdk-claude")


def test_engine_sim_speaks_anthropic_to_the_sdk():
    url = os.environ["KINFERENCE_ANTHROPIC_SIM_URL"]
    key = os.environ["KINFERENCE_ANTHROPIC_SIM_KEY"]
    with anthropic.Anthropic(base_url=url, api_key=key, max_retries=0) as client:
        with client.messages.stream(model="claude-sim", max_tokens=5, extra_body=NO_EOS,
                                    messages=[{"role": "user", "content": "Hi"}]) as stream:
            text = "".join(stream.text_stream)
            final = stream.get_final_message()
    assert final.content[0].text == text
    assert final.stop_reason == "max_tokens"
    assert final.usage.output_tokens == 5
    with anthropic.Anthropic(base_url=url, api_key="wrong", max_retries=0) as bad:
        with pytest.raises(anthropic.AuthenticationError):
            bad.messages.create(model="claude-sim", max_tokens=2,
                                messages=[{"role": "user", "content": "Hi"}])


def test_messages_passthrough(anthropic_client, claude_model):
    raw = anthropic_client.messages.with_raw_response.create(
        model=claude_model, max_tokens=4, extra_body=NO_EOS,
        messages=[{"role": "user", "content": "Hello"}])
    assert raw.headers["x-kinference-endpoint"] == "provider/claude"
    m = raw.parse()
    assert m.model == "claude-sim"  # the provider's answer, unchanged
    assert m.usage.output_tokens == 4
    with anthropic_client.messages.stream(model=claude_model, max_tokens=6, extra_body=NO_EOS,
                                          messages=[{"role": "user", "content": "Go"}]) as s:
        text = "".join(s.text_stream)
        final = s.get_final_message()
    assert text and final.content[0].text == text
    assert final.usage.output_tokens == 6


def test_openai_sdk_through_anthropic_provider(openai_client, claude_model):
    c = openai_client.chat.completions.create(
        model=claude_model, max_tokens=4, messages=[{"role": "system", "content": "terse"},
                                                    {"role": "user", "content": "Hello"}])
    assert c.object == "chat.completion"
    assert c.choices[0].message.role == "assistant"
    assert c.choices[0].finish_reason in ("stop", "length")
    assert c.usage.completion_tokens <= 4
    chunks = list(openai_client.chat.completions.create(
        model=claude_model, max_tokens=4, stream=True, stream_options={"include_usage": True},
        messages=[{"role": "user", "content": "Hello"}]))
    assert chunks[-1].usage is not None and chunks[-1].choices == []
    assert any(ch.choices and ch.choices[0].finish_reason for ch in chunks)
    with pytest.raises(openai.BadRequestError):
        openai_client.completions.create(model=claude_model, prompt="x", max_tokens=2)
