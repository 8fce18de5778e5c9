"""A request with a field the provider would refuse as unknown is refused before staging, and
``check_fields=False`` stages it for the provider to judge
(vertexbatch/_requests/field_check.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import vertexbatch as vb
from tests.helpers import CLAUDE, GEMINI, object_names
from vertexbatch.emulator import LocalStack

SECRET = "Patient Jane Roe, diagnosis"


def _params(text: str = "Hi", **extra: Any) -> dict[str, Any]:
    return {"max_tokens": 32, "messages": [{"role": "user", "content": text}], **extra}


def _misspelt_claude() -> list[vb.ClaudeRequest]:
    return [
        vb.ClaudeRequest("a", _params("First")),
        vb.ClaudeRequest("typo", _params("Second", temprature=0.2)),
        vb.ClaudeRequest("c", _params("Third")),
    ]


def _misspelt_gemini() -> list[vb.GeminiRequest]:
    good = [{"role": "user", "parts": [{"text": "Classify"}]}]
    bad = [{"role": "user", "parts": [{"text": "Classify", "thougth": True}]}]
    return [vb.GeminiRequest("a", good), vb.GeminiRequest("typo", bad), vb.GeminiRequest("c", good)]


def test_a_misspelt_claude_parameter_is_refused_before_any_cloud_call(
    counted: tuple[vb.Client, list[str]], stack: LocalStack, bucket: str
) -> None:
    """The key and the place are named; no GCS or Vertex call is made."""
    client, seen = counted
    request = vb.ClaudeRequest("typo", _params(temprature=0.2))
    with pytest.raises(vb.InvalidRequestError) as info:
        client.submit_claude("misspelt", CLAUDE, [request])
    message = str(info.value)
    assert "request 'typo'" in message and "params.<field 3>" in message
    assert "anthropic" in message and "check_fields=False" in message
    assert info.value.field == "params"
    assert seen == [] and sum(stack.calls().values()) == 0
    assert object_names(stack, bucket, "") == []


def test_a_later_misspelt_line_leaves_nothing_staged(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Refused while staging: the uploads are abandoned and no job is created."""
    with pytest.raises(vb.InvalidRequestError, match="request 'typo'"):
        client.submit_claude("misspelt-later", CLAUDE, _misspelt_claude())
    assert object_names(stack, bucket, "") == []
    assert stack.calls()["create"] == 0


@pytest.mark.parametrize(
    ("params", "place"),
    [
        (
            {"max_tokens": 8, "messages": [{"role": "user", "content": "Hi", "max_tokens": 1}]},
            "params.messages[0].max_tokens",
        ),
        (
            _params(
                tools=[{"name": "f", "input_schema": {"type": "object"}, "strict": True, "x": 1}]
            ),
            "params.tools[0].<field 4>",
        ),
        (
            _params(thinking={"type": "enabled", "budget_tokens": 1024, SECRET: 1}),
            "params.thinking.<field 3>",
        ),
    ],
    ids=["documented name at the wrong level", "tool", "content as a key"],
)
def test_the_place_names_documented_fields_only(params: dict[str, Any], place: str) -> None:
    """A documented name is shown; any other is given by position, and no value is quoted."""
    from vertexbatch._providers import PROVIDERS

    build = PROVIDERS["anthropic"].builder()
    with pytest.raises(vb.InvalidRequestError) as info:
        build(vb.ClaudeRequest("k", params))
    assert place in str(info.value)
    assert SECRET not in str(info.value)


@pytest.mark.parametrize(
    ("params", "near"),
    [
        (_params(temprature=0.2), "'temperature'"),
        (_params(max_token=5), "'max_tokens'"),
        ({"max_tokens": 5, "messages": [{"role": "user", "contnet": "Hi"}]}, "'content'"),
        (_params(**{SECRET: 1}), None),
    ],
    ids=["top level", "a plural", "in a message", "nothing near"],
)
def test_a_misspelling_names_the_field_the_sdk_defines(
    params: dict[str, Any], near: str | None
) -> None:
    """The closest name the SDK's types define is offered (never the caller's own text)."""
    from vertexbatch._providers import PROVIDERS

    with pytest.raises(vb.InvalidRequestError) as info:
        PROVIDERS["anthropic"].builder()(vb.ClaudeRequest("k", params))
    message = str(info.value)
    if near is None:
        assert "did you mean" not in message
    else:
        assert f"(did you mean {near}?)" in message
    assert SECRET not in message and "temprature" not in message


