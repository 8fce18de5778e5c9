"""A task's share of a GCS prefix's request files: partitioned by bytes, listed once, streamed."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

import vertexbatch as vb
from tests.helpers import jobs_in, put_object, with_staging_sizes
from vertexbatch._runs.shares import byte_shares, share_of
from vertexbatch.emulator import LocalStack

MODEL = "claude-opus-5-5@default"


# The partition (pure)


@pytest.mark.parametrize("seed", range(40))
def test_the_shares_of_n_tasks_partition_the_files_contiguously(seed: int) -> None:
    """Every file in exactly one share, contiguous by name, the same shares from any order."""
    rng = random.Random(seed)
    files = [(f"gs://b/in/part-{i:05d}", rng.choice([0, 1, 10, 1000, 10**6])) for i in range(30)]
    files = files[: rng.randrange(1, 31)]
    count = rng.randrange(1, 12)
    shares = [share_of(files, vb.Task(i, count)) for i in range(count)]
    assert [f for share in shares for f in share] == sorted(files)  # contiguous, each once
    shuffled = rng.sample(files, len(files))
    assert [share_of(shuffled, vb.Task(i, count)) for i in range(count)] == shares


def test_the_shares_are_balanced_by_bytes_not_by_count() -> None:
    """One large file and many small ones: the large file is one task's whole share."""
    files = [("a-big", 1000)] + [(f"b-{i:02d}", 10) for i in range(100)]
    shares = [share_of(files, vb.Task(i, 2)) for i in range(2)]
    assert shares[0] == [("a-big", 1000)]
    assert len(shares[1]) == 100
    assert byte_shares([5, 5, 5, 5], 2) == [0, 0, 1, 1]
    assert byte_shares([0, 0, 0], 2) == [0, 0, 1]  # no bytes at all: by count
    assert byte_shares([10], 3) == [1]  # fewer files than tasks: tasks 0 and 2 get none


def test_share_of_refuses_what_is_not_a_listing() -> None:
    with pytest.raises(vb.InvalidRequestError, match="'gs://b/x' is listed twice"):
        share_of([("gs://b/x", 1), ("gs://b/x", 1)], vb.Task(0, 1))
    with pytest.raises(vb.InvalidRequestError, match="a file is a \\(name, size in bytes\\)"):
        share_of([("gs://b/x", -1)], vb.Task(0, 1))


# Listing and streaming, on the local stack


def _line(i: int) -> bytes:
    params = {"max_tokens": 32, "messages": [{"role": "user", "content": f"Task {i}"}]}
    return json.dumps({"key": f"key-{i}", "params": params}).encode() + b"\n"


def _fill(stack: LocalStack, bucket: str, sizes: list[int]) -> list[str]:
    """Request files in/part-00000.jsonl … of these many lines each; all the keys."""
    keys, n = [], 0
    for number, lines in enumerate(sizes):
        data = b"".join(_line(i) for i in range(n, n + lines))
        keys += [f"key-{i}" for i in range(n, n + lines)]
        n += lines
        put_object(stack, bucket, f"in/part-{number:05d}.jsonl", data)
    return keys


