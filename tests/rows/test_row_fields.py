"""Output rows read for the fields a results pass reads of them (``_rows.fast_path.row_fields``)
give what reading them whole gives: the same fields, value and type, the same results, and every
line that ``load_json`` refuses is refused (read whole, and refused there)."""

from __future__ import annotations

import dataclasses
import itertools
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from tests.requests.test_fast_paths import _JSON, _TEXT
from tests.rows.test_outcomes import ALL_ROWS
from vertexbatch._gcs.line_blocks import LineBlock, line_blocks
from vertexbatch._job import correlate as _results
from vertexbatch._json import MAX_DEPTH, load_json
from vertexbatch._requests.digests import key_digest
from vertexbatch._requests.keymap import KeyMap
from vertexbatch._rows.fast_path import ROW_FIELDS, row_fields, shallow
from vertexbatch._values import Job, Result

KEY = "the key"
DIGEST = key_digest(KEY)

# What a damaged or hostile line may hold where a field's value should be. msgspec passes over
# some of these in a field it does not build (bytes that are not UTF-8, nesting past MAX_DEPTH)
# and refuses some that json reads (NaN, a lone surrogate, a number past a float's range).
FRAGMENTS = [
    b'"\xc0\x80"',  # an overlong encoding: not UTF-8
    b'"\xff"',
    b'"\xed\xa0\x80"',  # a surrogate written in UTF-8 (json reads it: surrogatepass)
    b'"\xc3\xa9\xf0\x9f\x99\x82"',  # é and an emoji, valid
    b"NaN",
    b"-Infinity",
    b"1e400",
    b"5e-324",
    b"-0",
    b"1E5",
    b"123456789012345678901234567890",
    b"-9223372036854775809",
    b'"\\ud800"',
    b'"\\udc00x"',
    b'"\\u00e9\\n\\"\\\\"',
    b"[" * MAX_DEPTH + b"]" * MAX_DEPTH,  # the deepest a line may nest, with its object
    b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1),
    b'{"a":' * (MAX_DEPTH + 5) + b"1" + b"}" * (MAX_DEPTH + 5),
    b"[" * 3000 + b"]" * 3000,  # past the interpreter's recursion limit
    b'"' + b"[" * 300 + b'"',  # brackets in a string are not nesting, but are counted
    b"01",
    b"1.",
    b'"\t"',
    b'"x\x00"',
    b"tru",
    b"[1,]",
    b'{"a":1,"a":2}',
    b'{"custom_id":"' + DIGEST.encode() + b'","response":{}}',  # a row inside a row
    b'{"labels":{"vb_key":"' + DIGEST.encode() + b'"}}',
    b'"' + DIGEST.encode() + b'"',
]
_PLACEHOLDER = "\x01fragment\x01"
_FIELD_NAMES = [*ROW_FIELDS, "request", "other"]


def _whole(raw: bytes) -> Any:
    """What ``load_json`` reads, or ``None`` where it refuses the line."""
    try:
        return load_json(raw)
    except ValueError:
        return None


def _assert_same_fields(raw: bytes) -> dict[str, Any] | None:
    """``row_fields(raw)`` is ``None``, or the fields ``load_json`` reads, value and type; and
    the same when its brackets were counted for a range it is in."""
    fields = row_fields(raw)
    assert repr(row_fields(raw, counted=shallow(raw))) == repr(fields)
    if fields is not None:
        whole = _whole(raw)
        assert type(whole) is dict, raw
        # repr: the same type (1 and 1.0, True and 1), the same order inside, NaN alike
        expected = {name: repr(whole[name]) for name in ROW_FIELDS if name in whole}
        assert {name: repr(value) for name, value in fields.items()} == expected, raw
    return fields


