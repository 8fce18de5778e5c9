"""Claude's rule for a tool's property names, applied to ``schema=`` at submit and by the stack.

Anthropic refuses a tool whose ``input_schema.properties`` has a key outside
``^[a-zA-Z0-9_.-]{1,64}$`` (400 ``invalid_request_error``, "Property keys should match
pattern"): line by line, hours after a batch is submitted. ``schema=`` is sent to Claude as a
forced tool's ``input_schema``, so such a schema is refused before anything is staged (the
sources are in ``vertexbatch/_schemas/forms.py``); Gemini's ``responseSchema`` documents no such
rule and keeps taking it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import CLAUDE, GEMINI, claude_requests, gemini_requests, staged_names
from tests.lab import Lab
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode
from vertexbatch.emulator import LocalStack

BAD_NAMES = ["a@b", "naïve", "x" * 65, "a/b", "a:b", "(1-5)"]
GOOD_NAMES = ["a", "a.b-c_d", "A9", "x" * 64]


def _schema(name: str, *, nested: bool = False) -> dict[str, Any]:
    inner = {"type": "object", "properties": {name: {"type": "string"}}}
    if nested:
        return {"type": "object", "properties": {"outer": inner}}
    return inner


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_claude_schema_with_a_property_name_claude_refuses_is_refused_at_submit(
    client: vb.Client, stack: LocalStack, bucket: str, name: str
) -> None:
    """submit_claude, plan_claude and run_claude refuse it naming the rule, stage nothing."""
    calls: list[Any] = [
        lambda: client.submit_claude("pn", CLAUDE, claude_requests(2), schema=_schema(name)),
        lambda: client.plan_claude("pn", CLAUDE, claude_requests(2), schema=_schema(name)),
        lambda: client.run_claude("pn", CLAUDE, claude_requests(2), schema=_schema(name)),
    ]
    for call in calls:
        with pytest.raises(vb.InvalidRequestError) as info:
            call()
        said = str(info.value)
        assert info.value.field == "schema"
        assert "^[a-zA-Z0-9_.-]{1,64}$" in said and "schema.properties" in said, said
        assert repr(name) in said  # the caller's own schema: its name is shown
    assert staged_names(stack, bucket, "pn") == []
    assert stack.calls() == {}


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_a_claude_schema_with_names_claude_takes_is_submitted_and_answered(
    client: vb.Client, stack: LocalStack, name: str
) -> None:
    """Letters, digits, '_', '.', '-', up to 64: staged, and the stack answers every line."""
    job = client.submit_claude("pn-ok", CLAUDE, claude_requests(2), schema=_schema(name))
    stack.wait_job(job.name)
    results = list(client.results(job))
    assert [r.ok for r in results] == [True, True], [r.error for r in results]


def test_a_nested_property_name_is_left_to_claude(client: vb.Client, stack: LocalStack) -> None:
    """Anthropic's check names ``input_schema.properties`` only: a nested name is staged."""
    schema = _schema("a@b", nested=True)
    job = client.submit_claude("pn-nested", CLAUDE, claude_requests(1), schema=schema)
    stack.wait_job(job.name)
    assert [r.ok for r in client.results(job)] == [True]


def test_the_same_schema_goes_to_gemini_which_has_no_such_rule(
    client: vb.Client, stack: LocalStack
) -> None:
    """Gemini's responseSchema documents no property-name rule: staged and answered."""
    job = client.submit_gemini("pn-gemini", GEMINI, gemini_requests(1), schema=_schema("a@b"))
    stack.wait_job(job.name)
    assert [r.ok for r in client.results(job)] == [True]


def test_the_command_refuses_such_a_schema_file_for_claude(
    stack_env: str, stack: LocalStack, tmp_path: Path
) -> None:
    """``submit --schema`` for Claude: exit 3 with the rule, nothing staged."""
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps(_schema("a@b")))
    path = tmp_path / "in.jsonl"
    params = {"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    path.write_text(json.dumps({"key": "a", "params": params}) + "\n")
    args = ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "pn-cmd"]
    result = CliRunner().invoke(main, [*args, "--schema", str(schema), str(path)])
    assert result.exit_code == ExitCode.INVALID_REQUEST, result.output
    assert "^[a-zA-Z0-9_.-]{1,64}$" in result.stderr and "a bug" not in result.output
    assert staged_names(stack, stack_env, "pn-cmd") == []


@pytest.mark.parametrize("name", ["a@b", "x" * 65])
def test_the_stack_fails_a_claude_line_whose_tool_has_such_a_property_name(
    stack: LocalStack, bucket: str, name: str
) -> None:
    """A line staged by another client: the stack fails that line as Anthropic does (400)."""
    lab = Lab(stack, bucket)
    tool = {"name": "answer", "input_schema": _schema(name)}
    lines = [
        lab.claude_line("hi", "bad", tools=[tool]),
        lab.claude_line("hi", "good", tools=[{**tool, "input_schema": _schema("ok")}]),
    ]
    job = lab.create(lines, model=lab.CLAUDE)
    done = stack.wait_job(job.name)
    rows = {row["custom_id"]: row for row in lab.read_rows(done)}
    assert rows["good"]["status"] == ""
    assert "Property keys should match pattern '^[a-zA-Z0-9_.-]{1,64}$'" in rows["bad"]["status"]
    assert "tools.0.custom.input_schema.properties" in rows["bad"]["status"]


def test_the_stack_fails_a_claude_line_whose_tool_name_claude_refuses(
    stack: LocalStack, bucket: str
) -> None:
    """A tool name outside ``^[a-zA-Z0-9_-]{1,128}$`` fails its line as Anthropic does (400)."""
    lab = Lab(stack, bucket)
    tool = {"name": "ns.answer", "input_schema": _schema("ok")}
    job = lab.create([lab.claude_line("hi", "bad", tools=[tool])], model=lab.CLAUDE)
    done = stack.wait_job(job.name)
    (row,) = lab.read_rows(done)
    assert "tools.0.custom.name: String should match pattern" in row["status"]