def test_tasks_stage_one_run_from_a_prefix_and_every_key_is_answered_once(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Three tasks each stage their share of five files; the run holds every line once."""
    keys = _fill(stack, bucket, [4, 1, 3, 2, 5])
    put_object(stack, bucket, "in/", b"")  # a folder placeholder is no file
    listed = vb.list_request_files(client, f"gs://{bucket}/in")
    assert [f.uri for f in listed] == [f"gs://{bucket}/in/part-{i:05d}.jsonl" for i in range(5)]
    assert listed.prefix == f"gs://{bucket}/in/" and listed.size == sum(f.size for f in listed)
    tasks = [vb.Task(i, 3) for i in range(3)]
    shares = [listed.share(t) for t in tasks]
    assert Counter(f.uri for s in shares for f in s) == Counter(f.uri for f in listed)
    for t, share in zip(tasks, shares, strict=True):
        run = client.run_claude("files", MODEL, share.claude_requests(), shard_size=3, task=t)
    for _ in range(12):
        stack.settle()
        summary = run.advance()
        if summary.done:
            break
    assert summary.done and summary.outcomes == {"ok": len(keys)}
    assert sorted(r.key for r in run.results()) == sorted(keys)
    # A retried task lists again and gets the same share: it rejoins, staging nothing new.
    again = vb.list_request_files(client, f"gs://{bucket}/in/").share(vb.Task(1, 3, 1))
    assert list(again) == list(shares[1])
    jobs = len(jobs_in(stack, client.bucket))
    client.run_claude("files", MODEL, again.claude_requests(), shard_size=3, task=vb.Task(1, 3, 1))
    assert len(jobs_in(stack, client.bucket)) == jobs


def test_a_task_with_an_empty_share_registers_and_the_run_completes(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Two files, three tasks: one task's share is empty; it registers, and jobs follow."""
    keys = _fill(stack, bucket, [2, 3])
    listed = vb.list_request_files(client, f"gs://{bucket}/in/")
    shares = [listed.share(vb.Task(i, 3)) for i in range(3)]
    empty = [i for i, s in enumerate(shares) if not len(s)]
    assert len(empty) == 1
    for i in sorted(range(3), key=lambda i: i in empty):  # the empty part last
        assert jobs_in(stack, client.bucket) == []
        run = client.run_claude("sparse", MODEL, shares[i].claude_requests(), task=vb.Task(i, 3))
    assert run.keys == len(keys) and jobs_in(stack, client.bucket)
    assert run.status().waiting == ()
    # The empty task retried rejoins its empty part.
    t = vb.Task(empty[0], 3, 1)
    client.run_claude("sparse", MODEL, shares[empty[0]].claude_requests(), task=t)
    # The whole prefix, without a task: the same keys, as one process's run.
    whole = client.run_claude("whole", MODEL, listed.share(None).claude_requests())
    assert whole.keys == len(keys)


def test_an_empty_prefix_is_refused_before_any_job(client: vb.Client, bucket: str) -> None:
    with pytest.raises(vb.InvalidRequestError, match=f"no request files under gs://{bucket}/in/"):
        vb.list_request_files(client, f"gs://{bucket}/in/")
    for bad in ("in/", f"gs://{bucket}", f"gs://{bucket}/"):
        with pytest.raises(vb.InvalidRequestError) as info:
            vb.list_request_files(client, bad)
        assert info.value.field == "uri"
    with pytest.raises(vb.InvalidRequestError, match=r"client must be a vertexbatch\.Client"):
        vb.list_request_files(f"gs://{bucket}/in/", client)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"key": "k", "params": {"secret": 1}', "line 2: not valid JSON"),
        (b'["secret"]', "line 2: expected a JSON object, got list"),
        (
            b'{"key": "k", "extra": "secret", "params": {}}',
            r"line 2: unknown field\(s\) <field 2>:",
        ),
        (b'{"key": "", "params": {}}', "line 2: 'key' must be a non-empty string"),
        (b'{"key": "k", "params": "secret"}', "line 2: 'params' must be an object"),
        (b'{"key": "k", "params": {"x": NaN}}', "line 2: not valid JSON"),
        (b"\xff\xfe secret", "line 2: not UTF-8 text"),
        # Past MAX_DEPTH, shallow enough for json: measured and refused before it is parsed.
        (b'{"key": "k", "params": {"secret": ' + b"[" * 200 + b"]" * 200 + b"}}", "nested too"),
        (b'{"key": "k", "params": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too"),
    ],
)
def test_a_malformed_line_is_named_by_its_file_and_number_never_its_content(
    client: vb.Client, stack: LocalStack, bucket: str, line: bytes, message: str
) -> None:
    put_object(stack, bucket, "in/a.jsonl", _line(0) + _line(1))
    put_object(stack, bucket, "in/b.jsonl", _line(2) + line + b"\n" + _line(3))
    files = vb.list_request_files(client, f"gs://{bucket}/in/")
    with pytest.raises(vb.InvalidRequestError, match=message) as info:
        client.run_claude("bad", MODEL, files.claude_requests())
    assert str(info.value).startswith(f"gs://{bucket}/in/b.jsonl line 2: ")
    assert "secret" not in str(info.value)
    assert jobs_in(stack, client.bucket) == []