_ROWS = st.fixed_dictionaries(
    {},
    optional={
        "custom_id": st.sampled_from([DIGEST, key_digest("other"), "", "k"]) | _JSON,
        "vb_key": st.sampled_from([DIGEST]) | _JSON,
        "status": st.sampled_from(["", "Bad Request: {}"]) | _JSON,
        "response": st.dictionaries(_TEXT, _JSON, max_size=4) | _JSON,
        "processed_time": st.sampled_from(["2026-12-05T10:00:00.1+00:00"]) | _JSON,
        "request": st.dictionaries(_TEXT, _JSON, max_size=4),
        "other": _JSON,
    },
)


@settings(max_examples=examples(2500), deadline=None)
@given(
    row=_ROWS,
    extra=st.dictionaries(_TEXT, _JSON, max_size=2),
    ascii_only=st.booleans(),
    fragment=st.none() | st.tuples(st.sampled_from(_FIELD_NAMES), st.sampled_from(FRAGMENTS)),
    duplicate=st.none() | st.tuples(st.sampled_from(_FIELD_NAMES), _JSON),
    before=st.sampled_from(["", " ", "\ufeff"]),
    after=st.sampled_from(["", " ", "\r", "x", "}", ","]),
    cut=st.integers(min_value=0, max_value=2),
)
@example(  # a field the fast path never builds, not UTF-8: refused as load_json refuses it
    row={"custom_id": DIGEST, "response": {}},
    extra={},
    ascii_only=True,
    fragment=("request", b'"\xc0\x80"'),
    duplicate=None,
    before="",
    after="",
    cut=0,
)
def test_row_fields_are_what_load_json_reads(
    row: dict[str, Any],
    extra: dict[str, Any],
    ascii_only: bool,
    fragment: tuple[str, bytes] | None,
    duplicate: tuple[str, Any] | None,
    before: str,
    after: str,
    cut: int,
) -> None:
    """Rows of any fields and values, a hostile fragment in any field, a field written twice,
    whitespace, a byte-order mark, extra data, cut short: the same fields or the whole read."""
    value = {**extra, **row}
    if fragment is not None:
        value[fragment[0]] = _PLACEHOLDER
    text = json.dumps(value, ensure_ascii=ascii_only, separators=(",", ":"))
    if duplicate is not None and text.endswith("}") and len(text) > 2:
        text = text[:-1] + "," + json.dumps(duplicate[0]) + ":" + json.dumps(duplicate[1]) + "}"
    text = before + text[: len(text) - cut] + after
    raw = text.encode("utf-8", "surrogatepass")
    if fragment is not None:
        raw = raw.replace(json.dumps(_PLACEHOLDER).encode(), fragment[1])
    _assert_same_fields(raw)


def _line(fields: dict[str, Any], where: str, fragment: bytes) -> bytes:
    text = json.dumps({**fields, where: _PLACEHOLDER}, separators=(",", ":")).encode()
    return text.replace(json.dumps(_PLACEHOLDER).encode(), fragment)


_USUAL = {"custom_id": DIGEST, "status": "", "response": {}}  # two opening brackets


@pytest.mark.parametrize(
    ("fragment", "read"),
    [
        (b'"\xc0\x80"', False),  # msgspec does not check the UTF-8 of what it passes over
        (b'"\xc3\xa9"', True),
        (b"[" * MAX_DEPTH + b"]" * MAX_DEPTH, False),  # with the row's own: past MAX_DEPTH
        (b"[" * (MAX_DEPTH - 2) + b"]" * (MAX_DEPTH - 2), True),  # MAX_DEPTH at most
        (b"[" * (MAX_DEPTH + 200) + b"]" * (MAX_DEPTH + 200), False),  # msgspec reads it
        (b"NaN", False),  # json reads it: the line is read whole, and read
        (b"123456789012345678901234567890", True),
    ],
)
@pytest.mark.parametrize("where", ["request", "response", "other"])
def test_what_row_fields_passes_over_is_checked(fragment: bytes, read: bool, where: str) -> None:
    """Each check ``row_fields`` makes of the line beyond msgspec's: a line it must not read
    is left to ``load_json``, in a field it builds or one it passes over."""
    raw = _line(_USUAL, where, fragment)
    fields = _assert_same_fields(raw)
    assert (fields is not None) is read
    if fields is None and fragment == b"NaN":
        assert _whole(raw) is not None  # read whole, not refused


