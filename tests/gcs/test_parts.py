"""The input and key map staged as parts: each create-only in one request, read back in order.

Parts are small here (``part_size``), so a few requests cross several part ends; the writer is
the one ``submit`` uses, against the real storage client and fake-gcs-server.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterator
from dataclasses import replace

import pytest
from google.api_core import exceptions as api_exceptions

import vertexbatch as vb
from tests.gcs_gate import body_gate, refusing_writes
from tests.helpers import claude_request, local_client, with_staging_sizes
from vertexbatch._gcs.parts import PartedUpload, part_leaf
from vertexbatch._gcs.staging import Staging
from vertexbatch._staged.manifest import Manifest, read_manifest
from vertexbatch.emulator import LocalStack

MODEL = "claude-opus-5-5@default"
PART = 4096  # bytes a part: a request line here is ~300 bytes
JSONL = "application/jsonl"
_LATER = re.compile(r"(input|keys)-\d{5}-[0-9a-f]{32}\.jsonl")  # a part after part 0


def _requests(n: int, text: str = "Review diff {i}.") -> list[vb.ClaudeRequest]:
    return [claude_request(f"k{i:03d}", text.format(i=i) + " pad" * 40) for i in range(n)]


def _client(stack: LocalStack, bucket: str, endpoint: str | None = None) -> vb.Client:
    client = local_client(stack, bucket, storage_endpoint=endpoint)
    return with_staging_sizes(client, part_size=PART)


def _staging(stack: LocalStack, bucket: str) -> Staging:
    return Staging(stack.storage_client(), bucket, "jobs", vb.RetryPolicy.no_wait())


def _names(stack: LocalStack, bucket: str, submission_id: str) -> list[str]:
    prefix = f"jobs/{submission_id}/"
    blobs = stack.storage_client().list_blobs(bucket, prefix=prefix)
    return sorted(b.name[len(prefix) :] for b in blobs if "/output/" not in b.name)


def _generations(stack: LocalStack, bucket: str, submission_id: str) -> dict[str, int]:
    """The id's staged objects (not its output): name in the folder -> generation."""
    prefix = f"jobs/{submission_id}/"
    blobs = stack.storage_client().list_blobs(bucket, prefix=prefix)
    return {
        b.name[len(prefix) :]: int(b.generation or 0) for b in blobs if "/output/" not in b.name
    }


def _manifest(stack: LocalStack, bucket: str, submission_id: str) -> Manifest:
    manifest = read_manifest(_staging(stack, bucket), submission_id)
    assert manifest is not None
    return manifest


def test_a_large_input_is_parts_read_back_in_order(stack: LocalStack, bucket: str) -> None:
    """Every part is named in the manifest and the job (in order); the job answers every key,
    and a resubmission reads the staged lines back in order from every part."""
    client = _client(stack, bucket)
    requests = _requests(60)
    job = client.submit_claude("many", MODEL, requests)
    manifest = _manifest(stack, bucket, "many")
    assert len(manifest.input_parts) >= 4 and len(manifest.key_parts) >= 2
    leaves = [part_leaf("input", i, md5) for i, md5 in enumerate(manifest.input_parts)]
    assert leaves[0] == "input.jsonl"
    names = _names(stack, bucket, "many")
    assert set(leaves) <= set(names)
    (created,) = [j for j in stack.jobs() if j["displayName"] == "many"]
    assert created["inputConfig"]["gcsSource"]["uris"] == [
        f"gs://{bucket}/jobs/many/{leaf}" for leaf in leaves
    ]
    store = stack.storage_client().bucket(bucket)
    parts = [store.blob(f"jobs/many/{leaf}").download_as_bytes() for leaf in leaves]
    assert all(len(part) <= PART and part.endswith(b"\n") for part in parts)  # whole lines
    assert hashlib.md5(b"".join(parts)).hexdigest() == manifest.md5
    assert [hashlib.md5(part).hexdigest() for part in parts] == list(manifest.input_parts)
    stack.wait_job(job.name)
    assert sorted(r.key for r in client.results(job)) == [r.key for r in requests]
    again = client.resubmit(job, keys=[r.key for r in requests[::7]], id="many.r")
    stack.wait_job(again.name)
    assert sorted(r.key for r in client.results(again)) == [r.key for r in requests[::7]]
    assert client.submit_claude("many", MODEL, requests) == job  # the same job, adopted


