"""The open-model lane end to end: submit_chat through the real Google clients against the local
stack, each key ending as the one outcome its directive asks for; schema=, resubmission, a run,
client.aio and the command's --provider chat."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import vertexbatch as vb
from tests.helpers import invoke, results_by_key, run_docs_example
from vertexbatch.emulator import LocalStack

MODEL = "meta/llama-3.3-70b-instruct-maas"


def chat(key: str, text: str, **body: Any) -> vb.ChatRequest:
    return vb.ChatRequest(key, {"messages": [{"role": "user", "content": text}], **body})


CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": CITY}}]

# key: (prompt, outcome, stop)
CASES: dict[str, tuple[str, str, str]] = {
    "plain": ("Name a colour.", "ok", "stop"),
    "filtered": ("Do it [[vb:refuse]]", "refused", "content_filter"),
    "refusal": ("Do it [[vb:refuse category=refusal detail=no_thanks]]", "refused", "stop"),
    "truncated": ("Long essay [[vb:truncate]]", "truncated", "length"),
    "empty": ("Nothing [[vb:empty]]", "retryable", "stop"),
    "no-choices": ("Nothing [[vb:no_candidates]]", "retryable", ""),
    "rate-limited": ("Busy [[vb:error 429]]", "retryable", ""),
    "bad-request": ("Bad [[vb:error 400 shape=error_envelope]]", "failed", ""),
    "server": ("Oops [[vb:error 503 shape=status_object]]", "retryable", ""),
    "odd-finish": ("New [[vb:finish eos_token]]", "failed", "eos_token"),
    "cached": ("Think [[vb:cached 4]]", "ok", "stop"),
    "tool": ("Where? [[vb:tool_call]]", "ok", "tool_calls"),
    "dropped": ("Gone [[vb:drop]]", "missing", ""),
}


def test_every_directive_gives_its_outcome(client: vb.Client, stack: LocalStack) -> None:
    requests = [
        chat(k, p, **({"tools": TOOLS} if k == "tool" else {})) for k, (p, _, _) in CASES.items()
    ]
    job = client.submit_chat("chat-all", MODEL, requests)
    assert (job.provider, job.model, job.keys) == ("openmaas", MODEL, len(CASES))
    assert "publishers/meta/models/llama-3.3-70b-instruct-maas" not in job.model
    results = results_by_key(stack, client, job)
    assert set(results) == set(CASES)
    for key, (_, outcome, stop) in CASES.items():
        assert (key, results[key].outcome, results[key].stop) == (key, outcome, stop)
    plain = results["plain"]
    assert plain.text.startswith("Local model answer") and plain.usage.input > 0
    assert plain.usage.output > 0 and plain.response is not None
    assert results["truncated"].text and isinstance(results["truncated"].error, vb.TruncatedError)
    assert results["refusal"].refusal == vb.Refusal(category="refusal", detail="no thanks")
    assert results["cached"].usage.cache_read == 4
    assert [c.name for c in results["tool"].tool_calls] == ["lookup"]
    assert isinstance(results["tool"].tool_calls[0].arguments["city"], str)
    bad = results["bad-request"].error
    assert isinstance(bad, vb.LineError) and (bad.code, bad.transient) == (400, False)
    assert client.find("chat-all") == job


class City(BaseModel):
    city: str
    population: int


def test_a_schema_goes_as_response_format_and_answers_parse(
    client: vb.Client, stack: LocalStack
) -> None:
    requests = [chat("a", "Largest city?"), chat("b", "Smallest? [[vb:nonconforming]]")]
    job = client.submit_chat("chat-schema", MODEL, requests, schema=City)
    stack.wait_job(job.name)
    results = {r.key: r for r in client.results(job, schema=City)}
    assert isinstance(results["a"].parsed, City)
    assert isinstance(results["b"].error, vb.SchemaError)


def test_resubmitting_the_retryable_keys(client: vb.Client, stack: LocalStack) -> None:
    job = client.submit_chat(
        "chat-retry", MODEL, [chat("ok", "Fine."), chat("busy", "Busy [[vb:error 429]]")]
    )
    results_by_key(stack, client, job)
    again = client.resubmit(job)
    assert again is not None and again.provider == "openmaas" and again.keys == 1


def test_bad_bodies_and_models_are_refused_before_any_cloud_call(client: vb.Client) -> None:
    with pytest.raises(vb.InvalidRequestError, match=r"'k'.*sets 'model'"):
        client.submit_chat("chat-bad", MODEL, [vb.ChatRequest("k", {"model": MODEL})])
    with pytest.raises(vb.InvalidRequestError, match="PUBLISHER/MODEL"):
        client.submit_chat("chat-bad", "llama-3.3-70b-instruct-maas", [chat("k", "hi")])
    with pytest.raises(vb.InvalidRequestError, match="count_tokens"):
        client.plan_chat("chat-bad", MODEL, [chat("k", "hi")], count_tokens=True)
    assert client.find("chat-bad") is None


def test_a_plan_and_a_run(client: vb.Client, stack: LocalStack) -> None:
    plan = client.plan_chat("chat-plan", MODEL, [chat("k", "hi", max_tokens=40)])
    assert (plan.provider, plan.to_send, plan.max_output_tokens) == ("openmaas", 1, 40)
    run = client.run_chat("chat-run", MODEL, [chat(f"k{i}", f"Q {i}") for i in range(5)],
                          shard_size=2)  # fmt: skip
    while not run.advance().done:
        for job in stack.jobs():
            stack.wait_job(job["name"])
    assert sorted(r.key for r in run.results() if r.outcome == "ok") == [f"k{i}" for i in range(5)]


def test_client_aio(client: vb.Client, stack: LocalStack) -> None:
    async def go() -> list[vb.Result]:
        job = await client.aio.submit_chat("chat-aio", MODEL, [chat("k", "hi")])
        stack.wait_job(job.name)
        return [r async for r in client.aio.results(job)]

    assert [r.outcome for r in asyncio.run(go())] == ["ok"]


def test_the_command_submits_a_chat_request_file(stack_env: str, tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    line = {"key": "k", "body": {"messages": [{"role": "user", "content": "hi"}]}}
    path.write_text(json.dumps(line) + "\n")
    shown = invoke(
        ["submit", "--id", "chat-cli", "--provider", "chat", "--model", MODEL, str(path)], {}
    )
    assert shown.exit_code == 0, shown.output


@pytest.mark.timeout(120)
def test_the_docs_example_runs_as_written(stack: LocalStack, bucket: str) -> None:
    """docs/examples/open_models.py runs as `python FILE` with the stack's environment."""
    stdout = run_docs_example(stack, bucket, "open_models.py")
    lines = stdout.splitlines()
    assert lines[0] == "3 lines to send"
    assert sorted(line.split(":")[0] for line in lines[1:]) == ["France", "Japan", "Kenya"]
    assert all(": Capital, " in line for line in lines[1:]), lines
