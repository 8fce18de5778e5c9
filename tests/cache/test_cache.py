"""The answer cache against the local stack: fill, lookup, all-cached ids, damage and TTL."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import (
    CLAUDE,
    GEMINI,
    claude_request,
    claude_requests,
    fill_cache,
    jobs_in,
    metered_client,
    object_names,
    request_line,
    write_lines,
)
from vertexbatch._cache.entry import entry_line
from vertexbatch._command.cli import main
from vertexbatch._requests.lines import claude_line
from vertexbatch.emulator import LocalStack


def _requests(n: int = 4, *, extra: tuple[vb.ClaudeRequest, ...] = ()) -> list[vb.ClaudeRequest]:
    return [*claude_requests(n, key="k{i}"), *extra]


def _input_rows(stack: LocalStack, bucket: str, id: str) -> int:
    blob = stack.storage_client().bucket(bucket).blob(f"jobs/{id}/input.jsonl")
    return len(blob.download_as_bytes().splitlines())


def test_second_submission_sends_only_what_the_cache_lacks(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Ok answers fill the cache; a later cache=True id stages only misses, marks the rest."""
    refused = claude_request("no", "Refuse [[vb:refuse]]")
    cut = claude_request("cut", "Cut [[vb:truncate]]")
    first = fill_cache(client, stack, "c1", _requests(extra=(refused, cut)))
    assert not any(r.cached for r in first.values())
    entries = object_names(stack, bucket, "jobs/_cache/anthropic/")
    assert len(entries) >= 1 and all(n.endswith("-c1.jsonl") for n in entries)
    stored = b"".join(
        stack.storage_client().bucket(bucket).blob(n).download_as_bytes() for n in entries
    )
    assert len(stored.splitlines()) == 4  # refusals and truncations are never cached

    second_requests = _requests(extra=(refused, claude_request("new", "A new one.")))
    staged = object_names(stack, bucket, "jobs/")
    plan = client.plan_claude("c2", CLAUDE, second_requests, cache=True)
    assert (plan.requests, plan.cached, plan.to_send, plan.jobs) == (6, 4, 2, 1)
    assert object_names(stack, bucket, "jobs/") == staged  # a plan writes nothing
    second = fill_cache(client, stack, "c2", second_requests)
    assert _input_rows(stack, bucket, "c2") == 2
    assert [k for k, r in sorted(second.items()) if r.cached] == ["k0", "k1", "k2", "k3"]
    for key in ("k0", "k3"):
        assert second[key].ok and second[key].text == first[key].text
        assert second[key].usage == first[key].usage
    assert second["no"].outcome == "refused" and not second["no"].cached
    assert second["new"].ok and not second["new"].cached


def test_all_cached_submission_has_no_job_and_reads_like_any(
    client: vb.Client, stack: LocalStack, bucket: str, tmp_path: Path
) -> None:
    """Every key cached: no Vertex job; find, status, results and the command still work."""
    fill_cache(client, stack, "full-1", _requests())
    before = len(jobs_in(stack, bucket))
    plan = client.plan_claude("full-2", CLAUDE, _requests(), cache=True)
    assert (plan.cached, plan.to_send, plan.jobs, plan.input_tokens) == (4, 0, 0, 0)
    job = client.submit_claude("full-2", CLAUDE, _requests(), cache=True)
    assert len(jobs_in(stack, bucket)) == before
    assert job.name == "cached:full-2" and job.keys == 4
    assert client.find("full-2") == job
    assert client.submit_claude("full-2", CLAUDE, _requests(), cache=True) == job
    status = client.status(job)
    assert status.terminal and status.state == "JOB_STATE_SUCCEEDED" and status.succeeded == 4
    results = list(client.results(job))
    assert sorted(r.key for r in results) == ["k0", "k1", "k2", "k3"]
    assert all(r.ok and r.cached for r in results)
    record = json.loads(
        stack.storage_client().bucket(bucket).blob("jobs/full-2/job.json").download_as_bytes()
    )
    assert record["answered_from_cache"] is True
    client.cancel(job)  # nothing runs: not an error
    again = vb.Job.from_dict(json.loads(json.dumps(job.to_dict())))
    assert [r.key for r in client.results(again)] == [r.key for r in results]
    env = stack.environment(bucket, prefix="jobs")
    runner = CliRunner()
    assert runner.invoke(main, ["find", "full-2"], env=env).exit_code == 0
    assert runner.invoke(main, ["status", "full-2"], env=env).exit_code == 0
    printed = runner.invoke(main, ["results", "full-2"], env=env)
    assert printed.exit_code == 0
    assert all(json.loads(line)["cached"] for line in printed.stdout.splitlines())


