"""``schema=`` through the real clients against the local stack: submit, run, client.aio,
identity, dedupe and the cache; a stateless reader given only the Job validates."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest

import vertexbatch as vb
from tests.helpers import claude_request, read_to_end
from vertexbatch.emulator import LocalStack

CLAUDE = "claude-opus-5-5@default"
GEMINI = "gemini-3.8-flash"


class Verdict(pydantic.BaseModel):
    """What a reviewer decides about one change."""

    approve: bool
    reason: str
    score: int = pydantic.Field(ge=1, le=5)


LOOKUP = {
    "name": "lookup",
    "description": "Look a ticket up.",
    "input_schema": {
        "type": "object",
        "properties": {"ticket": {"type": "string"}},
        "required": ["ticket"],
    },
}


def _claude(n: int, directive: str = "", **params: Any) -> list[vb.ClaudeRequest]:
    requests = [claude_request(f"k{i}", f"Review change {i}. {directive}") for i in range(n)]
    if params:
        requests = [vb.ClaudeRequest(r.key, {**r.params, **params}) for r in requests]
    return requests


def _gemini(n: int, directive: str = "") -> list[vb.GeminiRequest]:
    return [vb.GeminiRequest(f"g{i}", f"Classify ticket {i}. {directive}") for i in range(n)]


@pytest.mark.parametrize("provider", ["claude", "gemini"])
def test_a_conforming_answer_is_parsed(client: vb.Client, stack: LocalStack, provider: str) -> None:
    """Each answer is validated against the schema: parsed is JSON data, parsed_as the model."""
    if provider == "claude":
        job = client.submit_claude("s-ok", CLAUDE, _claude(2), schema=Verdict)
    else:
        job = client.submit_gemini("s-ok", GEMINI, _gemini(2), schema=Verdict)
    results = read_to_end(client, stack, job)
    assert len(results) == 2
    for result in results.values():
        assert result.ok, result
        assert set(result.parsed) >= {"approve", "reason", "score"}
        assert json.loads(result.text) == result.parsed
        assert result.tool_calls == ()  # Claude's forced tool is the answer, not a call
        verdict = result.parsed_as(Verdict)
        assert 1 <= verdict.score <= 5


@pytest.mark.parametrize("provider", ["claude", "gemini"])
@pytest.mark.parametrize(
    ("directive", "status"), [("nonconforming", "SCHEMA_MISMATCH"), ("not_json", "NOT_JSON")]
)
def test_an_answer_outside_the_schema_is_a_schema_error(
    client: vb.Client, stack: LocalStack, provider: str, directive: str, status: str
) -> None:
    """An answer that breaks the schema or is not JSON: SchemaError, retryable, text kept."""
    mark = f"[[vb:{directive}]]"
    if provider == "claude":
        job = client.submit_claude("s-bad", CLAUDE, _claude(1, mark), schema=Verdict)
    else:
        job = client.submit_gemini("s-bad", GEMINI, _gemini(1, mark), schema=Verdict)
    (result,) = read_to_end(client, stack, job).values()
    assert isinstance(result.error, vb.SchemaError)
    assert result.error.status == status
    assert vb.is_retryable(result.error) and result.outcome == "retryable"
    assert result.parsed is None and result.text
    assert result.text not in str(result.error)
    with pytest.raises(vb.SchemaError):
        result.parsed_as(Verdict)


def test_truncated_stays_truncated(client: vb.Client, stack: LocalStack) -> None:
    """A max-tokens stop under a schema is a TruncatedError, not a SchemaError."""
    job = client.submit_gemini("s-trunc", GEMINI, _gemini(1, "[[vb:truncate]]"), schema=Verdict)
    (result,) = read_to_end(client, stack, job).values()
    assert isinstance(result.error, vb.TruncatedError)


def test_tool_calls_are_values(client: vb.Client, stack: LocalStack) -> None:
    """Claude tool_use blocks and Gemini functionCall parts come back as ToolCall values."""
    requests = _claude(1, "[[vb:tool_call name=lookup]]", tools=[LOOKUP])
    job = client.submit_claude("s-tools", CLAUDE, requests)
    (result,) = read_to_end(client, stack, job).values()
    assert result.ok and result.stop == "tool_use"
    (call,) = result.tool_calls
    assert call.name == "lookup" and call.arguments == {"ticket": call.arguments["ticket"]}
    assert call.id.startswith("toolu_")
    declaration = {
        "name": "lookup",
        "parameters": {
            "type": "OBJECT",
            "properties": {"ticket": {"type": "STRING"}},
            "required": ["ticket"],
        },
    }
    gemini = [
        vb.GeminiRequest(
            "g0",
            "Find ticket 7. [[vb:tool_call]]",
            {"tools": [{"function_declarations": [declaration]}]},
        )
    ]
    job = client.submit_gemini("s-tools-g", GEMINI, gemini, schema=Verdict)
    (result,) = read_to_end(client, stack, job).values()
    assert result.ok and result.parsed is None  # only tool calls: an answer, nothing to parse
    assert [c.name for c in result.tool_calls] == ["lookup"]


def test_a_stateless_reader_validates(client: vb.Client, stack: LocalStack, bucket: str) -> None:
    """Another client given only the Job (as JSON) reads the schema from the manifest."""
    job = client.submit_claude("s-stateless", CLAUDE, _claude(1), schema=Verdict)
    stack.wait_job(job.name)
    other = stack.client(bucket=bucket, prefix="jobs", retry=vb.RetryPolicy.no_wait())
    (result,) = other.results(vb.Job.from_dict(json.loads(json.dumps(job.to_dict()))))
    assert result.ok and result.parsed["score"] >= 1


def test_schema_is_part_of_identity(client: vb.Client) -> None:
    """The same rows under another schema are other rows: the id refuses them."""
    client.submit_claude("s-id", CLAUDE, _claude(1), schema=Verdict)
    assert client.submit_claude("s-id", CLAUDE, _claude(1), schema=Verdict).id == "s-id"
    other = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    with pytest.raises(vb.InvalidRequestError) as caught:
        client.submit_claude("s-id", CLAUDE, _claude(1), schema=other)
    assert caught.value.field == "id"
    with pytest.raises(vb.InvalidRequestError):
        client.submit_claude("s-id", CLAUDE, _claude(1))


def test_dedupe_and_cache_tell_schemas_apart(client: vb.Client, stack: LocalStack) -> None:
    """Equal requests under two schemas are two cache entries; only valid answers are cached."""
    other = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    first = client.submit_gemini("s-c1", GEMINI, _gemini(2), schema=Verdict, cache=True)
    assert len(read_to_end(client, stack, first)) == 2
    # The same requests under the same schema: answered from the cache, parsed again.
    again = client.submit_gemini("s-c2", GEMINI, _gemini(2), schema=Verdict, cache=True)
    results = read_to_end(client, stack, again)
    assert all(r.cached and r.parsed is not None for r in results.values())
    # Under another schema: not the cache's rows.
    third = client.submit_gemini("s-c3", GEMINI, _gemini(2), schema=other, cache=True)
    results = read_to_end(client, stack, third)
    assert not any(r.cached for r in results.values())
    assert all(set(r.parsed) == {"ok"} for r in results.values())
    # A SchemaError answer is never cached.
    bad = client.submit_gemini(
        "s-c4", GEMINI, _gemini(1, "[[vb:nonconforming]]"), schema=Verdict, cache=True
    )
    assert not read_to_end(client, stack, bad)["g0"].ok
    retry = client.submit_gemini(
        "s-c5", GEMINI, _gemini(1, "[[vb:nonconforming]]"), schema=Verdict, cache=True
    )
    assert not read_to_end(client, stack, retry)["g0"].cached


def test_a_run_resubmits_schema_errors(client: vb.Client, stack: LocalStack) -> None:
    """A run takes a SchemaError as retryable: it resubmits the key within max_attempts."""
    run = client.run_gemini(
        "s-run", GEMINI, _gemini(2, "[[vb:nonconforming]]"), schema=Verdict, max_attempts=2
    )
    for _ in range(10):
        stack.settle()
        summary = run.advance()
        if summary.done:
            break
    assert summary.done and summary.outcomes == {"exhausted": 2}
    assert client.find("s-run.s0.r1") is not None  # the second attempt, with the schema too
    results = list(run.results())
    assert len(results) == 2
    assert all(isinstance(getattr(r.error, "last", None), vb.SchemaError) for r in results)


@pytest.mark.anyio
async def test_aio_takes_a_schema(client: vb.Client, stack: LocalStack) -> None:
    """client.aio's submit takes schema= as the sync one does."""
    job = await client.aio.submit_claude("s-aio", CLAUDE, _claude(1), schema=Verdict)
    stack.wait_job(job.name)
    results = [r async for r in client.aio.results(job)]
    assert results[0].ok and results[0].parsed_as(Verdict).reason


def test_a_request_with_another_schema_is_refused(client: vb.Client, stack: LocalStack) -> None:
    """A request that sets its own tool choice or response schema is refused before any call."""
    choice = _claude(1, tool_choice={"type": "auto"})
    with pytest.raises(vb.InvalidRequestError, match="tool_choice"):
        client.submit_claude("s-own", CLAUDE, choice, schema=Verdict)
    gemini = [vb.GeminiRequest("g0", "Hi", {"response_schema": {"type": "STRING"}})]
    with pytest.raises(vb.InvalidRequestError, match="response_schema"):
        client.submit_gemini("s-own", GEMINI, gemini, schema=Verdict)
    with pytest.raises(vb.InvalidRequestError, match="schema") as caught:
        client.submit_gemini("s-own", GEMINI, _gemini(1), schema={"type": "string"})
    assert caught.value.field == "schema"
    assert client.find("s-own") is None  # nothing was staged
