"""Rows that are not a key's own: every key still ends as exactly one result, its own.

Three ways a row used to take a key that was not its: an id naming no key of the job matched by
its echoed request; a damaged copy of a key's row shadowing an intact copy read later; an id
sharing only its first 64 bits with a key's digest. Stack tests finish a real job, rewrite its
output with the real storage client and read it through ``client.results``; KeyMap tests are pure.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterator
from typing import Any, cast

import pytest

import vertexbatch as vb
from tests.helpers import (
    CLAUDE,
    FINAL_OUTPUT,
    INCREMENTAL_OUTPUT,
    OutputFiles,
    claude_request,
    finished_output,
    line_status,
)
from vertexbatch._gcs.line_blocks import LineBlock, line_blocks
from vertexbatch._gcs.staging import Staging
from vertexbatch._job.correlate import read_output_file
from vertexbatch._requests.digests import cache_digest, key_digest
from vertexbatch._requests.keymap import KeyMap
from vertexbatch._rules import DEFAULT_LIMITS
from vertexbatch._values import Job
from vertexbatch.emulator import LocalStack

PROVIDERS = ["anthropic", "google"]
# An error row: were it credited to a key, that key would not be ok.
ERROR_STATUS = 'Bad Request: {"error": {"code": 400, "message": "x"}}'


def _no_ids(out: OutputFiles, key: str) -> bytes:
    return json.dumps(out.without_ids(key)).encode()


def _results(client: vb.Client, job: vb.Job) -> list[vb.Result]:
    """The job's results, each key exactly once."""
    results = list(client.results(job))
    assert Counter(r.key for r in results) == Counter(f"key-{i}" for i in range(job.keys))
    return results


def _outcomes(results: list[vb.Result]) -> dict[str, str]:
    return {r.key: r.outcome for r in results}


def _carriers(provider: str) -> list[str]:
    return ["custom_id"] if provider == "anthropic" else ["vb_key", "label"]


CARRIERS = [(p, c) for p in PROVIDERS for c in _carriers(p)]


def _near(digest: str) -> str:
    """Another digest with the same first 64 bits (the first 17 characters)."""
    tail = "0" * 16 if digest[17:] != "0" * 16 else "1" * 16
    return digest[:17] + tail


# --- 1. An id that names no key of the job ------------------------------------------------------


@pytest.mark.parametrize(("provider", "carrier"), CARRIERS)
@pytest.mark.parametrize("own_row", [True, False])
def test_row_with_an_unknown_id_takes_no_key(
    client: vb.Client,
    stack: LocalStack,
    bucket: str,
    caplog: pytest.LogCaptureFixture,
    provider: str,
    carrier: str,
    own_row: bool,
) -> None:
    """A row echoing key-0's request under another job's id is skipped (and logged): key-0 is
    answered by its own row, or missing without one; never by the foreign row."""
    out = finished_output(
        client, stack, bucket, provider, f"foreign-{provider}-{carrier}-{own_row}".lower(), n=3
    )
    foreign = out.with_id("key-0", key_digest("another job's key"), carrier, ERROR_STATUS)
    not_a_digest = out.with_id("key-0", "nobody", carrier, ERROR_STATUS)
    lines = [foreign, not_a_digest, out.line("key-1"), out.line("key-2")]
    out.write([*lines, out.line("key-0")] if own_row else lines)

    with caplog.at_level(logging.WARNING, logger="vertexbatch"):
        results = _results(client, out.job)

    expected = "ok" if own_row else "missing"
    assert _outcomes(results) == {"key-0": expected, "key-1": "ok", "key-2": "ok"}
    assert "skipped 2 line(s)" in caplog.text
    assert "another job" not in caplog.text and "nobody" not in caplog.text


@pytest.mark.parametrize("provider", PROVIDERS)
def test_row_with_an_unknown_id_takes_no_twin(
    client: vb.Client, stack: LocalStack, bucket: str, provider: str
) -> None:
    """Identical requests: a foreign row of that request takes neither the twin with its own
    row nor the twin whose row came back without ids."""
    out = finished_output(
        client, stack, bucket, provider, f"foreign-twins-{provider}", n=2, text="Same."
    )
    foreign = out.with_id("key-0", key_digest("elsewhere"), _carriers(provider)[0], ERROR_STATUS)
    out.write([foreign, out.line("key-0"), _no_ids(out, "key-1")])

    results = _results(client, out.job)

    assert _outcomes(results) == {"key-0": "ok", "key-1": "ok"}


# --- 2. A damaged copy of a row does not shadow an intact copy ---------------------------------