def test_a_damaged_entry_is_a_miss_and_a_warning(
    client: vb.Client, stack: LocalStack, bucket: str, caplog: pytest.LogCaptureFixture
) -> None:
    """An entry whose answer no longer hashes to its record is sent again, never answered."""
    fill_cache(client, stack, "d1", _requests(2))
    digest = claude_line(_requests(2)[0]).canonical
    [name] = object_names(stack, bucket, f"jobs/_cache/anthropic/{CLAUDE}/{digest[:2]}/")
    blob = stack.storage_client().bucket(bucket).blob(name)
    damaged = blob.download_as_bytes().replace(b"Local model answer", b"Forged model answer")
    blob.upload_from_string(damaged)
    with caplog.at_level(logging.WARNING, logger="vertexbatch"):
        plan = client.plan_claude("d2", CLAUDE, _requests(2), cache=True)
        results = fill_cache(client, stack, "d2", _requests(2))
    assert plan.cached == 1
    assert "damaged entr" in caplog.text and name in caplog.text
    assert "Forged" not in caplog.text
    assert _input_rows(stack, bucket, "d2") == 1
    assert not results["k0"].cached and results["k0"].text.startswith("Local model answer")
    assert results["k1"].cached


def test_ttl_is_honoured_at_lookup(client: vb.Client, stack: LocalStack, bucket: str) -> None:
    """An entry older than cache_ttl is a miss; younger, a hit."""
    line = claude_line(_requests(1)[0])
    response = {"content": [{"type": "text", "text": "old answer"}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 3, "output_tokens": 2}, "role": "assistant",
                "type": "message"}  # fmt: skip
    hour_ago = int(time.time()) - 3600
    name = f"jobs/_cache/anthropic/{CLAUDE}/{line.canonical[:2]}/{hour_ago:010d}-older.jsonl"
    stack.storage_client().bucket(bucket).blob(name).upload_from_string(
        entry_line(line.canonical, CLAUDE, response, hour_ago)
    )
    fresh = client.plan_claude(
        "t1", CLAUDE, _requests(1), cache=True, cache_ttl=timedelta(minutes=5)
    )
    assert fresh.cached == 0
    old = client.plan_claude("t1", CLAUDE, _requests(1), cache=True, cache_ttl=timedelta(hours=2))
    assert old.cached == 1
    job = client.submit_claude("t1", CLAUDE, _requests(1), cache=True)  # no ttl: any age
    [result] = client.results(job)
    assert result.cached and result.text == "old answer"
    with pytest.raises(vb.InvalidRequestError, match="cache_ttl"):
        client.submit_claude("t2", CLAUDE, _requests(1), cache=True, cache_ttl=timedelta(0))


def test_the_cache_is_keyed_by_model_and_request(client: vb.Client, stack: LocalStack) -> None:
    """Another model, or a request differing in any parameter, is a miss."""
    fill_cache(client, stack, "m1", _requests(1))
    other_model = client.plan_claude("m2", "claude-sonnet-5@default", _requests(1), cache=True)
    assert other_model.cached == 0
    hotter = [vb.ClaudeRequest("k0", {**_requests(1)[0].params, "temperature": 1.0})]
    assert client.plan_claude("m2", CLAUDE, hotter, cache=True).cached == 0
    assert client.plan_claude("m2", CLAUDE, _requests(1), cache=True).cached == 1