def test_vertex_fields_and_the_sdks_own_are_staged(client: vb.Client, stack: LocalStack) -> None:
    """temperature, anthropic_beta, a custom tool, thinking and metadata all pass."""
    params = _params(
        temperature=0.2,
        anthropic_beta=["output-128k-2025-02-19"],
        tools=[
            {
                "name": "f",
                "input_schema": {"type": "object", "properties": {"a": {"type": "string"}}},
            }
        ],
        metadata={"user_id": "u-1"},
        stop_sequences=["###"],
    )
    job = client.submit_claude("vertex-fields", CLAUDE, [vb.ClaudeRequest("k", params)])
    stack.wait_job(job.name)
    assert [r.ok for r in client.results(job)] == [True]


def test_a_misspelt_gemini_part_is_refused(client: vb.Client, stack: LocalStack) -> None:
    with pytest.raises(vb.InvalidRequestError) as info:
        client.submit_gemini("misspelt-gemini", GEMINI, _misspelt_gemini())
    assert "request 'typo'" in str(info.value)
    assert "contents[0].parts[0].<field 2>" in str(info.value)
    assert info.value.field == "contents"
    assert stack.calls()["create"] == 0


@pytest.mark.parametrize(
    ("call", "requests"),
    [
        (lambda client, r: client.plan_claude("plan-typo", CLAUDE, r), _misspelt_claude),
        (lambda client, r: client.run_claude("run-typo", CLAUDE, r), _misspelt_claude),
        (lambda client, r: client.plan_gemini("plan-typo", GEMINI, r), _misspelt_gemini),
    ],
    ids=["plan_claude", "run_claude", "plan_gemini"],
)
def test_plans_and_runs_check_too(
    client: vb.Client,
    stack: LocalStack,
    call: Callable[[vb.Client, list[Any]], Any],
    requests: Callable[[], list[Any]],
) -> None:
    with pytest.raises(vb.InvalidRequestError, match="request 'typo'"):
        call(client, requests())
    assert stack.calls()["create"] == 0


def test_check_fields_must_be_a_bool(client: vb.Client) -> None:
    with pytest.raises(vb.InvalidRequestError, match="check_fields must be True or False"):
        client.submit_claude("x", CLAUDE, _misspelt_claude(), check_fields="no")  # type: ignore[arg-type]


@pytest.mark.parametrize("provider", ["anthropic", "google"])
def test_unchecked_the_provider_refuses_the_line_and_answers_the_rest(
    client: vb.Client, stack: LocalStack, provider: str
) -> None:
    """check_fields=False stages the line; the local model refuses it as the provider would:
    that key is a permanent per-line error (400), the others are answered."""
    if provider == "anthropic":
        job = client.submit_claude("unchecked", CLAUDE, _misspelt_claude(), check_fields=False)
    else:
        job = client.submit_gemini("unchecked", GEMINI, _misspelt_gemini(), check_fields=False)
    assert stack.wait_job(job.name)["state"] == "JOB_STATE_SUCCEEDED"
    results = {r.key: r for r in client.results(job)}
    assert sorted(results) == ["a", "c", "typo"]
    assert results["a"].ok and results["c"].ok
    error = results["typo"].error
    assert isinstance(error, vb.LineError) and not vb.is_retryable(error)
    assert error.code == 400
    assert error.status == "INVALID_ARGUMENT"  # the default status shape: "Bad Request: {json}"
    assert client.status(job).failed == 1


def test_the_command_refuses_a_misspelt_line_and_no_check_fields_stages_it(
    stack: LocalStack, bucket: str, client: vb.Client
) -> None:
    """`vertexbatch submit` exits 3 naming the line and the place; --no-check-fields submits."""
    import json

    from click.testing import CliRunner

    from vertexbatch._command.cli import main

    lines = [
        {"key": "a", "params": _params("First")},
        {"key": "typo", "params": _params("Second", temprature=0.2)},
    ]
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    env = {**stack.environment(bucket, prefix="jobs")}
    args = ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "cli-typo", "-"]
    result = CliRunner().invoke(main, args, env=env, input=stdin, catch_exceptions=False)
    assert result.exit_code == 3
    assert "params.<field 3>" in result.stderr and "request 'typo'" in result.stderr
    assert client.find("cli-typo") is None
    args.insert(-1, "--no-check-fields")
    result = CliRunner().invoke(main, args, env=env, input=stdin, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    job = client.find("cli-typo")
    assert job is not None
    stack.wait_job(job.name)
    assert {r.key: r.ok for r in client.results(job)} == {"a": True, "typo": False}
