"""Configuration from the environment and the command's flags (pure: no client is built)."""

from __future__ import annotations

import pytest

import vertexbatch as vb
from vertexbatch._config import DEFAULT_PREFIX, Config, read_config

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
