"""``--schema FILE`` on submit, run and --dry-run; ``results`` shows parsed values and calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import vertexbatch as vb
from tests.helpers import CLAUDE, GEMINI, invoke, request_line, write_lines
from vertexbatch.emulator import LocalStack

SCHEMA = {
    "type": "object",
    "properties": {"label": {"enum": ["bug", "question"]}, "urgent": {"type": "boolean"}},
    "required": ["label", "urgent"],
}


def _schema_file(tmp_path: Path, data: object = SCHEMA) -> str:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_submit_with_schema_and_results_show_parsed(
    stack: LocalStack, env: dict[str, str | None], tmp_path: Path, client: vb.Client
) -> None:
    """submit --schema stages the schema; results print each parsed value."""
    path = write_lines(tmp_path / "in.jsonl", [request_line("a"), request_line("b")])
    schema = _schema_file(tmp_path)
    args = ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "cs-1"]
    result = invoke([*args, "--schema", schema, str(path)], env)
    assert result.exit_code == 0, result.output
    job = client.find("cs-1")
    assert job is not None
    stack.wait_job(job.name)
    printed = invoke(["results", "cs-1"], env)
    records = [json.loads(line) for line in printed.stdout.splitlines()]
    assert [r["parsed"] for r in records] == [{"label": "bug", "urgent": False}] * 2
    assert all(r["tool_calls"] == [] and r["outcome"] == "ok" for r in records)


def test_dry_run_and_run_take_a_schema(
    stack: LocalStack, bucket: str, env: dict[str, str | None], tmp_path: Path, client: vb.Client
) -> None:
    """--dry-run plans with the schema; run start stages it in each shard."""
    lines = [json.dumps({"key": "t1", "contents": "Classify: refund please.", "config": None})]
    path = write_lines(tmp_path / "in.jsonl", lines)
    schema = _schema_file(tmp_path)
    args = ["submit", "--provider", "gemini", "--model", GEMINI, "--id", "cs-2", "--schema"]
    planned = invoke([*args, schema, "--dry-run", str(path)], env)
    assert planned.exit_code == 0, planned.output
    assert "dry run" in planned.stdout
    assert client.find("cs-2") is None
    start = ["run", "submit", "--provider", "gemini", "--model", GEMINI, "--id", "cs-run"]
    started = invoke([*start, "--schema", schema, str(path)], env)
    assert started.exit_code == 0, started.output
    shard = client.find("cs-run.s0")
    assert shard is not None
    blob = stack.storage_client().bucket(bucket).blob("jobs/cs-run.s0/manifest.json")
    assert json.loads(blob.download_as_bytes())["schema"]["json"]["required"] == SCHEMA["required"]


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("not json", "not a JSON file"),
        (json.dumps({"type": "string"}), "must describe an object"),
        ('{"type": "object", "prop', "not a JSON file"),  # truncated
        ('{"a": ' * 5000 + "1" + "}" * 5000, "nested too deeply"),  # deep: no RecursionError
        (json.dumps({"type": "object", "description": "x" * 70_000}), "over 65,536 bytes"),
        (b"\xff\xfe{}".decode("latin-1"), "not a JSON file"),  # not UTF-8
    ],
    ids=["not-json", "not-object", "truncated", "deep", "huge", "not-utf8"],
)
def test_a_bad_schema_file_is_a_usage_error(
    env: dict[str, str | None], tmp_path: Path, content: str, words: str
) -> None:
    """A schema file that is not JSON (truncated, too deep, too big, not UTF-8) or not a JSON
    Schema object exits 2 naming --schema and why, with no traceback."""
    path = write_lines(tmp_path / "in.jsonl", [request_line("a")])
    schema = tmp_path / "schema.json"
    schema.write_bytes(content.encode("latin-1" if content.startswith("\xff") else "utf-8"))
    args = ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "cs-3"]
    result = invoke([*args, "--schema", str(schema), str(path)], env)
    assert result.exit_code == 2 and "--schema" in result.output and words in result.output
    assert "Traceback" not in result.output


def test_results_print_a_tool_calls_signature_only_when_it_has_one(
    stack: LocalStack, env: dict[str, str | None], client: vb.Client
) -> None:
    """A Gemini 3 call's ``thoughtSignature`` is in the call's record (the next turn needs it
    back); Claude's calls carry none, and their records have no ``signature``."""
    tool = {
        "function_declarations": [
            {
                "name": "weather",
                "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}},
            }
        ]
    }
    gemini = vb.GeminiRequest("g", "Weather? [[vb:tool_call]]", {"tools": [tool]})
    claude = vb.ClaudeRequest(
        "c",
        {
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "Weather? [[vb:tool_call]]"}],
            "tools": [
                {
                    "name": "weather",
                    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
                }
            ],
        },
    )
    for job in (
        client.submit_gemini("ct-g", GEMINI, [gemini]),
        client.submit_claude("ct-c", CLAUDE, [claude]),
    ):
        stack.wait_job(job.name)
    (signed,) = json.loads(invoke(["results", "ct-g"], env).stdout)["tool_calls"]
    assert signed["name"] == "weather" and signed["signature"]
    assert set(signed) == {"name", "arguments", "id", "signature"}
    (plain,) = json.loads(invoke(["results", "ct-c"], env).stdout)["tool_calls"]
    assert set(plain) == {"name", "arguments", "id"}
