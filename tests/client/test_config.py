"""Configuration from the environment and the command's flags, and the retry policy it picks
for the local stack (no call is made: clients are built, never used)."""

from __future__ import annotations

import pytest
import requests

import vertexbatch as vb
from vertexbatch._config import DEFAULT_PREFIX, Config, local_retry, read_config
from vertexbatch._retry import LOCAL_STACK_HINT, is_connection_refused
from vertexbatch._rules import is_loopback

BASE = {
    "GOOGLE_CLOUD_PROJECT": "p",
    "GOOGLE_CLOUD_LOCATION": "us-central1",
    "VERTEXBATCH_BUCKET": "b",
}
LOCAL = {
    "VERTEXBATCH_VERTEX_ENDPOINT": "http://127.0.0.1:1",
    "STORAGE_EMULATOR_HOST": "http://127.0.0.1:2",
}


def test_environment_alone() -> None:
    """The variables give the settings; no prefix is the default one, no endpoints are None."""
    assert read_config(BASE) == Config("p", "us-central1", "b", DEFAULT_PREFIX, None, None)
    assert DEFAULT_PREFIX == "vertexbatch"
    local = read_config({**BASE, **LOCAL, "VERTEXBATCH_PREFIX": "jobs"})
    assert (local.prefix, local.vertex_endpoint, local.storage_endpoint) == (
        "jobs",
        "http://127.0.0.1:1",
        "http://127.0.0.1:2",
    )


def test_flags_win_and_empty_values_are_unset() -> None:
    """A flag wins over its variable; an empty flag or variable counts as not given."""
    env = {**BASE, "VERTEXBATCH_PREFIX": ""}
    flags = {"bucket": "flagged", "project": "", "prefix": None}
    config = read_config(env, flags)
    assert (config.project, config.bucket, config.prefix) == ("p", "flagged", DEFAULT_PREFIX)


@pytest.mark.parametrize(
    ("env", "field", "from_env", "command"),
    [
        (
            {"GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "l"},
            "VERTEXBATCH_BUCKET",
            "environment variable VERTEXBATCH_BUCKET is not set: vertexbatch needs "
            "GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION, VERTEXBATCH_BUCKET",
            "missing --bucket (or set VERTEXBATCH_BUCKET)",
        ),
        (
            {**BASE, "VERTEXBATCH_VERTEX_ENDPOINT": "http://127.0.0.1:1"},
            "STORAGE_EMULATOR_HOST",
            "VERTEXBATCH_VERTEX_ENDPOINT and STORAGE_EMULATOR_HOST must be set together "
            "(both point at the local stack)",
            "missing --storage-endpoint (or set STORAGE_EMULATOR_HOST): the local stack needs "
            "both endpoints",
        ),
        (
            {**BASE, **LOCAL, "VERTEXBATCH_VERTEX_ENDPOINT": "127.0.0.1:1"},
            "VERTEXBATCH_VERTEX_ENDPOINT",
            "VERTEXBATCH_VERTEX_ENDPOINT must be a URL such as http://127.0.0.1:PORT, "
            "got '127.0.0.1:1'",
            "--vertex-endpoint (VERTEXBATCH_VERTEX_ENDPOINT) must be a URL such as "
            "http://127.0.0.1:PORT, got '127.0.0.1:1'",
        ),
    ],
)
def test_errors_name_the_variable_and_for_the_command_the_flag(
    env: dict[str, str], field: str, from_env: str, command: str
) -> None:
    """Each problem names its variable; with flags (the command) it names the flag as well."""
    with pytest.raises(vb.InvalidRequestError) as raised:
        read_config(env)
    assert (str(raised.value), raised.value.field) == (from_env, field)
    with pytest.raises(vb.InvalidRequestError) as raised:
        read_config(env, {})
    assert (str(raised.value), raised.value.field) == (command, field)


def test_client_from_env_uses_the_same_reading() -> None:
    """Client.from_env raises what read_config raises, before building anything."""
    with pytest.raises(vb.InvalidRequestError, match="must be a URL"):
        vb.Client.from_env({**BASE, **LOCAL, "STORAGE_EMULATOR_HOST": "127.0.0.1:2"})


@pytest.mark.parametrize(
    ("endpoint", "loopback"),
    [
        ("http://127.0.0.1:9100", True),
        ("http://127.8.0.1:9100", True),
        ("http://localhost:9100", True),
        ("http://[::1]:9100", True),
        ("https://us-central1-aiplatform.googleapis.com", False),
        ("http://10.0.0.7:9100", False),
        ("http://storage.example:4443", False),
    ],
)
def test_is_loopback(endpoint: str, loopback: bool) -> None:
    """Endpoints on this machine are told apart from every other host."""
    assert is_loopback(endpoint) is loopback


def test_local_retry_keeps_the_policy_but_not_refused_connections() -> None:
    """The local policy is the caller's (or the default) with refused connections made final;
    other transient errors are retried as before, and the default policy still retries refusals.
    """
    refused = requests.ConnectionError("refused")
    refused.__cause__ = ConnectionRefusedError(111, "Connection refused")
    reset = requests.ConnectionError("reset")
    reset.__cause__ = ConnectionResetError(104, "Connection reset by peer")
    local = local_retry(vb.RetryPolicy.no_wait(attempts=3))
    assert (local.attempts, local.wait, local.retry_refused) == (3, False, False)
    assert local_retry(None) == vb.RetryPolicy(retry_refused=False)
    assert not local.retries(refused) and local.retries(reset)
    assert vb.RetryPolicy().retries(refused) and vb.RetryPolicy().retries(reset)
    assert is_connection_refused(refused) and not is_connection_refused(reset)

    calls = []

    def refuse() -> None:
        calls.append(1)
        raise refused

    with pytest.raises(requests.ConnectionError) as raised:
        local.call("read", refuse)
    assert len(calls) == 1 and raised.value.__notes__ == [LOCAL_STACK_HINT]
    with pytest.raises(requests.ConnectionError):
        vb.RetryPolicy.no_wait(attempts=3).call("read", refuse)
    assert len(calls) == 4


def test_only_loopback_endpoints_get_the_local_policy() -> None:
    """Client.from_env makes refused connections final for loopback endpoints only."""
    assert vb.Client.from_env({**BASE, **LOCAL}).retry.retry_refused is False
    remote = {
        "VERTEXBATCH_VERTEX_ENDPOINT": "http://10.0.0.7:1",
        "STORAGE_EMULATOR_HOST": "http://10.0.0.7:2",
    }
    assert vb.Client.from_env({**BASE, **remote}).retry.retry_refused is True
    mine = vb.RetryPolicy.no_wait(attempts=2)
    local = vb.Client.from_env({**BASE, **LOCAL}, retry=mine).retry
    assert (local.attempts, local.wait, local.retry_refused) == (2, False, False)
