"""Damaged output an adversary (or a broken writer) leaves: every key still ends exactly once.

Issue 10, defect classes 3 (one damaged line stops ``results()``), 11 (rows without ids repeated
across files) and the no-content rule for what reading output logs. Each test finishes a real job
on the local stack, rewrites its output with the real storage client, then reads it through
``client.results(job)``.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from typing import Any

import pytest

import vertexbatch as vb
from tests.helpers import (
    finished_output,
    line_status,
    with_staging_sizes,
)
from vertexbatch._requests.digests import key_digest
from vertexbatch._rules import Limits
from vertexbatch.emulator import LocalStack

DEEP = 5000  # far past the interpreter's recursion limit


def _results(client: vb.Client, job: vb.Job) -> dict[str, vb.Result]:
    results = list(client.results(job))
    by_key = {r.key: r for r in results}
    assert len(by_key) == len(results), Counter(r.key for r in results).most_common(3)
    assert sorted(by_key) == [f"key-{i}" for i in range(job.keys)]
    return by_key


DEEP_VALUES = {
    "lists": b"[" * DEEP + b"]" * DEEP,
    "objects": b'{"a": ' * DEEP + b"1" + b"}" * DEEP,
    "mixed": b'[{"a": ' * (DEEP // 2) + b"1" + b"}]" * (DEEP // 2),
    "unclosed": b"[" * DEEP,
}


@pytest.mark.parametrize("provider", ["anthropic", "google"])
@pytest.mark.parametrize("field", ["response", "status"])
@pytest.mark.parametrize("shape", list(DEEP_VALUES))
def test_deep_line_is_one_malformed_key(
    client: vb.Client, stack: LocalStack, bucket: str, provider: str, field: str, shape: str
) -> None:
    """Class 3: a line nested 5,000 deep is MALFORMED_LINE for its key; without ids, skipped."""
    out = finished_output(client, stack, bucket, provider, f"deep-{provider}-{field}-{shape}")
    deep = DEEP_VALUES[shape]
    out.write(
        [
            out.with_raw("key-0", field, deep),
            out.with_raw("key-1", field, deep, ids=False),
            out.line("key-2"),
            out.line("key-3"),
        ]
    )

    results = _results(client, out.job)

    assert line_status(results["key-0"]) == "MALFORMED_LINE"
    assert results["key-1"].outcome == "missing"
    assert results["key-2"].ok and results["key-3"].ok


@pytest.mark.parametrize("provider", ["anthropic", "google"])
def test_deep_json_inside_strings(
    client: vb.Client, stack: LocalStack, bucket: str, provider: str
) -> None:
    """Class 3: deep JSON in a response string or a status string is read without recursing."""
    out = finished_output(client, stack, bucket, provider, f"deep-strings-{provider}")
    huge = "[" * (5 * 1024 * 1024)
    out.write(
        [
            out.line("key-0", response="[" * DEEP + "]" * DEEP),
            out.line("key-1", response=None, status="Too Many Requests: " + '{"a": ' * DEEP),
            out.line("key-2", response=huge),
            out.line("key-3", response=None, status={"message": "Bad Request: " + "{" * DEEP}),
        ]
    )

    results = _results(client, out.job)

    assert line_status(results["key-0"]) == "UNREADABLE_RESPONSE"
    error = results["key-1"].error
    assert isinstance(error, vb.LineError) and error.code == 429 and vb.is_retryable(error)
    assert line_status(results["key-2"]) == "UNREADABLE_RESPONSE"
    error = results["key-3"].error
    assert isinstance(error, vb.LineError) and error.code == 400


@pytest.mark.parametrize("provider", ["anthropic", "google"])
@pytest.mark.parametrize(
    ("in_final", "in_incremental", "answered"),
    [(1, 1, 1), (1, 0, 1), (0, 1, 1), (2, 1, 2), (1, 2, 2), (2, 2, 2), (3, 1, 3), (0, 3, 3)],
)
def test_row_without_ids_seen_twice_is_one_row(
    client: vb.Client,
    stack: LocalStack,
    bucket: str,
    provider: str,
    in_final: int,
    in_incremental: int,
    answered: int,
) -> None:
    """Class 11: the same id-less row in two files is one row; twice in one file, two rows."""
    name = f"idless-{provider}-{in_final}-{in_incremental}"
    out = finished_output(client, stack, bucket, provider, name, n=3, text="The same request.")
    row = out.without_ids("key-0")
    verbatim = json.dumps(row).encode()
    # The incremental copy written by another writer: other key order and spacing.
    rewritten = json.dumps(row, sort_keys=True, indent=1).replace("\n", "").encode()
    out.write([verbatim] * in_final, [rewritten] * in_incremental)

    results = _results(client, out.job)

    outcomes = Counter(r.outcome for r in results.values())
    assert outcomes == Counter({"ok": answered, "missing": 3 - answered})


def test_rows_without_ids_differing_across_files_are_two_rows(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Class 11: id-less rows of one request that differ (another answer) are distinct rows."""
    out = finished_output(client, stack, bucket, "anthropic", "idless-differ", n=3, text="Same.")
    first = out.without_ids("key-0")
    second = {**first, "processed_time": "2030-01-01T00:00:00.5+00:00"}
    out.write([json.dumps(first).encode()], [json.dumps(second).encode()])

    results = _results(client, out.job)

    assert Counter(r.outcome for r in results.values()) == Counter({"ok": 2, "missing": 1})


