"""The demo's scenario on the live target: submit Claude and Gemini, find, adopt, status,
results, cancel (conftest.py picks real Vertex or the local stack)."""

from __future__ import annotations

import pytest
from google.genai import types as genai_types

import vertexbatch as vb

from .conftest import Target

ENDED = {"JOB_STATE_SUCCEEDED", "JOB_STATE_PARTIALLY_SUCCEEDED"}


def claude_requests() -> list[vb.ClaudeRequest]:
    questions = {
        "capital": "What is the capital of France? Answer in one word.",
        "sum": "What is 2 + 3? Answer with the number only.",
        "colour": "Name one primary colour. Answer in one word.",
    }
    return [
        vb.ClaudeRequest(
            key=key, params={"max_tokens": 64, "messages": [{"role": "user", "content": text}]}
        )
        for key, text in questions.items()
    ]


def gemini_requests() -> list[vb.GeminiRequest]:
    questions = {
        "planet": "Which planet is closest to the sun? Answer in one word.",
        "days": "How many days are in a week? Answer with the number only.",
    }
    config = genai_types.GenerateContentConfig(max_output_tokens=256)
    return [
        vb.GeminiRequest(
            key=key, contents=[{"role": "user", "parts": [{"text": text}]}], config=config
        )
        for key, text in questions.items()
    ]


def check_results(client: vb.Client, job: vb.Job, keys: list[str]) -> None:
    """Every key comes back exactly once; answers carry text and token counts."""
    results = list(client.results(job))
    assert sorted(r.key for r in results) == sorted(keys)
    answers = [r for r in results if r.error is None]
    assert answers, [type(r.error).__name__ for r in results]
    for answer in answers:
        assert answer.text and answer.usage.input > 0 and answer.usage.output > 0


@pytest.mark.processes
def test_submit_find_adopt_status_results(target: Target) -> None:
    """Both providers: submitted, found by id, adopted on resubmission, waited for, read."""
    client = target.client
    review, triage = target.id("review"), target.id("triage")
    claude = client.submit_claude(review, target.claude_model, claude_requests())
    gemini = client.submit_gemini(triage, target.gemini_model, gemini_requests())
    assert (claude.provider, gemini.provider) == ("anthropic", "google")

    assert client.find(review) == claude
    assert client.find(triage) == gemini
    assert client.find(target.id("never-submitted")) is None

    creates = target.stack.calls()["create"] if target.stack else None
    assert client.submit_claude(review, target.claude_model, claude_requests()) == claude
    assert client.submit_gemini(triage, target.gemini_model, gemini_requests()) == gemini
    if target.stack is not None:
        assert target.stack.calls()["create"] == creates  # adopted: no second job

    for job, requests in ((claude, claude_requests()), (gemini, gemini_requests())):
        first = client.status(job)
        assert first.state.startswith("JOB_STATE_")
        final = client.wait(job, floor=target.floor, ceiling=60.0, timeout=target.timeout)
        assert final.terminal and final.state in ENDED, final
        assert final.succeeded + max(final.failed, 0) == len(requests)
        check_results(client, job, [r.key for r in requests])


@pytest.mark.processes
def test_cancel(target: Target) -> None:
    """A job cancelled at once ends CANCELLED (or, cancelled too late, as it ran); every key is
    then either a result or missing, and a second cancel of the ended job is no error."""
    client = target.client
    cancelled = target.id("cancelled")
    if target.stack is not None:  # the stack would finish it at once: hold it, as Vertex queues
        target.stack.faults.hold(cancelled, state="PENDING")
    job = client.submit_claude(cancelled, target.claude_model, claude_requests())
    client.cancel(job)
    final = client.wait(job, floor=target.floor, ceiling=60.0, timeout=target.timeout)
    assert final.terminal
    if target.stack is not None:
        assert final.state == "JOB_STATE_CANCELLED" and final.error_code == 1
    else:
        assert final.state in {"JOB_STATE_CANCELLED", *ENDED, "JOB_STATE_FAILED"}, final
    results = list(client.results(job))
    assert sorted(r.key for r in results) == sorted(r.key for r in claude_requests())
    for result in results:
        assert result.error is None or isinstance(result.error, vb.ResultError | vb.MissingError)
    client.cancel(job)
