"""The answer cache never costs a result, never blocks a retry, never shares a wrong answer."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import Message
from typing import Any
from urllib.parse import unquote

import pytest
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage

import vertexbatch as vb
from tests.gcs_gate import Spoil, body_gate, gate, refusing_writes
from tests.helpers import (
    CLAUDE,
    claude_request,
    claude_requests,
    fill_cache,
    local_client,
    object_names,
    results_filling,
)
from tests.processes import kill_at_write, submit
from vertexbatch._cache.store import COMPACT_MARGIN, AnswerCache
from vertexbatch._gcs.staging import Staging
from vertexbatch.emulator import JobOptions, LocalStack


def _requests(n: int) -> list[vb.ClaudeRequest]:
    return claude_requests(n, key="k{i}")


@contextmanager
def _no_cache_writes(stack: LocalStack, bucket: str) -> Iterator[vb.Client]:
    """A client of a caller without storage.objects.create on ``_cache/`` (GCS answers 403)."""
    with body_gate(stack.storage_endpoint, refusing_writes("/_cache/")) as url:
        yield local_client(stack, bucket, storage_endpoint=url)


def test_a_failing_fill_costs_no_result_and_is_retried(
    client: vb.Client,
    stack: LocalStack,
    bucket: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A cache write refused (403): results yields every key and ends cleanly, with a warning
    naming the id; the next results pass, allowed to write, fills the cache."""
    job = client.submit_claude("ro", CLAUDE, _requests(3), cache=True)
    stack.wait_job(job.name)
    with (
        _no_cache_writes(stack, bucket) as refused,
        caplog.at_level(logging.WARNING, logger="vertexbatch"),
    ):
        for _ in range(2):
            assert sorted(r.key for r in refused.results(job) if r.ok) == ["k0", "k1", "k2"]
    warned = [r.getMessage() for r in caplog.records if "not stored" in r.getMessage()]
    assert len(warned) == 2 and all("id ro" in w and "Forbidden" in w for w in warned)
    assert object_names(stack, bucket, "jobs/_cache/") == []
    assert object_names(stack, bucket, "jobs/ro/cache.filled") == []  # left for a later pass
    list(client.results(job))
    assert object_names(stack, bucket, "jobs/_cache/") != []
    assert client.submit_claude("ro2", CLAUDE, _requests(3), cache=True).name == "cached:ro2"


