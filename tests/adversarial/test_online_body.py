"""The online fallback sends each key's staged body, and writes answers before paying for more.

Issue 1: past the deadline, a request the batch takes (``temperature``, ``anthropic_beta``, a
Gemini field staged under its wire name) must be answered online from the very body that was
staged, never rebuilt through an SDK's typed call that may refuse it. Issue 11: the answers of
each group of calls are written before the next group is paid for, and a later step goes on
from what was written.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import Counter
from datetime import UTC, datetime
from email.message import Message
from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vertexbatch as vb
from tests.gcs_gate import Spoil, body_gate
from tests.helpers import CLAUDE, GEMINI, claude_requests, examples, past, shard_object
from vertexbatch.emulator import LocalStack

_RUNS = itertools.count()


def _late(
    client: vb.Client, stack: LocalStack, run_id: str, requests: list[Any], **options: Any
) -> vb.Run:
    """A run of one shard whose job stays PENDING: past the deadline, every key goes online."""
    stack.faults.hold(display_name=f"{run_id}.s0", state="PENDING")
    if isinstance(requests[0], vb.ClaudeRequest):
        return client.run_claude(run_id, CLAUDE, requests, **options)
    return client.run_gemini(run_id, GEMINI, requests, **options)


def _claude_tasks(n: int) -> list[vb.ClaudeRequest]:
    return claude_requests(n, text="Task {i}", max_tokens=32)


def _staged(stack: LocalStack, bucket: str, run_id: str) -> list[dict[str, Any]]:
    """The shard's staged batch lines, as Vertex reads them."""
    data = shard_object(stack, bucket, run_id, "input.jsonl").download_as_bytes()
    return [json.loads(line) for line in data.splitlines()]


def _parts(stack: LocalStack, bucket: str, run_id: str) -> list[str]:
    blobs = stack.storage_client().list_blobs(bucket, prefix=f"jobs/{run_id}.s0/online/")
    return sorted(blob.name.rsplit("/", 1)[-1] for blob in blobs)


def _canonical(bodies: list[Any]) -> Counter[str]:
    return Counter(json.dumps(body, sort_keys=True) for body in bodies)


def _sent_as_staged(stack: LocalStack, bucket: str, run_id: str, op: str) -> None:
    """Every online call carried exactly one staged line's ``request``, and each line was sent."""
    staged = [line["request"] for line in _staged(stack, bucket, run_id)]
    assert _canonical(stack.received(op)) == _canonical(staged)


# Issue 1: what the batch accepts, the fallback sends as it was staged.


