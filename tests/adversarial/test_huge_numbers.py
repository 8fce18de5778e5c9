"""Numbers too large for any model or any reader: refused clearly, by plan and submit alike.

Issue 38, item 10: ``max_tokens`` of ``10**400`` made ``plan_*`` and ``--dry-run`` crash with
``OverflowError`` (exit 1, "a bug in vertexbatch") while submit staged the line; a schema with
``minimum: 10**400`` crashed the same way. Each is now an ``InvalidRequestError`` naming the
field and the rule, raised before any cloud call, by plan and submit alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import claude_params, staged_names
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode
from vertexbatch.emulator import LocalStack

CLAUDE = "claude-sonnet-4-5@20250929"  # a priced model: the plan computes a cost
GEMINI = "gemini-2.5-flash"
HUGE = 10**400
INT32 = 2**31  # one past the largest int32


def _both(
    client: vb.Client, request: vb.ClaudeRequest | vb.GeminiRequest, **options: Any
) -> list[Callable[[], object]]:
    """plan_*, submit_* and run_* of the request."""
    if isinstance(request, vb.ClaudeRequest):
        return [
            lambda: client.plan_claude("huge", CLAUDE, [request], **options),
            lambda: client.submit_claude("huge", CLAUDE, [request], **options),
            lambda: client.run_claude("huge", CLAUDE, [request], **options),
        ]
    return [
        lambda: client.plan_gemini("huge", GEMINI, [request], **options),
        lambda: client.submit_gemini("huge", GEMINI, [request], **options),
        lambda: client.run_gemini("huge", GEMINI, [request], **options),
    ]


CASES = [
    (vb.ClaudeRequest("k", claude_params(max_tokens=HUGE)), "params", "'max_tokens'"),
    (vb.ClaudeRequest("k", claude_params(max_tokens=INT32)), "params", "'max_tokens'"),
    (vb.ClaudeRequest("k", claude_params(temperature=HUGE)), "params", "params.temperature"),
    (vb.ClaudeRequest("k", claude_params(top_k=-HUGE)), "params", "params.top_k"),
    (vb.GeminiRequest("k", "Hi", {"max_output_tokens": HUGE}), "config", "maxOutputTokens"),
    (vb.GeminiRequest("k", "Hi", {"max_output_tokens": INT32}), "config", "maxOutputTokens"),
    (
        vb.GeminiRequest("k", "Hi", {"thinking_config": {"thinking_budget": HUGE}}),
        "config",
        "thinkingConfig.thinkingBudget",
    ),
    (vb.GeminiRequest("k", "Hi", {"seed": -INT32 - 1}), "config", "seed"),
    (vb.GeminiRequest("k", "Hi", {"candidate_count": INT32}), "config", "candidateCount"),
    (vb.GeminiRequest("k", "Hi", {"temperature": 1e300}), "config", "temperature"),
    (vb.GeminiRequest("k", "Hi", {"top_p": HUGE}), "config", "top_p"),
]


@pytest.mark.parametrize(("request_", "field", "named"), CASES, ids=[c[2] for c in CASES])
def test_a_number_no_model_takes_is_refused_by_plan_and_submit_alike(
    client: vb.Client,
    stack: LocalStack,
    bucket: str,
    request_: vb.ClaudeRequest | vb.GeminiRequest,
    field: str,
    named: str,
) -> None:
    """InvalidRequestError naming the field, the same from plan, submit and run; nothing sent."""
    messages = set()
    for call in _both(client, request_):
        with pytest.raises(vb.InvalidRequestError) as info:
            call()
        assert info.value.field == field
        assert named in str(info.value), str(info.value)
        assert info.value.__cause__ is None
        messages.add(str(info.value))
    assert len(messages) == 1, messages
    assert staged_names(stack, bucket, "huge") == []
    assert stack.calls() == {}


@pytest.mark.parametrize(
    "request_",
    [
        vb.ClaudeRequest("k", claude_params(max_tokens=INT32 - 1)),
        vb.GeminiRequest(
            "k", "Hi", {"max_output_tokens": INT32 - 1, "seed": -INT32, "temperature": 3e38}
        ),
    ],
)
def test_the_largest_numbers_the_wire_takes_are_planned(
    client: vb.Client, request_: vb.ClaudeRequest | vb.GeminiRequest
) -> None:
    """The largest int32, the smallest, a float32-sized float: planned, with a finite cost."""
    if isinstance(request_, vb.ClaudeRequest):
        plan = client.plan_claude("huge-ok", CLAUDE, [request_])
    else:
        plan = client.plan_gemini("huge-ok", GEMINI, [request_])
    assert plan.max_output_tokens == INT32 - 1
    assert plan.cost_high is not None and plan.cost_high < 1e9


@pytest.mark.parametrize("keyword", ["minimum", "maximum"])
@pytest.mark.parametrize("value", [HUGE, -HUGE], ids=["huge", "minus-huge"])
def test_a_schema_bound_no_number_can_be_is_refused(
    client: vb.Client, keyword: str, value: int
) -> None:
    """``minimum: 10**400``: InvalidRequestError(field="schema") naming the place and rule."""
    schema = {"type": "object", "properties": {"n": {"type": "number", keyword: value}}}
    for call in _both(client, vb.ClaudeRequest("k", claude_params()), schema=schema):
        with pytest.raises(vb.InvalidRequestError) as info:
            call()
        assert info.value.field == "schema"
        assert f"schema.properties.n.{keyword}" in str(info.value), str(info.value)


def test_an_answer_with_a_huge_integer_is_judged_not_crashed() -> None:
    """An answer of ``10**400`` is checked against its schema without converting it to float."""
    from vertexbatch._schemas.check import Violation, schema_of, validate

    schema = schema_of(
        {
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 0}, "x": {"type": "number"}},
        }
    )
    assert schema is not None
    assert validate({"n": HUGE, "x": -HUGE}, schema.json) is None
    assert validate({"n": -HUGE}, schema.json) == Violation("$.n", "minimum")


@pytest.mark.parametrize("dry_run", [True, False])
@pytest.mark.parametrize("as_json", [True, False])
def test_the_command_refuses_a_huge_max_tokens_as_an_invalid_request(
    stack_env: str, stack: LocalStack, tmp_path: Path, dry_run: bool, as_json: bool
) -> None:
    """``--dry-run`` and submit alike: exit 3 naming the line's field, never "a bug"."""
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"key": "a", "params": claude_params(max_tokens=HUGE)}) + "\n")
    args = ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "huge-cmd", str(path)]
    args += ["--dry-run"] * dry_run + ["--json"] * as_json
    result = CliRunner().invoke(main, args)
    assert result.exit_code == ExitCode.INVALID_REQUEST, result.output
    assert "'max_tokens'" in result.stderr and "a bug" not in result.output
    assert staged_names(stack, stack_env, "huge-cmd") == []


def test_the_command_refuses_a_schema_file_with_a_huge_bound(
    stack_env: str, tmp_path: Path
) -> None:
    """``--schema`` with ``minimum: 10**400``: exit 2 naming --schema and the place."""
    schema = tmp_path / "s.json"
    schema.write_text(
        json.dumps({"type": "object", "properties": {"n": {"type": "number", "minimum": HUGE}}})
    )
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"key": "a", "params": claude_params()}) + "\n")
    args = ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "huge-s", "--dry-run"]
    result = CliRunner().invoke(main, [*args, "--schema", str(schema), str(path)])
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "--schema" in result.output and "minimum" in result.output
    assert "a bug" not in result.output
