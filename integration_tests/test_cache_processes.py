"""The answer cache across real processes: two fill one cache at once, then both read it."""

from __future__ import annotations

import pytest

from tests.helpers import CLAUDE, child_processes, jobs_in
from tests.helpers import endpoints as endpoints_of
from vertexbatch._cache.entry import parse_entry
from vertexbatch._requests.dedupe import exact_digest
from vertexbatch._requests.lines import claude_line
from vertexbatch.emulator import LocalStack

from . import _cache_workers, _workers

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_two_processes_fill_and_read_one_cache(stack: LocalStack, bucket: str) -> None:
    """Each process fills its half (and both fill one shared id at once); then each is answered
    whole from the other's entries and its own, with the answers the jobs gave."""
    endpoints = endpoints_of(stack, bucket)
    client = _workers.client(endpoints)
    shared = client.submit_claude(
        "fill-shared", CLAUDE, _cache_workers.requests([8, 9]), cache=True
    )
    stack.wait_job(shared.name)
    ctx = child_processes()
    barrier = ctx.Barrier(2)
    out = ctx.Queue()
    every = list(range(10))
    halves = {"a": [0, 1, 2, 3], "b": [4, 5, 6, 7]}
    procs = [
        ctx.Process(
            target=_cache_workers.fill_then_read,
            args=(endpoints, name, own, every, barrier, out),
        )
        for name, own in halves.items()
    ]
    for p in procs:
        p.start()
    reports = {}
    for _ in procs:
        kind, name, filled, read = out.get(timeout=240)
        assert kind == "ok", filled
        reports[name] = (filled, read)
    for p in procs:
        p.join(timeout=60)
    texts = {key: text for filled, _ in reports.values() for key, (text, _) in filled.items()}
    for name in halves:
        _, read = reports[name]
        assert sorted(read) == [f"k{i}" for i in every]
        assert all(cached for _, cached in read.values()), read
        assert all(read[key][0] == texts[key] for key in texts)
    # Answered whole: no job for either read id.
    assert not [j for j in jobs_in(stack, bucket) if j["displayName"].startswith("read-")]
    for name in halves:
        job = client.find(f"read-{name}")
        assert job is not None and job.name == f"cached:read-{name}"
    # Both processes filled from the shared job at once: the entries they left name exactly its
    # two requests, and both read ids got the answers that job gave.
    shared_texts = {r.key: r.text for r in client.results(shared)}
    for name in halves:
        _, read = reports[name]
        assert {key: read[key][0] for key in shared_texts} == shared_texts
    names = [
        b.name
        for b in stack.storage_client().list_blobs(bucket, prefix="jobs/_cache/")
        if b.name.endswith("-fill-shared.jsonl")
    ]
    digests = set()
    for object_name in names:
        shard = object_name.rsplit("/", 2)[1]
        data = stack.storage_client().bucket(bucket).blob(object_name).download_as_bytes()
        for line in data.splitlines():
            entry = parse_entry(line, CLAUDE, shard)
            assert entry is not None
            digests.add(entry.digest)
    wanted = {exact_digest(claude_line(r).data)[1] for r in _cache_workers.requests([8, 9])}
    assert digests == wanted