@pytest.mark.parametrize("provider", ["anthropic", "google"])
def test_digest_quoted_in_a_damaged_line_names_no_key(
    client: vb.Client, stack: LocalStack, bucket: str, provider: str
) -> None:
    """Class 3: a damaged line's key is its id field's, never a digest quoted in its text."""
    out = finished_output(client, stack, bucket, provider, f"quoted-{provider}")
    quote = f'see {key_digest("key-1")} and "custom_id": "{key_digest("key-3")}"'
    if provider == "anthropic":
        answer = {"type": "message", "content": [{"type": "text", "text": quote}]}
    else:
        answer = {"candidates": [{"content": {"parts": [{"text": quote}]}}]}
    text = json.dumps(answer).encode()
    out.write(
        [
            out.with_raw("key-0", "response", text)[:-1],  # cut short: not JSON
            out.with_raw("key-2", "response", text, ids=False)[:-1],
            out.line("key-1"),
            out.line("key-3"),
        ]
    )

    results = _results(client, out.job)

    assert line_status(results["key-0"]) == "MALFORMED_LINE"
    assert results["key-1"].ok and results["key-3"].ok
    assert results["key-2"].outcome == "missing"


def test_no_response_content_in_logs_or_errors(
    client: vb.Client, stack: LocalStack, bucket: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Rows of odd shapes are classified without their content reaching a log or an error."""
    out = finished_output(client, stack, bucket, "anthropic", "no-content", n=6)
    secret = "²³⁴"  # digits to str.isdigit(), not to int()
    message = out.rows["key-0"]["response"]
    out.write(
        [
            out.line("key-0", response={**message, "usage": {"input_tokens": secret}}),
            out.line("key-1", response=None, status={"code": secret, "message": secret}),
            out.line("key-2", response=None, status={"code": "9" * 5000}),
            out.line("key-3", response={**message, "usage": {"output_tokens": "9" * 5000}}),
            out.line("key-4", response={**message, "stop_reason": {secret: [secret]}}),
            out.line("key-5", response=None, status=f"Bad Request: {secret}"),
        ]
    )

    with caplog.at_level(logging.DEBUG, logger="vertexbatch"):
        results = _results(client, out.job)

    assert results["key-0"].ok and results["key-0"].usage.input == 0
    assert results["key-3"].ok and results["key-3"].usage.output == 0
    assert {line_status(results[k]) for k in ("key-1", "key-2")} == {""}
    assert results["key-4"].outcome == "failed"
    assert isinstance(results["key-5"].error, vb.LineError)
    assert results["key-5"].error.code == 400
    for result in results.values():
        assert secret not in str(result.error) and secret not in repr(result.error)
    assert secret not in caplog.text and "Traceback" not in caplog.text


@pytest.mark.parametrize("provider", ["anthropic", "google"])
def test_odd_lines_each_key_one_outcome(
    client: vb.Client, stack: LocalStack, bucket: str, provider: str
) -> None:
    """Lists, bad UTF-8, NUL bytes, blank lines, huge numbers: each key ends exactly once."""
    out = finished_output(client, stack, bucket, provider, f"odd-{provider}", n=9)
    answer = out.rows["key-3"]["response"]
    usage_field = "usage" if provider == "anthropic" else "usageMetadata"
    counts = b", ".join(
        b'"%s": %s' % (name.encode(), number)
        for name, number in [
            ("input_tokens", b"1e999"),
            ("output_tokens", b"-1e999"),
            ("promptTokenCount", b"1e999"),
            ("candidatesTokenCount", b"9" * 30),
        ]
    )
    field = b'"%s": ' % usage_field.encode()
    huge_usage = json.dumps({**answer, usage_field: 0}).encode()
    huge_usage = huge_usage.replace(field + b"0", field + b"{" + counts + b"}")
    nested_status: Any = {"code": 503}
    for _ in range(100):  # deep, but within what is read
        nested_status = {"details": nested_status}
    out.write(
        [
            b"[" + out.line("key-0") + b"]",
            out.line("key-1").replace(b'"status"', b'"st\xffatus"'),
            b"\x00" * 64,
            b"   \t\r",
            out.line("key-2").replace(b"{", b"\xef\xbb\xbf{", 1),  # a byte-order mark
            out.with_raw("key-3", "response", huge_usage),
            out.line("key-4", response=None, status=nested_status),
            out.line("key-5") + b" " + b"[" * DEEP,  # trailing garbage after a whole row
            out.line("key-6", response=json.dumps(answer)),
            out.line("key-7", response={"body": json.dumps(json.dumps(answer))}),
            # key-8's line is missing altogether
        ]
    )

    results = _results(client, out.job)

    assert line_status(results["key-0"]) == "MALFORMED_LINE"
    assert line_status(results["key-1"]) == "MALFORMED_LINE"
    assert results["key-2"].ok
    assert results["key-3"].ok and results["key-3"].usage == vb.Usage()
    assert not results["key-4"].ok
    assert line_status(results["key-5"]) == "MALFORMED_LINE"
    assert results["key-6"].ok and results["key-7"].ok
    assert results["key-8"].outcome == "missing"


def test_overlong_line_is_malformed_and_reading_goes_on(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Class 3: a line past the length bound is cut, read as MALFORMED_LINE, and the rest read.

    The bound is lowered so that lines of a few MB (spanning several reads) stand for ones of
    hundreds of MB.
    """
    with_staging_sizes(client, limits=Limits(output_line=64 * 1024))
    out = finished_output(client, stack, bucket, "anthropic", "overlong", n=4)
    message = out.rows["key-0"]["response"]
    long_answer = {**message, "content": [{"type": "text", "text": "x" * (9 * 1024 * 1024)}]}
    out.write(
        [
            out.line("key-0", response=long_answer),  # valid JSON, but too long
            out.line("key-1"),
            out.line("key-2", response={**message, "content": [{"type": "text", "text": "ok"}]}),
            out.line("key-3", response=long_answer),  # the last line, cut too
        ]
    )

    results = _results(client, out.job)

    assert line_status(results["key-0"]) == "MALFORMED_LINE"
    assert line_status(results["key-3"]) == "MALFORMED_LINE"
    assert results["key-1"].ok and results["key-2"].text == "ok"
