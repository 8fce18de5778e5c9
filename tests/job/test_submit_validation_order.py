"""What a submit or a run refuses is refused before any cloud call, or before anything is
written that would block the corrected retry: an empty source, rows over Vertex's limits with
``cache=True``, and a run whose ledger could not be read back."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import (
    CLAUDE,
    GEMINI,
    claude_requests,
    fill_cache,
    object_names,
    with_staging_sizes,
)
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode
from vertexbatch._requests.lines import claude_line
from vertexbatch._rules import DEFAULT_LIMITS, RECORD_MAX, Limits
from vertexbatch._runs.ledger import (
    MAX_ATTEMPTS,
    Ledger,
    Shard,
    ledger_size,
    max_shards,
    read_ledger,
    write_ledger,
)
from vertexbatch.emulator import LocalStack

RUN_ID = "r" * 52  # the longest a run id may be: the most bytes per shard in its ledger


# S4: an empty source with cache=True.


@pytest.mark.parametrize(
    ("submit", "model"),
    [(vb.Client.submit_claude, CLAUDE), (vb.Client.submit_gemini, GEMINI)],
    ids=["claude", "gemini"],
)
def test_empty_source_with_cache_is_refused_before_any_cloud_call(
    counted: tuple[vb.Client, list[str]],
    stack: LocalStack,
    bucket: str,
    submit: Callable[..., vb.Job],
    model: str,
) -> None:
    """No requests with cache=True is 'no requests', with no GCS or Vertex call made."""
    client, seen = counted
    with pytest.raises(vb.InvalidRequestError, match="no requests to submit under id 'empty'"):
        submit(client, "empty", model, [], cache=True)
    assert seen == []
    assert sum(stack.calls().values()) == 0
    assert object_names(stack, bucket, "") == []


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_async_empty_source_with_cache_is_refused_before_any_cloud_call(
    counted: tuple[vb.Client, list[str]], stack: LocalStack
) -> None:
    """The async view refuses an empty cache=True source the same way, calling nothing."""
    client, seen = counted
    with pytest.raises(vb.InvalidRequestError, match="no requests"):
        await client.aio.submit_claude("empty", CLAUDE, iter([]), cache=True)
    assert seen == []
    assert sum(stack.calls().values()) == 0


def test_empty_source_with_cache_leaves_the_cache_on_for_the_id(
    client: vb.Client, stack: LocalStack
) -> None:
    """After an empty cache=True attempt, the id's real submit is still answered from the cache."""
    requests = claude_requests(3)
    fill_cache(client, stack, "filler", requests)
    with pytest.raises(vb.InvalidRequestError, match="no requests"):
        client.submit_claude("later", CLAUDE, [], cache=True)
    stack.reset_calls()
    job = client.submit_claude("later", CLAUDE, requests, cache=True)
    assert job.name == "cached:later"
    assert stack.calls()["create"] == 0


# S5: rows over Vertex's limits with cache=True.


