"""Typed results through the real clients against the local stack: ``schema=`` on
``client.results``, ``run.results`` / ``run.key_results`` (a task's share too), ``client.aio``
and ``AsyncRun``, the answer cache; the job's schema or a refusal before any result."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pydantic
import pytest

import vertexbatch as vb
from tests.helpers import advance_until_done, claude_request, read_to_end
from vertexbatch.emulator import LocalStack

CLAUDE = "claude-opus-5-5@default"
GEMINI = "gemini-3.8-flash"
ROOT = Path(__file__).resolve().parents[2]


class Verdict(pydantic.BaseModel):
    """What a reviewer decides about one change."""

    approve: bool
    reason: str
    score: int = pydantic.Field(ge=1, le=5)


class Other(pydantic.BaseModel):
    ok: bool


def _picky(refused: str) -> type[pydantic.BaseModel]:
    """A class with Verdict's JSON schema (its name, docstring and fields: the same digest) and
    a validator the JSON schema cannot state: it refuses one reason."""

    class Verdict(pydantic.BaseModel):
        """What a reviewer decides about one change."""

        approve: bool
        reason: str
        score: int = pydantic.Field(ge=1, le=5)

        @pydantic.field_validator("reason")
        @classmethod
        def _not_refused(cls, value: str) -> str:
            if value == refused:
                raise ValueError("this reason is refused")
            return value

    return Verdict


def _claude(n: int, directive: str = "") -> list[vb.ClaudeRequest]:
    return [claude_request(f"k{i}", f"Review change {i}. {directive}") for i in range(n)]


def _gemini(n: int, directive: str = "") -> list[vb.GeminiRequest]:
    return [vb.GeminiRequest(f"g{i}", f"Classify ticket {i}. {directive}") for i in range(n)]


@pytest.mark.parametrize("provider", ["claude", "gemini"])
def test_results_with_the_class_are_instances(
    client: vb.Client, stack: LocalStack, bucket: str, provider: str
) -> None:
    """With the job's class every ok parsed is an instance; given only the Job, JSON data."""
    if provider == "claude":
        job = client.submit_claude("t-ok", CLAUDE, _claude(3), schema=Verdict)
    else:
        job = client.submit_gemini("t-ok", GEMINI, _gemini(3), schema=Verdict)
    plain = read_to_end(client, stack, job)
    typed = {r.key: r for r in client.results(job, schema=Verdict)}
    assert typed.keys() == plain.keys() and len(typed) == 3
    for key, result in typed.items():
        assert result.ok and isinstance(result.parsed, Verdict)
        assert result.parsed.model_dump() == plain[key].parsed  # the same answer, typed
        assert result.parsed_as(Verdict) is result.parsed
        assert result.text == plain[key].text and result.usage == plain[key].usage
        assert type(plain[key].parsed) is dict
    # A stateless reader given only the Job: JSON data, parsed_as still builds the instance.
    other = stack.client(bucket=bucket, prefix="jobs", retry=vb.RetryPolicy.no_wait())
    stored = vb.Job.from_dict(json.loads(json.dumps(job.to_dict())))
    assert all(type(r.parsed) is dict for r in other.results(stored))
    # The JSON schema itself (a dict) is the same schema: taken, and the answers stay JSON.
    as_dict = list(client.results(job, schema=Verdict.model_json_schema()))
    assert [r.parsed for r in as_dict] == [plain[r.key].parsed for r in as_dict]


def test_a_value_the_class_refuses_is_a_schema_error_and_the_pass_goes_on(
    client: vb.Client, stack: LocalStack
) -> None:
    """A validator beyond the JSON schema refuses one answer: that key is a SchemaError (as an
    answer that breaks the schema is), every other key is still read, typed."""
    job = client.submit_claude("t-picky", CLAUDE, _claude(4, ""), schema=Verdict)
    plain = read_to_end(client, stack, job)
    refused = plain["k1"].parsed["reason"]
    picky = _picky(refused)
    assert picky.model_json_schema() == Verdict.model_json_schema()
    results = {r.key: r for r in client.results(job, schema=picky)}
    assert results.keys() == plain.keys()
    for key, result in results.items():
        if plain[key].parsed["reason"] == refused:
            assert isinstance(result.error, vb.SchemaError), key
            assert result.error.status == "SCHEMA_MISMATCH" and result.error.rule == "value_error"
            assert result.outcome == "retryable" and vb.is_retryable(result.error)
            assert result.parsed is None and result.text == plain[key].text
            assert refused not in str(result.error)
        else:
            assert result.ok and isinstance(result.parsed, picky), key
    assert not results["k1"].ok


def test_another_schema_is_refused_before_any_result(client: vb.Client, stack: LocalStack) -> None:
    """A schema= other than the job's (or one for a job without) is InvalidRequestError on
    ``schema`` as the pass begins, naming both and the rule; one schema= refuses is refused at
    the call."""
    job = client.submit_gemini("t-other", GEMINI, _gemini(2), schema=Verdict)
    bare = client.submit_gemini("t-bare", GEMINI, _gemini(2))
    stack.wait_job(job.name)
    stack.wait_job(bare.name)
    for reading, schema, was in [
        (job, Other, "with Verdict (schema digest"),
        (job, {"type": "object", "properties": {"ok": {"type": "boolean"}}}, "with Verdict"),
        (bare, Verdict, "with no schema"),
    ]:
        results = client.results(reading, schema=schema)
        with pytest.raises(vb.InvalidRequestError) as caught:
            next(results)
        assert caught.value.field == "schema"
        assert was in str(caught.value) and reading.name in str(caught.value)
        assert "takes only the schema a job was submitted with" in str(caught.value)
    with pytest.raises(vb.InvalidRequestError) as caught:
        client.results(job, schema=Verdict(approve=True, reason="x", score=1))  # type: ignore[arg-type]
    assert caught.value.field == "schema"
    # The job's own schema is taken; no schema= is JSON data, as always.
    assert all(isinstance(r.parsed, Verdict) for r in client.results(job, schema=Verdict))
    assert all(r.parsed is None for r in client.results(bare))