def test_a_file_replaced_after_the_listing_is_refused(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    _fill(stack, bucket, [2])
    files = vb.list_request_files(client, f"gs://{bucket}/in/")
    put_object(stack, bucket, "in/part-00000.jsonl", _line(7))
    with pytest.raises(vb.InvalidRequestError, match="was replaced or removed after it was"):
        list(files.claude_requests())


def test_gemini_lines_stream_as_gemini_requests(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    line = {"key": "g-1", "contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    put_object(stack, bucket, "in/g.jsonl", json.dumps(line).encode() + b"\n\n")
    files = vb.list_request_files(client, f"gs://{bucket}/in/")
    assert [r.key for r in files.gemini_requests()] == ["g-1"]
    with pytest.raises(vb.InvalidRequestError, match="line 1: unknown field"):
        list(files.claude_requests())
    with pytest.raises(vb.InvalidRequestError, match="already the share of task 0 of 2"):
        files.share(vb.Task(0, 2)).share(vb.Task(0, 2))


def test_a_plan_of_an_empty_share_is_a_plan_of_nothing(client: vb.Client) -> None:
    """As a run takes an empty part of a task, so does its plan (no request, no job)."""
    plan = client.plan_claude("quiet", MODEL, [], shard_size=10, task=vb.Task(1, 2))
    assert plan.requests == 0 and plan.jobs == 0
    with pytest.raises(vb.InvalidRequestError, match="no requests"):
        client.plan_claude("quiet", MODEL, [], shard_size=10)  # a whole run of none: refused


def test_a_file_is_streamed_a_range_at_a_time_never_held_whole(
    counted: tuple[vb.Client, list[str]], stack: LocalStack, bucket: str
) -> None:
    """The first request of a 200-line file comes after one range read (and one read ahead),
    not after the whole file: a file of any size is never held."""
    client, seen = counted
    with_staging_sizes(client, read_chunk=1024)
    _fill(stack, bucket, [200])  # about 24 KB: two dozen ranges of 1 KiB
    files = vb.list_request_files(client, f"gs://{bucket}/in/")
    seen.clear()
    requests = files.claude_requests()
    assert next(requests).key == "key-0"
    assert len(seen) <= 2, seen
    assert sum(1 for _ in requests) == 199
    assert len(seen) > 20


def _staged_around(
    client: vb.Client, stack: LocalStack, bucket: str, change: str, run_id: str
) -> vb.InvalidRequestError:
    """Task 0 of 3 lists and stages; the prefix changes (``change``); tasks 1 and 2 list and
    stage: the refusal that follows, once no job exists."""
    _fill(stack, bucket, [4, 1, 3, 2, 5])
    first = vb.list_request_files(client, f"gs://{bucket}/in/").share(vb.Task(0, 3))
    client.run_claude(run_id, MODEL, first.claude_requests(), shard_size=3, task=vb.Task(0, 3))
    if change == "written":
        put_object(stack, bucket, "in/part-00001b.jsonl", _line(90) + _line(91))
    else:
        stack.storage_client().bucket(bucket).blob("in/part-00002.jsonl").delete()
    refused = []
    for i in (1, 2):
        share = vb.list_request_files(client, f"gs://{bucket}/in/").share(vb.Task(i, 3))
        with pytest.raises(vb.InvalidRequestError) as info:
            client.run_claude(
                run_id, MODEL, share.claude_requests(), shard_size=3, task=vb.Task(i, 3)
            )
        refused.append(info.value)
    assert jobs_in(stack, client.bucket) == []
    return refused[-1]


@pytest.mark.parametrize("change", ["written", "removed"])
def test_a_prefix_changed_between_the_tasks_listings_is_refused_before_any_job(
    client: vb.Client, stack: LocalStack, bucket: str, change: str
) -> None:
    """A file written (or removed) after task 0 listed and before tasks 1 and 2 did would fall
    in two shares or in none: the run is refused, naming two tasks, and no job is created."""
    error = _staged_around(client, stack, bucket, change, "moved")
    assert "the prefix changed while the tasks listed it: tasks 0 and " in str(error)
    assert "start the run again under a new run id once the prefix holds every file" in str(error)
    with pytest.raises(vb.InvalidRequestError, match="the prefix changed while the tasks"):
        client.open_run("moved").status()
    assert jobs_in(stack, client.bucket) == []


def test_a_retried_task_whose_listing_differs_from_its_first_attempts_is_refused(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    _fill(stack, bucket, [10, 1, 1])  # task 0's share is the first file, before and after
    share = vb.list_request_files(client, f"gs://{bucket}/in/").share(vb.Task(0, 2))
    client.run_claude("again", MODEL, share.claude_requests(), shard_size=3, task=vb.Task(0, 2))
    put_object(stack, bucket, "in/part-00009.jsonl", _line(90))
    retried = vb.list_request_files(client, f"gs://{bucket}/in/").share(vb.Task(0, 2, 1))
    assert list(retried) == list(share)  # the same share, from another listing
    with pytest.raises(vb.InvalidRequestError, match="task 0's first attempt and its retry"):
        client.plan_claude(
            "again", MODEL, retried.claude_requests(), shard_size=3, task=vb.Task(0, 2, 1)
        )
    with pytest.raises(vb.InvalidRequestError, match="task 0's first attempt and its retry"):
        client.run_claude(
            "again", MODEL, retried.claude_requests(), shard_size=3, task=vb.Task(0, 2, 1)
        )
    assert jobs_in(stack, client.bucket) == []