def test_claude_params_no_sdk_keyword_takes_are_answered_online(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """temperature and anthropic_beta (which Vertex reads from the body): every key ok online."""
    requests = [
        vb.ClaudeRequest(
            f"key-{i}",
            {
                "max_tokens": 32,
                "messages": [{"role": "user", "content": f"Task {i}"}],
                "temperature": 0.25,
                "top_k": 5,
                "anthropic_beta": ["output-128k-2025-02-19"],
            },
        )
        for i in range(3)
    ]
    run = _late(client, stack, "claude-params", requests)
    stack.reset_calls()
    summary = run.advance(deadline=past(), fallback="online")
    assert summary.done and summary.outcomes == {"ok": 3}
    assert stack.calls()["rawPredict"] == 3
    _sent_as_staged(stack, bucket, "claude-params", "rawPredict")
    results = {r.key: r for r in run.results()}
    assert sorted(results) == ["key-0", "key-1", "key-2"]
    assert all(r.ok and r.text for r in results.values())
    online = shard_object(stack, bucket, "claude-params", "online.jsonl").download_as_bytes()
    assert len(online.splitlines()) == 3


def test_gemini_wire_named_config_fields_are_answered_online(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """generation_output_config (staged as outputConfig) and camelCase generation fields: every
    key ok online, each sent as staged."""
    from google.genai import types

    config = types.GenerateContentConfig(
        generation_output_config=types.GenerationOutputConfig(output_uri_prefix="gs://x/y"),
        response_mime_type="application/json",
        temperature=0.5,
        thinking_config=types.ThinkingConfig(thinking_budget=128),
        labels={"team": "search"},
    )
    requests = [vb.GeminiRequest(f"key-{i}", f"Classify {i}", config=config) for i in range(2)]
    requests.append(
        vb.GeminiRequest("key-2", "Classify 2", config={"responseMimeType": "text/plain"})
    )
    run = _late(client, stack, "gemini-wire", requests)
    staged = _staged(stack, bucket, "gemini-wire")
    assert "outputConfig" in staged[0]["request"]
    stack.reset_calls()
    summary = run.advance(deadline=past(), fallback="online")
    assert summary.done and summary.outcomes == {"ok": 3}
    assert stack.calls()["generateContent"] == 3
    _sent_as_staged(stack, bucket, "gemini-wire", "generateContent")
    assert all(r.ok and r.text for r in run.results())


@pytest.mark.parametrize("provider", ["anthropic", "google"])
def test_a_service_error_is_the_keys_answer(
    client: vb.Client, stack: LocalStack, provider: str
) -> None:
    """A status the service answers (400) is that key's row; the other keys are answered."""
    if provider == "anthropic":
        requests: list[Any] = _claude_tasks(3)
    else:
        requests = [vb.GeminiRequest(f"key-{i}", f"Task {i}") for i in range(3)]
    op = "rawPredict" if provider == "anthropic" else "generateContent"
    run = _late(client, stack, f"service-error-{provider}", requests)
    stack.faults.fail(op, status=400, times=1)
    summary = run.advance(deadline=past(), fallback="online", online_concurrency=1)
    assert summary.done and summary.outcomes == {"failed": 1, "ok": 2}
    failed = [r for r in run.results() if not r.ok]
    assert len(failed) == 1 and isinstance(failed[0].error, vb.LineError)
    assert failed[0].error.code == 400


def test_a_call_that_cannot_be_built_raises_and_releases_the_claim(
    client: vb.Client, stack: LocalStack, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local failure to make a call (the SDK raising TypeError, as its typed call did for
    temperature) propagates out of advance: no key gets a row, the claim is released, and the
    next step answers every key."""
    from anthropic import AnthropicVertex

    run = _late(client, stack, "local-bug", _claude_tasks(3))

    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("the SDK refused the call")

    stack.reset_calls()
    with monkeypatch.context() as patched:
        patched.setattr(AnthropicVertex, "post", refuse)
        with pytest.raises(TypeError, match="refused"):
            run.advance(deadline=past(), fallback="online")
    assert stack.calls()["rawPredict"] == 0
    assert not shard_object(stack, bucket, "local-bug", "online.jsonl").exists()
    assert _parts(stack, bucket, "local-bug") == []
    claim = json.loads(
        shard_object(stack, bucket, "local-bug", "online.claim.json").download_as_bytes()
    )
    assert datetime.fromisoformat(claim["expires"]) <= datetime.now(UTC)
    summary = run.advance(deadline=past(), fallback="online")
    assert summary.done and summary.outcomes == {"ok": 3}
    assert stack.calls()["rawPredict"] == 3


# The property: for requests drawn over every field staging takes, the body sent is the staged one.

_TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=12
).filter(lambda text: "[[" not in text and text.strip())
_NAME = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True)
_UNIT = st.floats(0.0, 1.0, allow_nan=False)
_BLOCKS = st.lists(
    st.fixed_dictionaries({"type": st.just("text"), "text": _TEXT}), min_size=1, max_size=2
)


@st.composite
def _claude_messages(draw: st.DrawFn) -> list[dict[str, Any]]:
    turns = draw(st.integers(1, 3)) * 2 - 1  # user first and last
    roles = ["user", "assistant"] * 3
    return [{"role": roles[i], "content": draw(_TEXT | _BLOCKS)} for i in range(turns)]


_CLAUDE_TOOL = st.fixed_dictionaries(
    {
        "name": _NAME,
        "description": _TEXT,
        "input_schema": st.fixed_dictionaries(
            {
                "type": st.just("object"),
                "properties": st.dictionaries(
                    _NAME, st.just({"type": "string"}), min_size=1, max_size=2
                ),
            }
        ),
    }
)
_CLAUDE_PARAMS = st.fixed_dictionaries(
    {"max_tokens": st.integers(3, 4096), "messages": _claude_messages()},
    optional={
        "system": _TEXT | _BLOCKS,
        "temperature": _UNIT,
        "top_p": _UNIT,
        "top_k": st.integers(1, 500),
        "stop_sequences": st.lists(_TEXT, min_size=1, max_size=3),
        "tools": st.lists(_CLAUDE_TOOL, min_size=1, max_size=2),
        "tool_choice": st.sampled_from(
            [{"type": "auto"}, {"type": "any"}, {"type": "tool", "name": "lookup"}]
        ),
        "metadata": st.fixed_dictionaries({"user_id": _NAME}),
        "thinking": st.fixed_dictionaries(
            {"type": st.just("enabled"), "budget_tokens": st.integers(1024, 8192)}
        ),
        "anthropic_beta": st.lists(
            st.sampled_from(["output-128k-2025-02-19", "context-1m-2025-08-07"]),
            min_size=1,
            max_size=2,
            unique=True,
        ),
    },
)

_GEMINI_CONTENTS = _TEXT | st.lists(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "model"]),
            "parts": st.lists(st.fixed_dictionaries({"text": _TEXT}), min_size=1, max_size=2),
        }
    ),
    min_size=1,
    max_size=3,
)
_SCHEMA = st.fixed_dictionaries(
    {
        "type": st.just("OBJECT"),
        "properties": st.dictionaries(_NAME, st.just({"type": "STRING"}), min_size=1, max_size=2),
    }
)
_GEMINI_CONFIG = st.fixed_dictionaries(
    {},
    optional={
        "system_instruction": _TEXT,
        "temperature": _UNIT,
        "top_p": _UNIT,
        "top_k": st.integers(1, 100).map(float),
        "max_output_tokens": st.integers(3, 8192),
        "stop_sequences": st.lists(_TEXT, min_size=1, max_size=2),
        "seed": st.integers(0, 2**31 - 1),
        "response_mime_type": st.sampled_from(["application/json", "text/plain"]),
        "response_schema": _SCHEMA,
        "thinking_config": st.fixed_dictionaries(
            {"thinking_budget": st.integers(0, 4096), "include_thoughts": st.booleans()}
        ),
        "labels": st.dictionaries(
            _NAME.filter(lambda name: name != "vertexbatch_key"), _NAME, min_size=1, max_size=2
        ),
        "safety_settings": st.lists(
            st.fixed_dictionaries(
                {
                    "category": st.sampled_from(
                        ["HARM_CATEGORY_HARASSMENT", "HARM_CATEGORY_HATE_SPEECH"]
                    ),
                    "threshold": st.sampled_from(["BLOCK_ONLY_HIGH", "BLOCK_NONE"]),
                }
            ),
            min_size=1,
            max_size=2,
        ),
        "tools": st.lists(
            st.fixed_dictionaries(
                {
                    "function_declarations": st.lists(
                        st.fixed_dictionaries(
                            {"name": _NAME, "description": _TEXT, "parameters": _SCHEMA}
                        ),
                        min_size=1,
                        max_size=2,
                    )
                }
            ),
            min_size=1,
            max_size=1,
        ),
        "tool_config": st.fixed_dictionaries(
            {
                "function_calling_config": st.fixed_dictionaries(
                    {"mode": st.sampled_from(["AUTO", "ANY", "NONE"])}
                )
            }
        ),
        "generation_output_config": st.fixed_dictionaries(
            {"output_uri_prefix": st.just("gs://bucket/out")}
        ),
    },
)

_PROPERTY = settings(
    max_examples=examples(20),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@_PROPERTY
@given(drawn=st.lists(_CLAUDE_PARAMS, min_size=1, max_size=4))
def test_claude_online_bodies_are_the_staged_requests(
    client: vb.Client, stack: LocalStack, bucket: str, drawn: list[dict[str, Any]]
) -> None:
    """Whatever Claude params staging takes, each online call's body is a staged line's request."""
    run_id = f"claude-drawn-{next(_RUNS)}"
    requests = [vb.ClaudeRequest(f"key-{i}", params) for i, params in enumerate(drawn)]
    run = _late(client, stack, run_id, requests)
    stack.reset_calls()
    assert run.advance(deadline=past(), fallback="online").done
    assert stack.calls()["rawPredict"] == len(requests)
    _sent_as_staged(stack, bucket, run_id, "rawPredict")


@_PROPERTY
@given(drawn=st.lists(st.tuples(_GEMINI_CONTENTS, _GEMINI_CONFIG), min_size=1, max_size=4))
def test_gemini_online_bodies_are_the_staged_requests(
    client: vb.Client, stack: LocalStack, bucket: str, drawn: list[tuple[Any, dict[str, Any]]]
) -> None:
    """Whatever Gemini contents and config staging takes, each online call's body is a staged
    line's request (labels, the key's digest among them, included)."""
    run_id = f"gemini-drawn-{next(_RUNS)}"
    requests = [
        vb.GeminiRequest(f"key-{i}", contents, config=config)
        for i, (contents, config) in enumerate(drawn)
    ]
    run = _late(client, stack, run_id, requests)
    stack.reset_calls()
    assert run.advance(deadline=past(), fallback="online").done
    assert stack.calls()["generateContent"] == len(requests)
    _sent_as_staged(stack, bucket, run_id, "generateContent")


# Issue 11: answers paid for are written before more are paid for, and never paid for twice.


def test_a_part_write_that_fails_throughout_costs_only_its_own_group_again(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """The second group's answers cannot be written for the whole retry window: the step
    raises having paid for 4 keys and written 2; the next step calls only the 2 not written."""
    run = _late(client, stack, "part-fails", _claude_tasks(4))
    failing = threading.Event()
    failing.set()

    def second_part_fails(method: str, path: str, headers: Message, body: bytes) -> Spoil | None:
        if failing.is_set() and method == "POST" and b"online/part-00001.jsonl" in body:
            return Spoil(status=503)
        return None

    with body_gate(stack.storage_endpoint, second_part_fails) as url:
        gated = vb.Client.for_endpoints(
            vertex_endpoint=stack.vertex_endpoint,
            storage_endpoint=url,
            project=stack.project,
            location=stack.location,
            bucket=bucket,
            prefix="jobs",
            retry=vb.RetryPolicy.no_wait(),
        )
        stack.reset_calls()
        with pytest.raises(api_exceptions.ServiceUnavailable):
            gated.open_run("part-fails").advance(
                deadline=past(), fallback="online", online_concurrency=2
            )
        assert stack.calls()["rawPredict"] == 4
        assert _parts(stack, bucket, "part-fails") == ["part-00000.jsonl"]
        assert not shard_object(stack, bucket, "part-fails", "online.jsonl").exists()
        failing.clear()
    written = shard_object(
        stack, bucket, "part-fails", "online/part-00000.jsonl"
    ).download_as_bytes()
    digests = {json.loads(row)["custom_id"] for row in written.splitlines()}
    assert len(digests) == 2
    stack.reset_calls()
    summary = run.advance(deadline=past(), fallback="online", online_concurrency=2)
    assert summary.done and summary.outcomes == {"ok": 4}
    assert stack.calls()["rawPredict"] == 2
    unwritten = [
        line["request"]
        for line in _staged(stack, bucket, "part-fails")
        if line["custom_id"] not in digests
    ]
    assert _canonical(stack.received("rawPredict")) == _canonical(unwritten)
    assert Counter(r.key for r in run.results()) == Counter(f"key-{i}" for i in range(4))
    assert all(r.ok for r in run.results())


def test_a_shard_answered_by_the_old_layout_reads_and_is_not_called(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A shard whose answers are one online.jsonl and no parts (as earlier versions wrote it)
    is answered: no call, its rows are the keys' results."""
    run = _late(client, stack, "old-layout", _claude_tasks(3))
    assert run.advance(deadline=past(), fallback="online").done
    for part in _parts(stack, bucket, "old-layout"):
        shard_object(stack, bucket, "old-layout", f"online/{part}").delete()
    shard_object(stack, bucket, "old-layout", "done.json").delete()
    stack.reset_calls()
    summary = run.advance(deadline=past(), fallback="online")
    assert summary.done and summary.outcomes == {"ok": 3}
    assert stack.calls()["rawPredict"] == 0
    assert sorted(r.key for r in run.results() if r.ok) == ["key-0", "key-1", "key-2"]