def test_cached_answers_are_typed_too(client: vb.Client, stack: LocalStack) -> None:
    """A job the answer cache answered whole reads its answers as the class as well."""
    first = client.submit_gemini("t-c1", GEMINI, _gemini(2), schema=Verdict, cache=True)
    assert len(read_to_end(client, stack, first)) == 2  # read to the end: the cache fills
    again = client.submit_gemini("t-c2", GEMINI, _gemini(2), schema=Verdict, cache=True)
    assert again.name.startswith("cached:")
    results = list(client.results(again, schema=Verdict))
    assert len(results) == 2
    assert all(r.cached and isinstance(r.parsed, Verdict) for r in results)
    with pytest.raises(vb.InvalidRequestError):
        next(client.results(again, schema=Other))


def test_a_runs_results_and_task_shares_are_typed(client: vb.Client, stack: LocalStack) -> None:
    """run.results, run.key_results and each task's share take the run's schema=."""
    run = client.run_claude("t-run", CLAUDE, _claude(5), schema=Verdict, shard_size=2)
    assert len(run.shards) == 3
    advance_until_done(stack, run)
    results = list(run.results(schema=Verdict))
    assert len(results) == 5 and all(isinstance(r.parsed, Verdict) for r in results)
    assert all(type(r.parsed) is dict for r in run.results())
    key_results = list(run.key_results(schema=Verdict))
    assert all(k.outcome == "ok" and isinstance(k.result.parsed, Verdict) for k in key_results)
    shares = [list(run.results(task=vb.Task(i, 2), schema=Verdict)) for i in range(2)]
    assert sorted(r.key for share in shares for r in share) == sorted(r.key for r in results)
    assert all(isinstance(r.parsed, Verdict) for share in shares for r in share)
    reopened = client.open_run("t-run")
    assert all(isinstance(r.parsed, Verdict) for r in reopened.results(schema=Verdict))
    for reader in (run.results, run.key_results):
        with pytest.raises(vb.InvalidRequestError) as caught:
            next(reader(schema=Other))  # type: ignore[operator]
        assert caught.value.field == "schema" and "t-run" in str(caught.value)
    with pytest.raises(vb.InvalidRequestError):
        run.results(schema=42)  # type: ignore[arg-type]


def test_a_runs_refused_value_on_a_finished_shard_is_exhausted(
    client: vb.Client, stack: LocalStack
) -> None:
    """A run's steps hold no class, so they count the answer ok and never retry it; the reader
    whose class refuses it sees its finished shard's key as exhausted, its SchemaError last."""
    run = client.run_gemini("t-run-picky", GEMINI, _gemini(2), schema=Verdict)
    advance_until_done(stack, run)
    plain = {r.key: r for r in run.results()}
    picky = _picky(plain["g0"].parsed["reason"])
    by_key = {k.result.key: k for k in run.key_results(schema=picky)}
    refused = by_key["g0"]
    assert refused.outcome == "exhausted" and isinstance(refused.result.error, vb.ExhaustedError)
    assert isinstance(refused.result.error.last, vb.SchemaError)
    assert refused.result.parsed is None
    if plain["g1"].parsed["reason"] != plain["g0"].parsed["reason"]:
        assert by_key["g1"].outcome == "ok" and isinstance(by_key["g1"].result.parsed, picky)
    assert run.status().outcomes == {"ok": 2}  # the steps count by the JSON schema


@pytest.mark.anyio
async def test_aio_results_are_typed(client: vb.Client, stack: LocalStack) -> None:
    """client.aio.results and AsyncRun's readers take schema= as the blocking ones do."""
    job = await client.aio.submit_claude("t-aio", CLAUDE, _claude(2), schema=Verdict)
    stack.wait_job(job.name)
    results = [r async for r in client.aio.results(job, schema=Verdict)]
    assert len(results) == 2 and all(isinstance(r.parsed, Verdict) for r in results)
    with pytest.raises(vb.InvalidRequestError):
        [r async for r in client.aio.results(job, schema=Other)]
    run = await client.aio.run_gemini("t-aio-run", GEMINI, _gemini(3), schema=Verdict)
    advance_until_done(stack, run.run)
    typed = [r async for r in run.results(task=vb.Task(0, 1), schema=Verdict)]
    assert len(typed) == 3 and all(isinstance(r.parsed, Verdict) for r in typed)
    keyed = [k async for k in run.key_results(schema=Verdict)]
    assert all(isinstance(k.result.parsed, Verdict) for k in keyed)


@pytest.mark.timeout(120)
def test_the_docs_example_runs_as_written(stack: LocalStack, bucket: str) -> None:
    """docs/examples/typed_results.py runs as `python FILE` with the stack's environment."""
    script = ROOT / "docs" / "examples" / "typed_results.py"
    env = {**os.environ, **stack.environment(bucket)}
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=110
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    scored = sorted(re.sub(r"score [1-5], approve (True|False)", "S", line) for line in lines[:3])
    assert scored == [f"change-{i}: S" for i in range(3)]
    assert lines[3:] == ["dict Verdict", "refused (schema): another schema than the job's"]
