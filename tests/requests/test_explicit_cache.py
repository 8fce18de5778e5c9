"""A Gemini request naming an explicit context cache (``cachedContent``) is refused before
anything is staged, on every path; Claude's ``cache_control`` keeps working (issue 40, item 6).

Vertex batch prediction takes no explicit context cache: every line naming one fails hours later
(Google's Gemini batch page, "Unsupported features"; python-genai issue #509). The refusal names
the request's key and the field, never the cache's name.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.genai import types as genai_types

import vertexbatch as vb
from tests.helpers import CLAUDE, GEMINI, object_names
from vertexbatch._requests.lines import gemini_line
from vertexbatch.emulator import LocalStack

CACHE = "projects/p/locations/us-central1/cachedContents/secret-cache-4242"
CONTENTS = [{"role": "user", "parts": [{"text": "Classify"}]}]


def _refused(config: Any) -> vb.InvalidRequestError:
    with pytest.raises(vb.InvalidRequestError) as caught:
        gemini_line(vb.GeminiRequest("cached", CONTENTS, config))
    return caught.value


@pytest.mark.parametrize(
    "config",
    [
        {"cachedContent": CACHE},
        {"cached_content": CACHE},
        {"temperature": 0.2, "cachedContent": CACHE},
        genai_types.GenerateContentConfig(cached_content=CACHE, temperature=0.1),
    ],
    ids=["camel", "snake", "with-generation", "sdk-type"],
)
def test_a_request_naming_an_explicit_cache_is_refused(config: Any) -> None:
    """Named by its key and the field, with the reason; the cache's name is never quoted."""
    error = _refused(config)
    message = str(error)
    assert "request 'cached'" in message and "cachedContent" in message
    assert "batch prediction does not take explicit context caches" in message
    assert "secret-cache" not in message and error.field == "config"


def test_no_cache_named_is_staged_as_before() -> None:
    """A config without the field, or with it set to None, stages."""
    assert gemini_line(vb.GeminiRequest("plain", CONTENTS, {"temperature": 0.2})).data
    sdk = genai_types.GenerateContentConfig(cached_content=None, temperature=0.2)
    assert gemini_line(vb.GeminiRequest("plain", CONTENTS, sdk)).data


def test_every_path_refuses_it_before_any_cloud_call(
    counted: tuple[vb.Client, list[str]], stack: LocalStack, bucket: str
) -> None:
    """submit, plan and run (check_fields=False too): no GCS or Vertex call."""
    client, seen = counted
    requests = [vb.GeminiRequest("cached", CONTENTS, {"cachedContent": CACHE})]
    calls = (
        lambda: client.submit_gemini("explicit", GEMINI, requests),
        lambda: client.submit_gemini("explicit", GEMINI, requests, check_fields=False),
        lambda: client.plan_gemini("explicit", GEMINI, requests),
        lambda: client.run_gemini("explicit-run", GEMINI, requests, shard_size=1),
    )
    for index, call in enumerate(calls):
        with pytest.raises(vb.InvalidRequestError, match="request 'cached' sets cachedContent"):
            call()
        assert seen == [] and sum(stack.calls().values()) == 0, index


def test_a_later_request_naming_one_leaves_nothing_staged(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Refused while staging, as any bad line is: the uploads are abandoned, no job made."""
    requests = [
        vb.GeminiRequest("a", CONTENTS),
        vb.GeminiRequest("cached", CONTENTS, {"cachedContent": CACHE}),
    ]
    with pytest.raises(vb.InvalidRequestError, match="request 'cached' sets cachedContent"):
        client.submit_gemini("explicit-later", GEMINI, requests)
    assert object_names(stack, bucket, "") == []
    assert stack.calls()["create"] == 0


def test_the_command_refuses_a_request_file_line_naming_one(
    stack: LocalStack, bucket: str, client: vb.Client
) -> None:
    """`vertexbatch submit --provider gemini` exits 3 naming the line's key and the field."""
    from click.testing import CliRunner

    from vertexbatch._command.cli import main

    lines = [
        {"key": "a", "contents": CONTENTS},
        {"key": "cached", "contents": CONTENTS, "config": {"cachedContent": CACHE}},
    ]
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    env = {**stack.environment(bucket, prefix="jobs")}
    args = ["submit", "--provider", "gemini", "--model", GEMINI, "--id", "cli-cache", "-"]
    result = CliRunner().invoke(main, args, env=env, input=stdin, catch_exceptions=False)
    assert result.exit_code == 3, result.stderr
    assert "request 'cached' sets cachedContent" in result.stderr
    assert "secret-cache" not in result.stderr
    assert client.find("cli-cache") is None


def test_claude_cache_control_keeps_working(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A Claude request marking a prompt-cache breakpoint is submitted and answered."""
    system = [{"type": "text", "text": "A long rubric.", "cache_control": {"type": "ephemeral"}}]
    params = {
        "max_tokens": 32,
        "system": system,
        "messages": [{"role": "user", "content": "Grade this."}],
    }
    job = client.submit_claude("cache-control", CLAUDE, [vb.ClaudeRequest("k", params)])
    assert stack.wait_job(job.name)["state"] == "JOB_STATE_SUCCEEDED"
    assert [r.ok for r in client.results(job)] == [True]