def test_without_cache_nothing_is_filled_or_read(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """cache=False neither reads nor fills the cache; switching it on an id is other rows."""
    job = client.submit_claude("n1", CLAUDE, _requests(2))
    stack.wait_job(job.name)
    list(client.results(job))
    assert object_names(stack, bucket, "jobs/_cache/") == []
    with pytest.raises(vb.InvalidRequestError, match="already claimed"):
        client.submit_claude("n1", CLAUDE, _requests(2), cache=True)


def test_a_retry_keeps_the_answers_it_staged(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Submitting a cache=True id again carries on with its staged answers, whatever the cache
    holds now."""
    fill_cache(client, stack, "r0", _requests(1))
    first = client.submit_claude("r1", CLAUDE, _requests(3), cache=True)  # k0 cached
    stack.wait_job(first.name)
    fill_cache(client, stack, "r2", _requests(3))  # now the cache holds k1 and k2 as well
    assert client.submit_claude("r1", CLAUDE, _requests(3), cache=True) == first
    assert _input_rows(stack, bucket, "r1") == 2


DEEP = b"[" * 100_000 + b"]" * 100_000  # past the recursion limit of json.loads


@pytest.mark.parametrize(
    "damage",
    [lambda data: data.replace(b"Local", b"Other"), lambda data: DEEP + b"\n" + data],
    ids=["edited", "nested-too-deeply"],
)
def test_damaged_staged_answers_fail_results(
    client: vb.Client, stack: LocalStack, bucket: str, damage: Callable[[bytes], bytes]
) -> None:
    """A submission's staged cached answers that no longer match its manifest are an error."""
    fill_cache(client, stack, "s0", _requests(2))
    job = client.submit_claude("s1", CLAUDE, _requests(2), cache=True)
    [name] = object_names(stack, bucket, "jobs/s1/cached-")
    blob = stack.storage_client().bucket(bucket).blob(name)
    blob.upload_from_string(damage(blob.download_as_bytes()))
    with pytest.raises(vb.JobError, match="damaged"):
        list(client.results(job))


def test_dedupe_and_cache_together(client: vb.Client, stack: LocalStack, bucket: str) -> None:
    """Repeated requests fill one entry, and each repeat is answered from it later."""
    twice = [claude_request("a", "Same."), claude_request("b", "Same."), claude_request("c", "X.")]
    job = client.submit_claude("dc1", CLAUDE, twice, dedupe=True, cache=True)
    stack.wait_job(job.name)
    assert len(list(client.results(job))) == 3
    again = client.submit_claude("dc2", CLAUDE, twice, dedupe=True, cache=True)
    assert again.name == "cached:dc2"
    results = {r.key: r for r in client.results(again)}
    assert all(r.cached for r in results.values()) and results["a"].text == results["b"].text


def test_gemini_answers_round_trip_through_the_cache(client: vb.Client, stack: LocalStack) -> None:
    """A cached Gemini answer reads back as the same result."""
    requests = [vb.GeminiRequest("g", "Classify this.", {"max_output_tokens": 50})]
    job = client.submit_gemini("gc1", GEMINI, requests, cache=True)
    stack.wait_job(job.name)
    [first] = client.results(job)
    again = client.submit_gemini("gc2", GEMINI, requests, cache=True)
    [cached] = client.results(again)
    assert cached.cached and (cached.text, cached.usage, cached.stop) == (
        first.text,
        first.usage,
        first.stop,
    )


def test_cached_answers_record_no_tokens(stack: LocalStack, bucket: str) -> None:
    """Metrics count a cached result, but not its tokens: nothing was paid."""
    client, reader = metered_client(stack, bucket, "jobs")
    fill_cache(client, stack, "tm0", _requests(2))
    before = reader.get_metrics_data()
    tokens_before = _input_sum(before)
    job = client.submit_claude("tm1", CLAUDE, _requests(2), cache=True)
    assert len(list(client.results(job))) == 2
    assert _input_sum(reader.get_metrics_data()) == tokens_before > 0


def _input_sum(data: object) -> int:
    total = 0
    for rm in data.resource_metrics:  # type: ignore[attr-defined]
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                if m.name == "gen_ai.client.token.usage":
                    for p in m.data.data_points:
                        if p.attributes["gen_ai.token.type"] == "input":
                            total += p.sum
    return total


def test_command_cache(stack: LocalStack, bucket: str, tmp_path: Path) -> None:
    """`submit --cache` and `--dry-run --cache` use the cache."""
    path = write_lines(tmp_path / "in.jsonl", [request_line("a"), request_line("b", "Other")])
    env = stack.environment(bucket, prefix="jobs")
    base = ["submit", "--provider", "claude", "--model", CLAUDE, "--cache"]
    runner = CliRunner()
    assert runner.invoke(main, [*base, "--id", "cc1", str(path)], env=env).exit_code == 0
    client = stack.client(bucket=bucket, prefix="jobs", retry=vb.RetryPolicy.no_wait())
    job = client.find("cc1")
    assert job is not None
    stack.wait_job(job.name)
    assert runner.invoke(main, ["results", "cc1"], env=env).exit_code == 0
    planned = runner.invoke(main, [*base, "--id", "cc2", "--dry-run", "--json", str(path)], env=env)
    assert json.loads(planned.stdout)["cached"] == 2
    done = runner.invoke(main, [*base, "--id", "cc2", "--json", str(path)], env=env)
    assert json.loads(done.stdout)["name"] == "cached:cc2"


def test_run_with_cache(client: vb.Client, stack: LocalStack, bucket: str) -> None:
    """A shard the cache answers whole gets no job; a run's finished results fill the cache."""
    fill_cache(client, stack, "rc0", _requests(2))  # k0, k1 cached
    requests = _requests(4)  # shard 0: k0, k1 (cached); shard 1: k2, k3 (sent)
    run = client.run_claude("rc", CLAUDE, requests, shard_size=2, cache=True)
    created = [j for j in jobs_in(stack, bucket) if j["displayName"].startswith("rc.")]
    assert [j["displayName"] for j in created] == ["rc.s1"]
    stack.settle()
    while not run.advance().done:
        stack.settle()
    results = {r.key: r for r in run.results()}
    assert sorted(results) == ["k0", "k1", "k2", "k3"]
    assert [results[k].cached for k in ("k0", "k1", "k2", "k3")] == [True, True, False, False]
    assert run.status().outcomes == {"ok": 4} and run.status().keys == 4
    rejoined = client.run_claude("rc", CLAUDE, requests, shard_size=2, cache=True)
    assert rejoined.status().done
    assert client.find("rc.s0") is not None and client.find("rc.s0").name == "cached:rc.s0"  # type: ignore[union-attr]
    # The run's own answers (k2, k3) filled the cache: a new id is answered whole.
    assert client.submit_claude("rc-next", CLAUDE, requests, cache=True).name == "cached:rc-next"


def test_command_run_cache(stack: LocalStack, bucket: str, tmp_path: Path) -> None:
    """`run submit --cache` answers a shard the cache holds without a job."""
    client = stack.client(bucket=bucket, prefix="jobs", retry=vb.RetryPolicy.no_wait())
    fill_cache(client, stack, "crc0", [claude_request("a", "Review this diff.")])
    path = write_lines(tmp_path / "in.jsonl", [request_line("a")])
    env = stack.environment(bucket, prefix="jobs")
    args = ["run", "submit", "--provider", "claude", "--model", CLAUDE, "--id", "crc", "--cache"]
    planned = CliRunner().invoke(main, [*args, "--dry-run", "--json", str(path)], env=env)
    assert json.loads(planned.stdout)["jobs"] == 0
    done = CliRunner().invoke(main, [*args, "--json", str(path)], env=env)
    assert done.exit_code == 0, done.output
    assert client.find("crc.s0").name == "cached:crc.s0"  # type: ignore[union-attr]


def test_an_id_answered_whole_has_nothing_to_resubmit(client: vb.Client, stack: LocalStack) -> None:
    """Resubmitting an id answered from the cache says why there is nothing to send."""
    fill_cache(client, stack, "w0", _requests(1))
    job = client.submit_claude("w1", CLAUDE, _requests(1), cache=True)
    with pytest.raises(vb.InvalidRequestError, match="answered from the answer cache"):
        client.resubmit(job)


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda line: line.replace(b"old", b"new"), "the answer no longer hashes to h"),
        (lambda line: line[:-10], "cut short"),
        (lambda line: line.replace(b'"m":"m1"', b'"m":"m2"'), "another model"),
        (lambda line: line.replace(b'"t":5', b'"t":"5"'), "time not a number"),
        (lambda line: line.replace(b'{"d":', b'{ "d":'), "not as written"),
        (lambda line: b"not json", "not an entry at all"),
    ],
)
def test_parse_entry_refuses_damage(damage: object, why: str) -> None:
    """Any change to a written entry makes it unreadable (a miss), whatever the change."""
    from vertexbatch._cache.entry import parse_entry

    digest = "ab" + "0" * 30
    line = entry_line(digest, "m1", {"text": "old answer"}, 5)
    entry = parse_entry(line, "m1", "ab")
    assert (
        entry is not None
        and entry.created == 5
        and json.loads(entry.response) == {"text": "old answer"}
    )
    assert parse_entry(line, "m1", "cd") is None  # filed under another shard
    assert parse_entry(damage(line), "m1", "ab") is None, why  # type: ignore[operator]
