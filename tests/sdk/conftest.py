"""Fixtures for the SDK conformance tests: clients of the official SDKs pointed at the
gateway that tests/sdk/run.sh started (KINFERENCE_GATEWAY_URL, KINFERENCE_MODEL)."""
import itertools
import os

import anthropic
import openai
import pytest

_unique = itertools.count()


@pytest.fixture(scope="session")
def gateway_url():
    url = os.environ.get("KINFERENCE_GATEWAY_URL")
    if not url:
        pytest.fail("KINFERENCE_GATEWAY_URL is not set: run tests/sdk/run.sh")
    return url


@pytest.fixture(scope="session")
def model():
    return os.environ.get("KINFERENCE_MODEL", "sdk-model")


# The session's clients are closed at its end: a pooled connection left to the garbage
# collector is a ResourceWarning, an error here (pytest.ini), whenever a collection happens
# to run before the interpreter exits.
@pytest.fixture(scope="session")
def openai_client(gateway_url):
    client = openai.OpenAI(base_url=gateway_url + "/v1", api_key="unused", max_retries=0)
    yield client
    client.close()


@pytest.fixture(scope="session")
def anthropic_client(gateway_url):
    client = anthropic.Anthropic(base_url=gateway_url, api_key="unused", max_retries=0)
    yield client
    client.close()


@pytest.fixture
def long_prompt():
    """A prompt of ~1500 engine-sim tokens that no other test sends (so its first
    request finds nothing cached), long enough to span many KV blocks."""
    tag = f"run{os.getpid()}-{next(_unique)}"
    return tag + " " + " ".join(f"w{i}" for i in range(1500))