def _vertex_rows() -> list[bytes]:
    """Rows as Vertex writes them: Claude's (custom_id) and Gemini's (vb_key, label)."""
    claude = {
        "status": "",
        "processed_time": "2026-12-05T10:00:00.1+00:00",
        "custom_id": DIGEST,
        "request": {"messages": [{"role": "user", "content": [{"type": "text", "text": "é?"}]}]},
        "response": {
            "id": "msg_1",
            "type": "message",
            "content": [{"type": "text", "text": "an answer, ünïcode 🙂"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 2},
        },
    }
    gemini = {
        "status": "",
        "processed_time": "2026-12-05T10:00:00.1+00:00",
        "vb_key": DIGEST,
        "request": {"contents": [], "labels": {"vb_key": DIGEST}},
        "response": {
            "candidates": [{"content": {"parts": [{"text": "an answer"}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2},
        },
    }
    failed = {"custom_id": DIGEST, "status": "Bad Request: {}", "request": {}}
    return [json.dumps(row, ensure_ascii=False).encode() for row in (claude, gemini, failed)]


def _blocks(lines: list[bytes]) -> list[LineBlock]:
    """``lines`` as a reader gets them: one range, each line ended."""
    return list(line_blocks([b"".join(line + b"\n" for line in lines)]))


def _keys() -> KeyMap:
    keys = KeyMap()
    keys.add(KEY, DIGEST, "")
    return keys


def test_rows_as_vertex_writes_them_are_read_for_their_fields() -> None:
    """The fast path is taken: a row whose id names a key, answered or failed, is read for its
    fields alone, matched already; its echoed request is passed over, never built."""
    for raw in _vertex_rows():
        read = list(_results.parsed_lines(_blocks([raw]), _keys()))
        assert [(row, index) for row, _, index in read] == [(_assert_same_fields(raw), 0)]
        assert "request" not in read[0][0] and "request" in json.loads(raw)


def test_rows_matched_otherwise_are_read_whole() -> None:
    """A row whose id names no key (its label may) and a row with no id (its echo may match)
    are read whole, as before, and matched by what only the whole row holds."""
    label_only = {
        "vb_key": key_digest("someone else"),
        "request": {"labels": {"vb_key": DIGEST}},
        "response": {},
    }
    lines = [json.dumps(row).encode() for row in (label_only, {"request": {}, "response": {}})]
    read = list(_results.parsed_lines(_blocks(lines), _keys()))
    assert [(row, index) for row, _, index in read] == [(json.loads(raw), None) for raw in lines]
    taken: set[int] = set()
    job = Job("i", "n", "anthropic", "m", "gs://b/i", "gs://b/o", 1)
    results = list(_results.read_rows(iter(read[:1]), _keys(), taken, job, "f"))
    assert [r.key for r in results] == [KEY]


def _encodable(row: Any) -> bytes | None:
    try:
        return json.dumps({**row, "custom_id": DIGEST}, allow_nan=True).encode()
    except (TypeError, ValueError):  # a row of Python values no JSON line holds
        return None


def _results_of(blocks: list[list[bytes]], provider: str) -> list[list[tuple[str, str]]]:
    """The results of each block's lines, each line read in a pass of its own (one key)."""
    job = Job("i", "n", provider, "m", "gs://b/i", "gs://b/o", 1)  # type: ignore[arg-type]
    results: list[Result] = []
    for data, lines, joined in (b for each in blocks for b in _blocks(each)):
        for number, raw in enumerate(lines):
            keys = _keys()
            one = [LineBlock(data, [raw], 1 if number < joined else 0)]
            results += _results.read_rows(_results.parsed_lines(one, keys), keys, set(), job, "f")
    return [[(f.name, repr(getattr(r, f.name))) for f in dataclasses.fields(r)] for r in results]


def _deep(depth: int) -> bytes:
    return _line(_USUAL, "request", b"[" * depth + b"]" * depth)


@pytest.mark.parametrize("provider", ["anthropic", "google"])
def test_every_row_kind_gives_the_result_reading_it_whole_gives(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every row of the outcome tables (answers, refusals, truncations, error statuses, wrapped
    and string responses, not-run rows), as a line: the same Result, field by field, as when
    every line is read whole."""
    lines = [raw for row, _ in (p.values for p in ALL_ROWS) if (raw := _encodable(row))]
    assert len(lines) > 50
    # Ranges of usual lines, and of usual lines beside one nested past MAX_DEPTH (read whole
    # and refused, past the recursion limit too, while its neighbours are read for fields).
    blocks = [lines, [lines[0], _deep(MAX_DEPTH + 40), lines[1]], [_deep(3000), lines[2]]]
    fast = _results_of(blocks, provider)
    damaged = "not a readable JSON object"
    assert damaged in str(fast[len(lines) + 1]) and damaged in str(fast[-2])
    monkeypatch.setattr(_results, "row_fields", lambda raw, counted=False: None)
    assert fast == _results_of(blocks, provider)


def test_a_line_across_ranges_has_its_brackets_counted_whole() -> None:
    """A line nested past ``MAX_DEPTH`` cut across two ranges, each piece shallow: both ranges
    are found shallow, and the line, joined from them, is counted on its own and read whole."""
    usual = _line(_USUAL, "other", b"1")
    deep = _deep(MAX_DEPTH)
    half = len(deep) // 2
    ranges = [usual + b"\n" + deep[:half], deep[half:] + b"\n" + usual + b"\n"]
    assert all(shallow(data) for data in ranges) and not shallow(deep)
    blocks = list(line_blocks(ranges))
    assert [(b.lines, b.joined) for b in blocks] == [([usual], 0), ([deep, usual], 1)]
    read = list(_results.parsed_lines(blocks, _keys()))
    assert [(row is None, index) for row, _, index in read] == [
        (False, 0),
        (True, None),
        (False, 0),
    ]


@settings(max_examples=examples(1500), deadline=None)
@given(
    data=st.binary(max_size=60).map(lambda b: b.replace(b"\x01", b"\n").replace(b"\x02", b"[")),
    cuts=st.lists(st.integers(0, 60), max_size=6),
    max_line=st.none() | st.integers(1, 20),
)
def test_line_blocks_are_pieces_of_their_range(
    data: bytes, cuts: list[int], max_line: int | None
) -> None:
    """Any bytes, read in any ranges, with or without a longest line: the lines are the
    object's lines in order (longer ones cut with a NUL byte), and each line a block does not
    count as joined is a piece of its range between newlines (or its first bytes and a NUL)."""
    bounds = [0, *sorted(c for c in cuts if c <= len(data)), len(data)]
    ranges = [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    blocks = list(line_blocks(ranges, max_line))
    expected = data.split(b"\n")
    if expected[-1] == b"":
        expected.pop()
    if max_line is not None:
        expected = [line if len(line) <= max_line else line[:max_line] + b"\0" for line in expected]
    assert [line for block in blocks for line in block.lines] == expected
    for block in blocks:
        assert block.joined in (0, 1) and block.lines
        pieces = block.data.split(b"\n")
        for line in block.lines[block.joined :]:
            assert line in pieces or (
                line[-1:] == b"\0" and any(p.startswith(line[:-1]) for p in pieces)
            )


def test_row_fields_on_threads_at_once_read_as_one_thread_reads() -> None:
    """One decoder serves every thread (``client.aio`` reads results on worker threads): lines
    of every kind read on four threads at once give what one thread gives."""
    lines = [*_vertex_rows(), _deep(MAX_DEPTH + 1), b'{"custom_id":"\xc0\x80"}', b"{bad"] * 500
    alone = [repr(row_fields(raw)) for raw in lines]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda raw: repr(row_fields(raw)), lines, chunksize=7))
    assert together == alone and alone.count("None") == 1500