def test_an_answer_with_a_lone_surrogate_is_cached(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """JSON may escape a lone surrogate, which UTF-8 cannot hold: the entry is written escaped,
    and the answer comes back from the cache as it was."""
    job = client.submit_claude("sg", CLAUDE, _requests(2), cache=True)
    stack.wait_job(job.name)
    store = stack.storage_client().bucket(bucket)
    [out] = [n for n in object_names(stack, bucket, "jobs/sg/output/") if n.endswith(".jsonl")]
    text = store.blob(out).download_as_bytes()
    store.blob(out).upload_from_string(text.replace(b"Local model answer", b"cut \\ud83d", 1))
    first = {r.key: r for r in client.results(job)}
    assert all(r.ok for r in first.values())
    [cut] = [r for r in first.values() if "\ud83d" in (r.text or "")]
    again = client.submit_claude("sg2", CLAUDE, _requests(2), cache=True)
    assert again.name == "cached:sg2"
    second = {r.key: r for r in client.results(again)}
    assert second[cut.key].text == cut.text and second[cut.key].cached


def test_run_steps_never_write_to_the_cache(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """status and advance only read: a fill that would fail cannot stop a run, and a run's
    results pass is what fills the cache."""
    client.run_claude("rf", CLAUDE, _requests(3), cache=True)
    stack.settle()
    with _no_cache_writes(stack, bucket) as refused:
        run = refused.open_run("rf")
        assert run.status().outcomes == {"ok": 3}
        assert run.advance().done
        assert run.status().done
    assert object_names(stack, bucket, "jobs/_cache/") == []
    assert object_names(stack, bucket, "jobs/rf.s0/cache.filled") == []
    assert sorted(r.key for r in client.open_run("rf").results()) == ["k0", "k1", "k2"]
    assert object_names(stack, bucket, "jobs/_cache/") != []


def _submit_killed_before_manifest(
    stack: LocalStack, bucket: str, id: str, requests: list[Any]
) -> None:
    """A cached submit of ``requests`` under ``id`` whose process is killed after staging the
    rows (and the claim), before the manifest."""
    kill_at_write(stack, bucket, f"/{id}/manifest.json", submit, id, requests, {"cache": True})


@pytest.mark.parametrize("change", ["filled", "expired"])
def test_a_retry_after_a_crash_before_the_manifest_carries_on(
    client: vb.Client,
    stack: LocalStack,
    bucket: str,
    change: str,
) -> None:
    """The cache changes between a crash and the retry (more entries, or the hit expired): the
    retry takes the keys the first attempt claimed, stages the same rows and goes on."""
    requests = _requests(4)
    fill_cache(client, stack, "seed", requests[:1])  # k0 cached
    _submit_killed_before_manifest(stack, bucket, "x1", requests)
    assert object_names(stack, bucket, "jobs/x1/manifest.json") == []
    if change == "filled":
        fill_cache(client, stack, "more", requests[1:3])  # now k1 and k2 are cached too
    else:
        for name in object_names(stack, bucket, "jobs/_cache/"):  # a lifecycle rule deleted k0's
            stack.storage_client().bucket(bucket).blob(name).delete()
    job = client.submit_claude("x1", CLAUDE, requests, cache=True)
    stack.wait_job(job.name)
    results = {r.key: r for r in client.results(job)}
    assert [results[f"k{i}"].cached for i in range(4)] == [True, False, False, False]
    assert all(r.ok for r in results.values())
    assert client.submit_claude("x1", CLAUDE, requests, cache=True) == job


def test_a_plan_counts_what_a_crashed_submits_claim_took(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """The cache fills up between a crash before the manifest and a plan: the plan counts the
    keys the id claimed (as the retried submit will), not what the cache holds now, and
    refuses rows the claim does not fit, as submit does."""
    requests = _requests(4)
    fill_cache(client, stack, "seedp", requests[:1])  # k0 cached
    _submit_killed_before_manifest(stack, bucket, "xp", requests)
    fill_cache(client, stack, "morep", requests)  # every request is cached now
    assert client.plan_claude("fresh", CLAUDE, requests, cache=True).cached == 4
    plan = client.plan_claude("xp", CLAUDE, requests, cache=True)
    assert (plan.cached, plan.to_send, plan.jobs) == (1, 3, 1)
    changed = [claude_request("k0", "Something else."), *requests[1:]]
    with pytest.raises(vb.InvalidRequestError, match="already claimed for other rows"):
        client.plan_claude("xp", CLAUDE, changed, cache=True)
    job = client.submit_claude("xp", CLAUDE, requests, cache=True)
    assert job.keys == 4
    stack.wait_job(job.name)
    assert sum(r.cached for r in client.results(job)) == plan.cached


def test_a_claim_for_other_requests_is_refused(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A claimed key whose request changed before the retry is not given the claimed answer."""
    fill_cache(client, stack, "seed2", _requests(1))
    _submit_killed_before_manifest(stack, bucket, "x2", _requests(2))
    changed = [claude_request("k0", "Something else."), _requests(2)[1]]
    with pytest.raises(vb.InvalidRequestError, match="already claimed for other rows") as err:
        client.submit_claude("x2", CLAUDE, changed, cache=True)
    assert "'k0'" in str(err.value)


def test_claimed_answers_nested_too_deeply_are_refused_by_name(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """The answers a crashed submit claimed are damaged (a line nested past json's recursion
    limit): the retry is refused with the object named, not a bare RecursionError."""
    fill_cache(client, stack, "seed3", _requests(1))
    _submit_killed_before_manifest(stack, bucket, "x3", _requests(2))
    [name] = object_names(stack, bucket, "jobs/x3/cached-")
    blob = stack.storage_client().bucket(bucket).blob(name)
    blob.upload_from_string(b"[" * 100_000 + b"]" * 100_000 + b"\n")
    with pytest.raises(vb.InvalidRequestError, match="gone or damaged") as err:
        client.submit_claude("x3", CLAUDE, _requests(2), cache=True)
    assert name in str(err.value)


OTHER_MODEL = "claude-sonnet-4-5@default"


def test_answers_claimed_from_one_models_cache_are_never_staged_for_another(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Vertex refuses the create (the model is not offered here): the id took k0's answer from
    this model's cache. The same rows with another model under the id are refused, by name,
    with nothing staged changed (a plan says so too); under a new id they are asked of that
    model's cache, which holds nothing: no answer of the first model is given."""
    fill_cache(client, stack, "seed-m", _requests(1))
    rows = _requests(2)
    stack.faults.fail("create", status=404, times=10)
    with pytest.raises(vb.InvalidRequestError, match="Vertex refused to create"):
        client.submit_claude("xm", CLAUDE, rows, cache=True)
    stack.faults.reset()
    before = object_names(stack, bucket, "jobs/xm/")
    message = "took 1 answer\\(s\\) from the answer cache of anthropic model 'claude-opus"
    with pytest.raises(vb.InvalidRequestError, match=message) as err:
        client.submit_claude("xm", OTHER_MODEL, rows, cache=True)
    assert err.value.field == "model"
    with pytest.raises(vb.InvalidRequestError, match=message):
        client.plan_claude("xm", OTHER_MODEL, rows, cache=True)
    assert object_names(stack, bucket, "jobs/xm/") == before
    job = client.submit_claude("xm-2", OTHER_MODEL, rows, cache=True)
    stack.wait_job(job.name)
    results = {r.key: r for r in client.results(job)}
    assert not any(r.cached for r in results.values())
    assert {r.response["model"] for r in results.values()} == {OTHER_MODEL}


def test_a_crashed_submits_claim_is_not_taken_with_another_model(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A submit stops after its claim, before its manifest; its retry with another model is
    refused by name, and the retry with the claim's model carries on."""
    fill_cache(client, stack, "seed-n", _requests(1))
    _submit_killed_before_manifest(stack, bucket, "xn", _requests(2))
    with pytest.raises(vb.InvalidRequestError, match="cache of anthropic model 'claude-opus"):
        client.submit_claude("xn", OTHER_MODEL, _requests(2), cache=True)
    job = client.submit_claude("xn", CLAUDE, _requests(2), cache=True)
    stack.wait_job(job.name)
    results = {r.key: r for r in client.results(job)}
    assert results["k0"].cached and not results["k1"].cached


def test_a_row_matched_by_an_echo_other_requests_share_never_fills_the_cache(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Vertex writes rows without ids, so rows are matched by their echoed request. Two of the
    requests echo alike (they differ by a null field, which the echo does not show) and their
    rows come back in the other order: neither answer is cached under a request it may not
    answer. A request whose echo no other shares is cached as usual."""
    stack.set_job_options(JobOptions(echo_siblings=False, shuffle=False), display_name="swap")
    a = _tool_request("a", {"sku": "x", "discount": None})
    b = _tool_request("b", {"sku": "x"})
    c = claude_request("c", "A request of its own.")
    job = client.submit_claude("swap", CLAUDE, [a, b, c], cache=True)
    directory = str(stack.wait_job(job.name)["outputInfo"]["gcsOutputDirectory"])
    blob = (
        stack.storage_client()
        .bucket(bucket)
        .blob(directory.removeprefix(f"gs://{bucket}/") + "/predictions.jsonl")
    )
    rows = blob.download_as_bytes().splitlines()
    assert len(rows) == 3 and all(b"custom_id" not in row for row in rows)
    blob.upload_from_string(b"\n".join([rows[1], rows[0], rows[2]]) + b"\n")
    assert sorted(r.key for r in client.results(job) if r.ok) == ["a", "b", "c"]
    plan = client.plan_claude("later", CLAUDE, [a, b, c], cache=True)
    assert plan.cached == 1  # c only
    again = client.submit_claude("later", CLAUDE, [a, b, c], cache=True)
    stack.wait_job(again.name)
    assert {r.key for r in client.results(again) if r.cached} == {"c"}


def _tool_request(key: str, tool_input: dict[str, Any]) -> vb.ClaudeRequest:
    """A request whose tool_use input differs only by what the canonical digest ignores."""
    messages = [
        {"role": "user", "content": "Price the order."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "price", "input": tool_input}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
        },
    ]
    return vb.ClaudeRequest(key, {"max_tokens": 32, "messages": messages})


PAIRS = [
    ({"sku": "x", "discount": None}, {"sku": "x"}),
    ({"sku": "x", "qty": 2.0}, {"sku": "x", "qty": 2}),
    ({"sku": "x", "tags": []}, {"sku": "x"}),
]


@pytest.mark.parametrize(("one", "other"), PAIRS)
def test_requests_that_differ_only_in_nulls_or_number_form_are_not_shared(
    client: vb.Client, stack: LocalStack, bucket: str, one: dict, other: dict
) -> None:
    """Dedupe stages both; the answer cache holds one and does not answer the other with it."""
    pair = [_tool_request("a", one), _tool_request("b", other)]
    job = client.submit_claude("dd", CLAUDE, pair, dedupe=True)
    blob = stack.storage_client().bucket(bucket).blob("jobs/dd/input.jsonl")
    assert len(blob.download_as_bytes().splitlines()) == 2
    stack.wait_job(job.name)
    assert not any(r.shared for r in client.results(job))
    fill_cache(client, stack, "c1", pair[:1])
    plan = client.plan_claude("c2", CLAUDE, pair, cache=True, dedupe=True)
    assert (plan.distinct, plan.cached, plan.to_send) == (2, 1, 1)
    second = client.submit_claude("c2", CLAUDE, pair, cache=True)
    assert second.name != "cached:c2"
    stack.wait_job(second.name)
    cached = {r.key: r.cached for r in client.results(second)}
    assert cached == {"a": True, "b": False}


def _two_of_four(client: vb.Client, stack: LocalStack, job: vb.Job | None) -> None:
    """Let ``job`` answer two rows, then cancel it: the other two are missing."""
    assert job is not None
    stack.wait_job(
        job.name, until=lambda j: j.get("completionStats", {}).get("successfulCount") == "2"
    )
    client.cancel(job)
    stack.wait_job(job.name)


def test_a_runs_retried_keys_fill_the_cache(client: vb.Client, stack: LocalStack) -> None:
    """Each attempt of a cache=True run fills the cache with its own ok answers."""
    stack.faults.hold(display_name="rr.s0", state="RUNNING", after_rows=2)
    run = client.run_claude("rr", CLAUDE, _requests(4), cache=True)
    _two_of_four(client, stack, client.find("rr.s0"))
    while not run.advance().done:
        stack.settle()
    assert client.find("rr.s0.r1") is not None
    assert sorted(r.key for r in run.results() if r.ok) == ["k0", "k1", "k2", "k3"]
    assert client.plan_claude("rr-next", CLAUDE, _requests(4), cache=True).cached == 4


def test_a_resubmission_of_a_cache_job_fills_the_cache(
    client: vb.Client, stack: LocalStack
) -> None:
    """Client.resubmit carries cache=True: the resubmitted answers fill the cache too."""
    stack.faults.hold(display_name="cs", state="RUNNING", after_rows=2)
    job = client.submit_claude("cs", CLAUDE, _requests(4), cache=True)
    _two_of_four(client, stack, job)
    assert sum(r.ok for r in client.results(job)) == 2
    again = client.resubmit(job)
    stack.wait_job(again.name)
    assert sum(r.ok for r in client.results(again)) == 2
    assert client.plan_claude("cs-next", CLAUDE, _requests(4), cache=True).cached == 4


def test_resubmitting_a_cached_key_is_refused_by_name(client: vb.Client, stack: LocalStack) -> None:
    """A key answered from the cache has nothing to resubmit: the error names it."""
    fill_cache(client, stack, "seed3", _requests(1))
    job = client.submit_claude("pc", CLAUDE, _requests(3), cache=True)
    for keys in (["k0", "k1"], ["k0"]):
        with pytest.raises(vb.InvalidRequestError, match="answered from the answer cache") as err:
            client.resubmit(job, keys=keys)
        assert "'k0'" in str(err.value) and err.value.field == "keys"
    assert client.resubmit(job, keys=["k1"]).keys == 1


@contextmanager
def _recorded(stack: LocalStack, bucket: str) -> Iterator[tuple[Staging, list[str]]]:
    """Staging (prefix ``jobs``) through a gate that records each GCS request's method and path
    (the path's query decoded)."""
    seen: list[str] = []

    def record(method: str, path: str, headers: Message) -> Spoil | None:
        seen.append(f"{method} {unquote(path)}")
        return None

    with gate(stack.storage_endpoint, record) as url:
        client = storage.Client(
            project=stack.project,
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options={"api_endpoint": url},
        )
        yield Staging(client, bucket, "jobs", vb.RetryPolicy.no_wait()), seen


def test_a_lookup_lists_only_its_own_models_folder(stack: LocalStack, bucket: str) -> None:
    """``gemini-3.8-flash`` is a prefix of ``gemini-3.8-flash-lite``: a lookup of the first
    never lists (nor reads) the second's objects."""
    digest = "ab" * 16
    with _recorded(stack, bucket) as (staging, seen):
        AnswerCache(staging, "google", "gemini-3.8-flash-lite").fill("w1", {digest: {"x": 1}})
        seen.clear()
        assert AnswerCache(staging, "google", "gemini-3.8-flash").lookup([digest]) == {}
    listings = [s for s in seen if s.startswith("GET /storage/v1/b/") and "prefix=" in s]
    assert listings and all("gemini-3.8-flash/" in s for s in listings)
    assert not [s for s in seen if "flash-lite" in s]


def test_a_large_fill_is_written_in_parts_of_bounded_size(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A results pass holds at most its buffer of answers (FILL_BUFFER; 600 bytes here, about
    two answers): past it, they are written as a part of their own (``ID.p1``, ...), and every
    answer reaches the cache."""
    job = client.submit_claude("big", CLAUDE, _requests(7), cache=True)
    stack.wait_job(job.name)
    assert sum(r.ok for r in results_filling(client, job, limit=600)) == 7
    names = object_names(stack, bucket, "jobs/_cache/")
    parts: dict[str, int] = {}
    store = stack.storage_client().bucket(bucket)
    for name in names:
        writer = name.rsplit("-", 1)[1]
        parts[writer] = parts.get(writer, 0) + len(
            store.blob(name).download_as_bytes().splitlines()
        )
    # Each part is what was held when the buffer filled: two or three answers, never more.
    assert len(parts) >= 3 and max(parts.values()) <= 3 and sum(parts.values()) == 7
    assert {"big.jsonl", "big.p1.jsonl", "big.p2.jsonl"} <= set(parts)
    assert client.submit_claude("big2", CLAUDE, _requests(7), cache=True).name == "cached:big2"


def test_a_submits_lookup_merges_a_shard_many_jobs_filled(stack: LocalStack, bucket: str) -> None:
    """Twelve fills leave twelve objects in a shard; a lookup that may write (later than the
    margin) merges them into one, after which lookups read it and the newer objects only, and
    find the same answers. A plan's lookup never writes."""
    digests = [f"ab{i:030x}" for i in range(12)]
    with _recorded(stack, bucket) as (staging, seen):
        for i, digest in enumerate(digests):
            AnswerCache(staging, "anthropic", CLAUDE).fill(f"w{i}", {digest: {"n": i}})
        seen.clear()

        def later() -> float:
            return time.time() + COMPACT_MARGIN + 60

        cache = AnswerCache(staging, "anthropic", CLAUDE, clock=later)
        before = cache.lookup(digests)  # may not write: nothing merged
        assert len(before) == 12 and len(_reads(seen)) == 12
        assert not [uri for uri in _reads(seen) if "/merged/" in uri]
        seen.clear()
        assert cache.lookup(digests, compact=True) == before
        cache.fill("w-new", {"ab" + "f" * 30: {"n": 99}})  # a fill after the merge
        seen.clear()
        after = cache.lookup([*digests, "ab" + "f" * 30])
    assert {d: e.response for d, e in after.items() if d in before} == {
        d: e.response for d, e in before.items()
    }
    assert len(after) == 13
    assert len(_reads(seen)) == 2 and sum("/merged/" in uri for uri in _reads(seen)) == 1


def _reads(seen: list[str]) -> list[str]:
    """The objects read (downloaded), one per read: each of these objects is one range."""
    return [s for s in seen if s.startswith("GET /download/")]


def test_two_submitters_of_one_id_take_the_first_claim(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Another submitter of the id claims first (when the cache held nothing): this one finds
    its claim taken, goes on with the other's, and stages every row, as the other does."""
    fill_cache(client, stack, "seed4", _requests(2))  # k0, k1 cached now
    claim = stack.storage_client().bucket(bucket).blob("jobs/two/cache.claim.json")
    other = json.dumps({"cached": 0, "cached_md5": ""}, sort_keys=True, indent=1)
    raced: list[str] = []

    def other_claims_first(method: str, path: str, headers: Message, body: bytes) -> Spoil | None:
        if not raced and method == "POST" and b'/two/cache.claim.json"' in body:
            raced.append(path)  # just before this one's claim reaches GCS, the other's does
            claim.upload_from_string(other, content_type="application/json", if_generation_match=0)
        return None

    with body_gate(stack.storage_endpoint, other_claims_first) as url:
        job = local_client(stack, bucket, storage_endpoint=url).submit_claude(
            "two", CLAUDE, _requests(3), cache=True
        )
    assert raced
    blob = stack.storage_client().bucket(bucket).blob("jobs/two/input.jsonl")
    assert len(blob.download_as_bytes().splitlines()) == 3
    stack.wait_job(job.name)
    assert not any(r.cached for r in client.results(job))
    assert client.submit_claude("two", CLAUDE, _requests(3), cache=True) == job