@pytest.mark.parametrize("size", [100, 9 * 1024 * 1024 + 17])  # one request; past 8 MiB
def test_every_part_is_create_only(stack: LocalStack, bucket: str, size: int) -> None:
    """A second writer of other bytes is told part 0 exists (a conflict, naming its MD5) and
    replaces no byte, at every size (the default part size: each part one request, where
    fake-gcs-server enforces create-only); the same bytes again adopt every part."""
    staging = _staging(stack, bucket)
    folder = staging.folder("co")
    line = b'{"a": "' + b"x" * 1000 + b'"}\n'
    data = line * (size // len(line) + 1)
    other = b'{"b' + data[3:]  # the first line differs

    def upload(data: bytes) -> PartedUpload:
        parts = PartedUpload(staging, folder, "input", JSONL)
        for at in range(0, len(data), len(line)):
            parts.write(data[at : at + len(line)])
        parts.finish()
        return parts

    first = upload(data)
    md5s = first.md5s()
    assert first.conflict is None and first.created == len(md5s) == (2 if size > 100 else 1)
    before = {n: staging.md5(f"jobs/co/{n}") for n in _names(stack, bucket, "co")}
    second = upload(other)
    assert second.conflict is not None and second.conflict.index == 0
    assert second.conflict.existing == md5s[0]
    after = {n: staging.md5(f"jobs/co/{n}") for n in _names(stack, bucket, "co")}
    assert {n: after[n] for n in before} == before  # every byte of the first stays
    adopted = upload(data)
    assert adopted.md5s() == md5s and adopted.conflict is None and adopted.created == 0
    if len(md5s) > 1:  # a later part of other bytes has a name of its own: nothing is replaced
        tail = upload(data[:-2] + b"y\n")
        assert tail.conflict is None and tail.md5s()[0] == md5s[0] and tail.created == 1
        assert {n: staging.md5(f"jobs/co/{n}") for n in before} == before


def test_a_crash_before_part_0_leaves_later_parts_a_retry_adopts(
    stack: LocalStack, bucket: str
) -> None:
    """A later part refused for good (the storage layer raises) fails the submit before part 0
    is written: no part 0, manifest or job, no thread left, only later parts named by their
    bytes. The same rows again adopt every one of them (its generation unchanged) and create
    the rest, part 0 last; the job answers every key."""
    requests = _requests(60)
    before = set(threading.enumerate())
    refusing = body_gate(stack.storage_endpoint, refusing_writes("input-00003-"))
    with refusing as url, pytest.raises(api_exceptions.Forbidden):
        _client(stack, bucket, url).submit_claude("midway", MODEL, requests)
    left = set(threading.enumerate()) - before
    assert not any(t.name.startswith(("vertexbatch-part", "vertexbatch-hash")) for t in left)
    crashed = _generations(stack, bucket, "midway")
    assert any(n.startswith("input-00001-") for n in crashed), crashed
    assert all(_LATER.fullmatch(n) for n in crashed), crashed  # no part 0, no manifest
    assert stack.calls()["create"] == 0
    client = _client(stack, bucket)
    job = client.submit_claude("midway", MODEL, requests)
    retried = _generations(stack, bucket, "midway")
    adopted = {n for n in crashed if retried.get(n) == crashed[n]}
    created = set(retried) - set(crashed)
    manifest = _manifest(stack, bucket, "midway")
    parts = {part_leaf("input", i, md5) for i, md5 in enumerate(manifest.input_parts)}
    parts |= {part_leaf("keys", i, md5) for i, md5 in enumerate(manifest.key_parts)}
    assert adopted == set(crashed) <= parts  # each one a part of the rows, not rewritten
    assert created == parts - adopted | {"manifest.json", "job.json"}, (created, adopted)
    assert {"input.jsonl", "keys.jsonl"} <= created
    assert any(n.startswith("input-00003-") for n in created)
    stack.wait_job(job.name)
    assert sorted(r.key for r in client.results(job)) == [r.key for r in requests]


def test_a_bad_line_past_the_first_part_leaves_no_part_0(stack: LocalStack, bucket: str) -> None:
    """Rows refused as they stream (a repeated key, several parts in) never wrote part 0: only
    later parts named by their bytes are left, and none is deleted. The rows mended (their
    first part other bytes) are staged under the same id and give its one job."""
    bad = vb.ClaudeRequest("k000", {"max_tokens": 1, "messages": []})  # a repeated key
    with pytest.raises(vb.InvalidRequestError, match="appears twice"):
        _client(stack, bucket).submit_claude("mend", MODEL, iter([*_requests(60), bad]))
    refused = _generations(stack, bucket, "mend")
    assert any(n.startswith("input-00001-") for n in refused), refused
    assert all(_LATER.fullmatch(n) for n in refused), refused  # no part 0, no manifest
    mended = _requests(60, "Mended {i}.")
    client = _client(stack, bucket)
    job = client.submit_claude("mend", MODEL, mended)
    assert job.keys == 60
    after = _generations(stack, bucket, "mend")
    assert {n: after.get(n) for n in refused} == refused  # left alone, never deleted
    assert [j["name"] for j in stack.jobs() if j["displayName"] == "mend"] == [job.name]
    stack.wait_job(job.name)
    assert sorted(r.key for r in client.results(job)) == [r.key for r in mended]


def test_rows_refused_midway_take_no_part_another_submitter_adopted(
    stack: LocalStack, bucket: str
) -> None:
    """The race deleting parts lost. Submitter A streams B's rows and more, then a bad line;
    while A waits before that line (every part wholly of B's rows written), B stages its rows
    and adopts the parts A wrote. A is refused, and B's job reads every part it names."""
    shared = _requests(60)
    more = [claude_request(f"x{i:03d}", f"More {i}." + " pad" * 40) for i in range(40)]
    bad = vb.ClaudeRequest("k000", {"max_tokens": 1, "messages": []})  # a repeated key
    stack.faults.hold(display_name="shared", state="PENDING")
    reached, go = threading.Event(), threading.Event()
    refused: list[Exception] = []

    def rows_of_a() -> Iterator[vb.ClaudeRequest]:
        yield from shared
        yield from more  # three parts more: the parts of ``shared`` alone are written
        reached.set()
        go.wait(120)
        yield bad

    def submit_a() -> None:
        try:
            _client(stack, bucket).submit_claude("shared", MODEL, rows_of_a())
        except vb.InvalidRequestError as exc:
            refused.append(exc)

    a = threading.Thread(target=submit_a, name="submitter-a")
    a.start()
    try:
        assert reached.wait(120)
        by_a = _generations(stack, bucket, "shared")
        client = _client(stack, bucket)
        job = client.submit_claude("shared", MODEL, shared)  # B
    finally:
        go.set()
        a.join(120)
    assert len(refused) == 1 and "appears twice" in str(refused[0])
    manifest = _manifest(stack, bucket, "shared")
    leaves = [part_leaf("input", i, md5) for i, md5 in enumerate(manifest.input_parts)]
    assert len(set(leaves) & set(by_a)) >= 2, (leaves, by_a)  # B adopted A's parts
    (created,) = [j for j in stack.jobs() if j["displayName"] == "shared"]
    uris = created["inputConfig"]["gcsSource"]["uris"]
    assert uris == [f"gs://{bucket}/jobs/shared/{leaf}" for leaf in leaves]
    after = _generations(stack, bucket, "shared")
    assert all(leaf in after for leaf in leaves), (leaves, after)  # none deleted by A
    stack.faults.release("shared")
    stack.wait_job(job.name)
    assert sorted(r.key for r in client.results(job)) == [r.key for r in shared]


def test_a_job_reading_only_the_first_part_is_not_the_ids(stack: LocalStack, bucket: str) -> None:
    """A job of the id that reads part 0 alone (or the parts out of order) would miss or
    mislabel keys: it does not read the id's input. With the parts unknown (a run's listing),
    the first part and the folder identify it; an older version's one input.jsonl still does."""
    from google.cloud import aiplatform_v1

    from vertexbatch._vertex.jobs import reads_input

    client = _client(stack, bucket)
    client.submit_claude("shape", MODEL, _requests(30))
    spec = _manifest(stack, bucket, "shape").spec("shape", _staging(stack, bucket).folder("shape"))
    assert len(spec.uris) >= 3 and spec.uris[0] == spec.input_uri

    def reading(uris: list[str]) -> aiplatform_v1.BatchPredictionJob:
        source = aiplatform_v1.GcsSource(uris=uris)
        config = aiplatform_v1.BatchPredictionJob.InputConfig(gcs_source=source)
        return aiplatform_v1.BatchPredictionJob(display_name="shape", input_config=config)

    assert reads_input(reading(spec.uris), spec)
    assert not reads_input(reading(spec.uris[:1]), spec)
    assert not reads_input(reading([spec.uris[0], *spec.uris[:0:-1]]), spec)
    unknown = replace(spec, input_uris=())
    assert reads_input(reading(spec.uris), unknown)
    assert reads_input(reading([spec.input_uri]), unknown)
    assert not reads_input(reading(spec.uris[1:]), unknown)
    assert not reads_input(reading([*spec.uris, "gs://elsewhere/x.jsonl"]), unknown)


def test_an_id_staged_in_one_object_is_read_and_adopted(stack: LocalStack, bucket: str) -> None:
    """An id staged as one input.jsonl of any size (as earlier versions did; here a part size
    past the input's): the same rows carry on with its job, a resubmission and the results
    read the one object, and nothing is staged in parts beside it."""
    requests = _requests(60)
    older = with_staging_sizes(local_client(stack, bucket), part_size=1 << 30)
    job = older.submit_claude("old", MODEL, requests)
    manifest = _manifest(stack, bucket, "old")
    assert manifest.input_parts == manifest.key_parts == ()
    assert "input_parts" not in manifest.to_json()  # the manifest an older version wrote
    names = _names(stack, bucket, "old")
    client = _client(stack, bucket)  # parts of 4 KB: this input would be many
    assert client.submit_claude("old", MODEL, requests) == job
    assert _names(stack, bucket, "old") == names
    stack.wait_job(job.name)
    assert sorted(r.key for r in client.results(job)) == [r.key for r in requests]
    again = client.resubmit(job, keys=[r.key for r in requests[:5]], id="old.r")
    stack.wait_job(again.name)
    assert sorted(r.key for r in client.results(again)) == [r.key for r in requests[:5]]


def test_a_manifest_with_bad_part_lists_is_refused() -> None:
    """A list of part MD5s that is not two or more hex MD5s is a damaged manifest."""
    good = Manifest("anthropic", MODEL, 2, 10, "0" * 32, input_parts=("1" * 32, "2" * 32))
    assert Manifest.from_json(good.to_json(), "m") == good
    for bad in (["1" * 32], ["x" * 32, "2" * 32], "1" * 32, [1, 2]):
        data = {**good.to_json(), "input_parts": bad}
        with pytest.raises(vb.InvalidRequestError, match="'input_parts' or 'key_parts'"):
            Manifest.from_json(data, "m")


def test_a_part_stored_with_other_bytes_is_deleted_and_raised(
    stack: LocalStack, bucket: str
) -> None:
    """A part GCS finalises with another MD5 than the one sent (bytes changed on the way; here
    the MD5 stated is another's) is deleted, that generation only, and the upload raises."""
    staging = _staging(stack, bucket)
    with pytest.raises(api_exceptions.Conflict, match="other bytes than were sent"):
        staging.create_bytes("jobs/md5/part", b'{"a":1}\n', JSONL, hashlib.md5(b"x").hexdigest())
    assert not staging.exists("jobs/md5/part")
    data = b'{"a":1}\n'
    assert staging.create_bytes("jobs/md5/part", data, JSONL, hashlib.md5(data).hexdigest())
    assert staging.md5("jobs/md5/part") == hashlib.md5(data).hexdigest()