def test_rows_over_the_limit_with_cache_leave_nothing_and_the_fix_goes_through(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Too many rows left to stage (after the cache's) fail as staging would, before the cached
    answers or the claim are written; the corrected rows then submit under the same id."""
    cached = claude_requests(3)
    fill_cache(client, stack, "filler", cached)
    fresh = claude_requests(3, start=3)
    with_staging_sizes(client, limits=Limits(rows=2))  # the real limit is 200,000
    stack.reset_calls()
    with pytest.raises(vb.InvalidRequestError, match="more than 2 requests for one job"):
        client.submit_claude("over", CLAUDE, cached + fresh, cache=True)
    assert object_names(stack, bucket, "jobs/over/") == []
    assert stack.calls()["create"] == 0
    job = client.submit_claude("over", CLAUDE, cached + fresh[:2], cache=True)
    assert job.keys == 5
    stack.wait_job(job.name)
    results = {r.key: r for r in client.results(job)}
    assert sorted(results) == [f"key-{i}" for i in range(5)]
    assert [key for key, r in sorted(results.items()) if r.cached] == ["key-0", "key-1", "key-2"]


def test_bytes_over_the_limit_with_cache_leave_nothing(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Too many bytes left to stage fail with staging's message, naming the request where the
    limit was passed, before anything is written; fewer rows then submit under the same id."""
    cached = claude_requests(2)
    fill_cache(client, stack, "filler", cached)
    fresh = claude_requests(3, start=2)
    sizes = [len(claude_line(request).data) for request in fresh]
    # Room for the first two fresh rows, not the third (the real limit is 1 GB).
    with_staging_sizes(client, limits=Limits(input_bytes=sum(sizes) - 1))
    with pytest.raises(vb.InvalidRequestError, match="at request 'key-4'"):
        client.submit_claude("big", CLAUDE, cached + fresh, cache=True)
    assert object_names(stack, bucket, "jobs/big/") == []
    job = client.submit_claude("big", CLAUDE, cached + fresh[:2], cache=True)
    assert job.keys == 4


def test_rows_over_the_limit_without_cache_leave_nothing(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Without the cache, too many rows fail while staging streams them: nothing is left, and
    the corrected rows then submit under the same id."""
    with_staging_sizes(client, limits=Limits(rows=2))
    with pytest.raises(vb.InvalidRequestError, match="more than 2 requests for one job"):
        client.submit_claude("plain", CLAUDE, claude_requests(3))
    assert object_names(stack, bucket, "jobs/plain/") == []
    assert client.submit_claude("plain", CLAUDE, claude_requests(2)).keys == 2


# S6: a run whose ledger would be too big to read back.


@pytest.mark.parametrize("run_id", [RUN_ID, "ab"])
@pytest.mark.parametrize("shards", [1, 2, 9, 10, 11, 101, 1_234])
@pytest.mark.parametrize("keys", [1, 7, 200_000])
def test_ledger_size_is_the_size_written(run_id: str, shards: int, keys: int) -> None:
    """``ledger_size`` is the byte count of the ledger's JSON when every shard is full, and an
    upper bound when they are not."""
    ledger = Ledger(
        run_id,
        "anthropic",
        CLAUDE,
        3,
        tuple(Shard(f"{run_id}.s{i}", keys) for i in range(shards)),
    )
    written = json.dumps(ledger.to_json(), sort_keys=True, indent=1).encode("utf-8")
    assert ledger_size(run_id, "anthropic", CLAUDE, 3, shards, keys) == len(written)
    fewer = Ledger(run_id, "anthropic", CLAUDE, 3, tuple(Shard(s.id, 1) for s in ledger.shards))
    assert len(json.dumps(fewer.to_json(), sort_keys=True, indent=1)) <= len(written)


def test_max_shards_is_the_edge(client: vb.Client, stack: LocalStack, bucket: str) -> None:
    """A ledger of ``max_shards`` shards is at most RECORD_MAX and reads back; one more is over,
    and ``write_ledger`` refuses it without writing anything."""
    most = max_shards(RUN_ID, "anthropic", CLAUDE, 3, 1, DEFAULT_LIMITS)
    assert ledger_size(RUN_ID, "anthropic", CLAUDE, 3, most, 1) <= RECORD_MAX
    assert ledger_size(RUN_ID, "anthropic", CLAUDE, 3, most + 1, 1) > RECORD_MAX
    staging = client._cloud.staging
    fits = Ledger(
        RUN_ID, "anthropic", CLAUDE, 3, tuple(Shard(f"{RUN_ID}.s{i}", 1) for i in range(most))
    )
    assert write_ledger(staging, fits)
    blob = stack.storage_client().bucket(bucket).get_blob(f"jobs/{RUN_ID}/run.json")
    assert blob is not None
    assert blob.size == ledger_size(RUN_ID, "anthropic", CLAUDE, 3, most, 1)
    assert read_ledger(staging, RUN_ID) == fits
    over = Ledger(
        "s" * 52,
        "anthropic",
        CLAUDE,
        3,
        tuple(Shard(f"{'s' * 52}.s{i}", 1) for i in range(most + 1)),
    )
    with pytest.raises(vb.InvalidRequestError, match=f"{most + 1:,} shards: .* over the 4,194,304"):
        write_ledger(staging, over)
    assert object_names(stack, bucket, f"jobs/{'s' * 52}/") == []


def test_run_of_too_many_shards_is_refused_before_any_cloud_call(
    counted: tuple[vb.Client, list[str]], stack: LocalStack, bucket: str
) -> None:
    """A list of requests that makes more shards than a ledger can hold is refused with the
    numbers and the rule, before any GCS or Vertex call."""
    client, seen = counted
    most = max_shards(RUN_ID, "anthropic", CLAUDE, 3, 1, DEFAULT_LIMITS)
    requests = claude_requests(most + 1)
    with pytest.raises(vb.InvalidRequestError) as raised:
        client.run_claude(RUN_ID, CLAUDE, requests, shard_size=1)
    message = str(raised.value)
    assert f"{most + 1:,} requests in shards of 1 make at least {most + 1:,} shards" in message
    assert "over the 4,194,304 a ledger may be" in message
    assert f"at most {most:,} shards under this run id with shard_size=1" in message
    assert "use a larger shard_size" in message
    assert raised.value.field == "shard_size"
    assert seen == []
    assert sum(stack.calls().values()) == 0


@pytest.mark.parametrize("shard_size", [None, 2])
def test_a_plan_of_no_requests_is_refused_as_submit_and_run_refuse_it(
    counted: tuple[vb.Client, list[str]], stack: LocalStack, shard_size: int | None
) -> None:
    client, seen = counted
    with pytest.raises(vb.InvalidRequestError, match="no requests to submit under id 'e1'"):
        client.plan_claude("e1", CLAUDE, [], shard_size=shard_size)
    with pytest.raises(vb.InvalidRequestError, match="no requests"):
        client.submit_claude("e1", CLAUDE, [])
    assert seen == []
    assert sum(stack.calls().values()) == 0


def test_a_dry_run_of_an_empty_file_exits_as_the_submit_does(
    stack: LocalStack, bucket: str, tmp_path: Path
) -> None:
    """``submit --dry-run`` of an empty file: exit 3 and the message, as ``submit`` gives."""
    env = stack.environment(bucket, prefix="jobs")
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    args = ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "e2", str(empty)]
    submit = CliRunner().invoke(main, args, env=env)
    dry = CliRunner().invoke(main, [*args[:-1], "--dry-run", args[-1]], env=env)
    assert (submit.exit_code, dry.exit_code) == (
        ExitCode.INVALID_REQUEST,
        ExitCode.INVALID_REQUEST,
    ), dry.output
    assert "no requests to submit under id 'e2'" in dry.output


def test_a_plan_of_a_run_refuses_what_the_run_refuses_before_any_cloud_call(
    counted: tuple[vb.Client, list[str]], stack: LocalStack
) -> None:
    """plan_claude with shard_size is held to run_claude's rules: a ledger too big to read back,
    a run id too long for its shard and attempt suffixes; no GCS or Vertex call."""
    client, seen = counted
    most = max_shards(RUN_ID, "anthropic", CLAUDE, MAX_ATTEMPTS, 1, DEFAULT_LIMITS)
    with pytest.raises(vb.InvalidRequestError, match="over the 4,194,304 a ledger may be") as err:
        client.plan_claude(RUN_ID, CLAUDE, claude_requests(most + 1), shard_size=1)
    assert err.value.field == "shard_size"
    with pytest.raises(vb.InvalidRequestError) as err:
        client.plan_claude("r" * 60, CLAUDE, claude_requests(2), shard_size=1)
    with pytest.raises(vb.InvalidRequestError) as same:
        client.run_claude("r" * 60, CLAUDE, claude_requests(2), shard_size=1)
    assert str(err.value) == str(same.value)
    assert seen == []
    assert sum(stack.calls().values()) == 0
    plan = client.plan_claude(RUN_ID, CLAUDE, claude_requests(most), shard_size=1)
    assert plan.jobs == most


def test_run_over_the_ledger_limit_then_a_larger_shard_size_goes_through(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Refused for its ledger, a run leaves nothing: the same run id with a larger shard size
    then starts and finishes."""
    # A ledger of five shards at most, not 4 MiB's (about 44,700 shards of one request).
    small = Limits(record_bytes=ledger_size(RUN_ID, "anthropic", CLAUDE, 3, 5, 1))
    with_staging_sizes(client, limits=small)
    requests = claude_requests(12)
    with pytest.raises(vb.InvalidRequestError, match="12 requests in shards of 1 make at least"):
        client.run_claude(RUN_ID, CLAUDE, requests, shard_size=1)
    assert object_names(stack, bucket, "") == []
    assert stack.calls()["create"] == 0
    run = client.run_claude(RUN_ID, CLAUDE, requests, shard_size=6)
    assert [shard.keys for shard in run.shards] == [6, 6]
    for _ in range(10):
        stack.settle()
        if run.advance().done:
            break
    outcomes = {r.key: r.outcome for r in run.results()}
    assert outcomes == {r.key: "ok" for r in requests}


def test_streamed_run_over_the_ledger_limit_creates_no_job(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Requests streamed from a generator are refused once the shard the ledger cannot hold is
    cut: before it is staged, before the ledger, and before any job."""
    small = Limits(record_bytes=ledger_size(RUN_ID, "anthropic", CLAUDE, 3, 5, 1))
    with_staging_sizes(client, limits=small)
    most = max_shards(RUN_ID, "anthropic", CLAUDE, 3, 1, small)
    assert most == 5
    with pytest.raises(vb.InvalidRequestError) as raised:
        client.run_claude(RUN_ID, CLAUDE, iter(claude_requests(12)), shard_size=1)
    message = str(raised.value)
    assert f"more than {most:,} shards" in message and "a new run id" in message
    assert stack.calls()["create"] == 0
    staged = {name.split("/")[1] for name in object_names(stack, bucket, "jobs/")}
    assert staged == {f"{RUN_ID}.s{i}" for i in range(most)}  # no run.json under the run id