def _cut(line: bytes) -> bytes:
    """The line as a writer stopped mid-way leaves it: its id kept, not JSON."""
    return line[: len(line) // 2]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("where", ["same-file", "incremental", "incremental-no-id"])
def test_damaged_copy_does_not_shadow_an_intact_copy(
    client: vb.Client, stack: LocalStack, bucket: str, provider: str, where: str
) -> None:
    """key-0's cut line comes first; its intact row later in the file, or in an incremental
    shard (with its id or only its echoed request), answers it."""
    out = finished_output(client, stack, bucket, provider, f"shadow-{provider}-{where}", n=3)
    cut = _cut(out.line("key-0"))
    if where == "same-file":
        out.write([cut, out.line("key-1"), out.line("key-0"), out.line("key-2")])
    elif where == "incremental":
        out.write([out.line("key-1"), out.line("key-2"), cut], [out.line("key-0")])
    else:
        out.write([out.line("key-1"), out.line("key-2"), cut], [_no_ids(out, "key-0")])

    results = _results(client, out.job)

    assert _outcomes(results) == {"key-0": "ok", "key-1": "ok", "key-2": "ok"}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_damaged_only_copy_is_one_malformed_line_before_the_missing(
    client: vb.Client, stack: LocalStack, bucket: str, provider: str
) -> None:
    """A key whose every copy is damaged (one in each file) ends as one non-retryable
    MALFORMED_LINE, after the answered keys and before the missing ones."""
    out = finished_output(client, stack, bucket, provider, f"damaged-only-{provider}", n=4)
    cut = _cut(out.line("key-0"))
    out.write([cut, out.line("key-1"), cut], [out.line("key-2"), cut[:-3]])

    results = _results(client, out.job)

    assert [r.key for r in results] == ["key-1", "key-2", "key-0", "key-3"]
    assert line_status(results[2]) == "MALFORMED_LINE" and not vb.is_retryable(results[2].error)
    assert results[3].outcome == "missing"


def test_damaged_copy_of_a_deduplicated_line(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A line answering several keys (dedupe): its damaged copy alone makes each of them one
    MALFORMED_LINE; with an intact copy later, each is answered."""
    requests = [
        claude_request("a", "The same question."),
        claude_request("b", "Another question."),
        claude_request("c", "The same question."),
    ]
    job = client.submit_claude("shadow-dedupe", CLAUDE, requests, dedupe=True)
    directory = stack.wait_job(job.name)["outputInfo"]["gcsOutputDirectory"]
    files = stack.storage_client().bucket(bucket)
    prefix = directory.removeprefix(f"gs://{bucket}/")
    rows = {
        row["custom_id"]: json.dumps(row).encode()
        for row in map(
            json.loads, files.blob(f"{prefix}/{FINAL_OUTPUT}").download_as_bytes().splitlines()
        )
    }
    shared, other = rows[key_digest("a")], rows[key_digest("b")]

    files.blob(f"{prefix}/{FINAL_OUTPUT}").upload_from_string(_cut(shared) + b"\n" + other + b"\n")
    damaged = {r.key: r for r in list(client.results(job))}
    files.blob(f"{prefix}/{INCREMENTAL_OUTPUT}").upload_from_string(shared + b"\n")
    answered = {r.key: r for r in list(client.results(job))}

    assert sorted(damaged) == sorted(answered) == ["a", "b", "c"]
    assert [line_status(damaged[k]) for k in "ac"] == ["MALFORMED_LINE"] * 2
    assert damaged["c"].shared and damaged["b"].ok
    assert all(r.ok for r in answered.values()) and answered["c"].text == answered["a"].text


class _Lines:
    """A staging whose one object is the given lines (read_output_file reads only those)."""

    limits = DEFAULT_LIMITS

    def __init__(self, lines: list[bytes]) -> None:
        self._lines = lines

    def read_line_blocks(self, uri: str, **options: object) -> Iterator[LineBlock]:
        return line_blocks([b"".join(line + b"\n" for line in self._lines)])


def test_a_file_read_alone_ends_its_damaged_keys() -> None:
    """Read alone (the online fallback's file): a damaged line with no intact copy in the file
    is still its key's MALFORMED_LINE, and one with an intact copy later is answered."""
    keys = KeyMap()
    for key in ("a", "b", "c"):
        keys.add(key, key_digest(key), "")
    job = Job("i", "n", "anthropic", CLAUDE, "gs://b/i", "gs://b/o", 3)
    answer = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 2},
    }

    def row(key: str) -> bytes:
        return json.dumps({"custom_id": key_digest(key), "status": "", "response": answer}).encode()

    lines = [_cut(row("a")), _cut(row("b")), row("c"), row("a")]
    taken: set[int] = set()
    staging = cast(Staging, _Lines(lines))
    results = list(read_output_file(staging, "gs://b/online.jsonl", keys, taken, job))

    assert [(r.key, r.outcome) for r in results] == [("c", "ok"), ("a", "ok"), ("b", "failed")]
    assert line_status(results[2]) == "MALFORMED_LINE" and taken == {0, 1, 2}


# --- 3. All 128 bits of a digest --------------------------------------------------------------


@pytest.mark.parametrize(("provider", "carrier"), CARRIERS)
def test_id_sharing_only_a_prefix_with_a_digest_takes_no_key(
    client: vb.Client, stack: LocalStack, bucket: str, provider: str, carrier: str
) -> None:
    """An error row whose id shares key-0's first 64 bits only, read before key-0's own row,
    answers no key: key-0 is answered by its own row."""
    out = finished_output(
        client, stack, bucket, provider, f"prefix-{provider}-{carrier}".lower(), n=3
    )
    near = out.with_id("key-1", _near(key_digest("key-0")), carrier, ERROR_STATUS)
    out.write([near, out.line("key-0"), out.line("key-1"), out.line("key-2")])

    results = _results(client, out.job)

    assert _outcomes(results) == {"key-0": "ok", "key-1": "ok", "key-2": "ok"}


def _key_maps() -> list[KeyMap]:
    """The same keys (one cached, two sharing a line) built by ``add`` and by ``from_records``."""
    records = [
        ["a", key_digest("a"), "ab" * 16],
        ["b", key_digest("b"), ""],
        ["c", key_digest("a"), "ab" * 16],  # dedupe: shares a's line
        ["d", cache_digest("d"), ""],
    ]
    added = KeyMap()
    for key, digest, canonical in records:
        added.add(key, digest, canonical)
    read = KeyMap.from_records(json.dumps(r, separators=(",", ":")).encode() for r in records)
    return [added, read]


@pytest.mark.parametrize("keys", _key_maps(), ids=["add", "from_records"])
def test_digests_match_on_all_their_bits(keys: KeyMap) -> None:
    """Exact digests find their keys (a deduplicated key its line's first key); a digest equal
    in its first 64 bits only, or with a tail that is not hex, finds none."""
    a, b = key_digest("a"), key_digest("b")
    assert [keys.match_id({"custom_id": a}), keys.match_id({"vb_key": b})] == [0, 1]
    assert keys.match_id({"request": {"labels": {"vb_key": b}}}) == 1
    assert keys.shared(0) == [2] and keys.primary(2) == 0
    assert keys.cached_index(cache_digest("d")) == 3 and keys.cached_keys() == ["d"]
    assert keys.find_digest(b'{"custom_id": "' + a.encode() + b'", "x') == 0
    for wrong in (_near(a), a[:17] + "not hex, sixteen", a[:17] + "g" * 16):
        assert keys.match_id({"custom_id": wrong}) is None
        assert keys.match_id({"vb_key": wrong}) is None
        assert keys.match_id({"request": {"labels": {"vb_key": wrong}}}) is None
        assert keys.match({"custom_id": wrong, "request": {"n": 1}}) is None
        assert keys.find_digest(b'{"custom_id": "' + wrong.encode() + b'"') is None
    near_cache = _near(cache_digest("d"))
    assert keys.cached_index(near_cache) is None
    assert keys.cached_index(near_cache[:17] + "not hex, sixteen") is None


@pytest.mark.parametrize(
    ("row", "carries"),
    [
        ({"custom_id": "anything"}, True),
        ({"vb_key": ""}, True),
        ({"request": {"labels": {"vb_key": "x"}}}, True),
        ({"custom_id": None, "vb_key": 5, "request": {"labels": {"vb_key": None}}}, False),
        ({"request": {"labels": ["vb_key"]}}, False),
        ({"request": '{"labels": {"vb_key": "x"}}'}, False),  # a string echo: not looked into
        ({}, False),
    ],
)
def test_which_rows_carry_an_id(row: dict[str, Any], carries: bool) -> None:
    """A string in custom_id, the vb_key sibling or the vb_key label is an id; anything else
    leaves the row to be matched by its echoed request."""
    assert KeyMap.carries_id(row) is carries
    keys = KeyMap()
    keys.add("a", key_digest("a"), "")
    assert keys.match(row) is None
