"""The throughput paths give exactly what the plain ones give: range reads with one read ahead,
key records read without a JSON parser."""

from __future__ import annotations

import enum
import json
import re
import threading
import uuid
from email.message import Message
from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage
from hypothesis import example, given, settings
from hypothesis import strategies as st

import vertexbatch as vb
from tests.gcs_gate import Spoil, gate
from tests.helpers import examples, put_object
from vertexbatch._gcs.staging import Staging
from vertexbatch._requests import importer_rules as _importer
from vertexbatch._requests import importer_types as _field_types
from vertexbatch._requests import keymap as _keymap
from vertexbatch._requests.digests import key_digest
from vertexbatch._requests.keymap import parse_key_record
from vertexbatch._requests.lines import StagedLine
from vertexbatch.emulator import LocalStack

CHUNK = 1024  # ranges this small stand for the real 8 MiB ones: many reads, lines across their ends


def _staging_of(stack: LocalStack, bucket: str) -> Staging:
    return Staging(stack.storage_client(), bucket, "p", vb.RetryPolicy.no_wait(), read_chunk=CHUNK)


def _expected(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    return lines[:-1] if lines[-1] == b"" else lines


@pytest.mark.parametrize(
    "size",
    [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK, 5 * CHUNK + 17, 40 * CHUNK],
)
def test_ranges_read_ahead_give_every_line_once_in_order(
    stack: LocalStack, bucket: str, size: int
) -> None:
    """Objects of 0 to 40 ranges, sizes at and around range ends, lines spanning ranges."""
    text = b"".join(b"line %d %s\n" % (i, b"x" * (i * 37 % 300)) for i in range(2000))[:size]
    put_object(stack, bucket, "p/obj", text)
    assert list(_staging_of(stack, bucket).read_lines("p/obj")) == _expected(text)


def test_a_long_line_is_cut_across_ranges_read_ahead(stack: LocalStack, bucket: str) -> None:
    """``max_line`` still holds with reads ahead: the line is cut and the next lines follow."""
    text = b"short\n" + b"y" * (7 * CHUNK + 3) + b"\nafter\nlast"
    put_object(stack, bucket, "p/obj", text)
    lines = list(_staging_of(stack, bucket).read_lines("p/obj", max_line=2 * CHUNK))
    assert lines == [b"short", b"y" * (2 * CHUNK) + b"\0", b"after", b"last"]


def test_a_failed_read_ahead_raises_in_the_caller(stack: LocalStack, bucket: str) -> None:
    """The third range fails (GCS answers 404: the object deleted meanwhile, say): the reader
    gets the error after the lines of the ranges before it, and no line is skipped or repeated."""
    text = b"".join(b"%05d\n" % i for i in range(2000))  # 6 bytes a line, 12,000 bytes
    put_object(stack, bucket, "p/obj", text)
    asked: list[str] = []

    def third_range_gone(method: str, path: str, headers: Message) -> Spoil | None:
        if not path.startswith("/download/"):
            return None
        asked.append(headers.get("Range", ""))
        return Spoil(status=404) if asked[-1].startswith(f"bytes={2 * CHUNK}-") else None

    seen: list[bytes] = []
    with gate(stack.storage_endpoint, third_range_gone) as url:
        gated = storage.Client(
            project=stack.project,
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options={"api_endpoint": url},
        )
        staging = Staging(gated, bucket, "p", vb.RetryPolicy.no_wait(), read_chunk=CHUNK)
        with pytest.raises(api_exceptions.NotFound):
            for line in staging.read_lines("p/obj"):
                seen.append(line)
    assert seen == _expected(text[: 2 * CHUNK])[:-1]  # the line cut at the range end is held
    assert [r.partition("-")[0] for r in asked] == [f"bytes={s}" for s in (0, CHUNK, 2 * CHUNK)]


def test_a_reader_that_stops_early_leaves_no_thread_behind(stack: LocalStack, bucket: str) -> None:
    put_object(stack, bucket, "p/obj", b"abc\n" * 5000)
    lines = _staging_of(stack, bucket).read_lines("p/obj")
    assert next(lines) == b"abc"
    lines.close()
    for thread in threading.enumerate():
        if thread.name.startswith("vertexbatch-read"):
            thread.join(timeout=30)
            assert not thread.is_alive()


def _json_parse(raw: bytes, monkeypatch: pytest.MonkeyPatch) -> object:
    """What ``parse_key_record`` answers through ``json.loads`` alone."""
    with monkeypatch.context() as m:
        m.setattr(_keymap, "_PLAIN_RECORD", re.compile(rb"(?!)"))  # matches nothing
        try:
            return parse_key_record(raw)
        except ValueError as exc:
            return ("ValueError", str(exc))


def _fast_parse(raw: bytes) -> object:
    try:
        return parse_key_record(raw)
    except ValueError as exc:
        return ("ValueError", str(exc))


@settings(max_examples=examples(300), deadline=None)
@given(key=st.text(min_size=1, max_size=40))
def test_every_key_record_as_written_reads_back(key: str) -> None:
    """Any key (quotes, backslashes, control characters, non-ASCII) round-trips."""
    digest = key_digest(key)
    line = StagedLine(key=key, digest=digest, canonical="0123456789abcdef" * 2, data=b"")
    try:
        record = line.key_record()
    except UnicodeEncodeError:  # a lone surrogate: such a key is refused before staging
        return
    assert parse_key_record(record.rstrip(b"\n")) == (key, digest, "0123456789abcdef" * 2)


_PARTS = st.sampled_from(
    [b'["', b'"]', b'","', b"k" + b"a" * 32, b"0" * 32, b"key", b"\\", b'"', b"\x1f", b"\x7f",
     b"\xc3\xa9", b"\xed\xa0\x80", b"\xff", b" ", b"[", b"]", b"k", b"A" * 32, b"\\u00e9", b""]
)  # fmt: skip


@settings(max_examples=examples(1500), deadline=None)
@example(parts=[], key=b"a\x1fb", canonical=b"")  # the last control character, in a plain key
@example(parts=[], key=b"a\x7fb\xc3\xa9", canonical=b"0" * 32)  # DEL and non-ASCII: plain
@given(
    parts=st.lists(_PARTS, max_size=9),
    key=st.binary(max_size=12),
    canonical=st.sampled_from([b"", b"0" * 32, b"f" * 31, b"a" * 33, b"0" * 31 + b"g"]),
)
def test_records_read_without_a_parser_read_as_json_reads_them(
    parts: list[bytes], key: bytes, canonical: bytes
) -> None:
    """Near-records and damaged ones: the fast path gives json.loads' answer, error included."""
    raws = [
        b"".join(parts),
        b'["' + key + b'","k' + b"0" * 32 + b'","' + canonical + b'"]',
        b'["' + key + b'","' + b"".join(parts) + b'","' + canonical + b'"]',
    ]
    with pytest.MonkeyPatch.context() as m:
        for raw in raws:
            assert _fast_parse(raw) == _json_parse(raw, m), raw


def test_record_with_escapes_and_non_ascii_reads_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ['a"b', "a\\b", "tab\there", "été", "🙂", "\x7f", "k" * 300]:
        raw = json.dumps([key, key_digest(key), ""], ensure_ascii=False).encode()
        compact = json.dumps([key, key_digest(key), ""], separators=(",", ":")).encode()
        for record in (raw, compact, compact.replace(b"\\u00e9", "é".encode())):
            expected = (key, key_digest(key), "")
            assert _fast_parse(record) == _json_parse(record, monkeypatch) == expected


@settings(max_examples=examples(500), deadline=None)
@given(key=st.text(min_size=1, max_size=60), canonical=st.sampled_from(["", "ab" * 16]))
def test_key_records_are_what_json_writes(key: str, canonical: str) -> None:
    """The key record built directly is byte for byte json's compact encoding of it."""
    line = StagedLine(key=key, digest=key_digest(key), canonical=canonical, data=b"")
    expected = json.dumps([key, line.digest, canonical], ensure_ascii=False, separators=(",", ":"))
    try:
        want = expected.encode("utf-8") + b"\n"
    except UnicodeEncodeError:  # a lone surrogate: not UTF-8 either way
        with pytest.raises(UnicodeEncodeError):
            line.key_record()
        return
    assert line.key_record() == want


# --- orjson writes staged lines byte for byte as json does -----------------------------------

_STDLIB_SORTED = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False
)
# The edges where orjson and json part, or might: drawn among the values below, and each
# written alone in every profile (test_each_edge_alone_is_written_as_json_writes_it).
_EDGE_FLOATS = [
    0.0, -0.0, 1e-4, 9.999999999999999e-05, 1e-05, 1e16, 9999999999999998.0, 1e300, 5e-324, 0.1,
    0.2, 1.0, 2.5, 1 / 3, 123456789012345.67, -1e-7, float("nan"), float("inf"),
]  # fmt: skip
_EDGE_INTS = [2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**30, -(10**30)]
_EDGE_TEXTS = [
    '"',
    "\\",
    "\n\r\t\b\f",
    "\x00\x1f\x7f",
    "é",
    "\u2028\u2029",
    "\ufeff",
    "🙂",
    "\U0010ffff",
]
_FLOATS = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(_EDGE_FLOATS)
_INTS = st.integers() | st.sampled_from(_EDGE_INTS)
_TEXT = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(_EDGE_TEXTS)
_JSON = st.recursive(
    st.none() | st.booleans() | _INTS | _FLOATS | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=25,
)


_STDLIB_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _stdlib(value: object) -> bytes | str:
    try:
        return _STDLIB_SORTED.encode(value).encode()
    except (TypeError, ValueError) as exc:
        return type(exc).__name__


def _ours(value: object) -> bytes | str:
    from vertexbatch._requests.importer_rules import scan
    from vertexbatch._requests.lines import _sorted_json

    bad, _, _, fixed = scan(value)  # a bad line (an empty key, say) is refused before writing:
    # the walk stopped there, so what it says of floats is not the whole story.
    try:
        return _sorted_json(value, fixed and not bad)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        return type(exc).__name__


def _stdlib_compact(value: object) -> bytes | str:
    try:
        return _STDLIB_COMPACT.encode(value).encode()
    except (TypeError, ValueError) as exc:
        return type(exc).__name__


def _ours_compact(value: object) -> bytes | str:
    from vertexbatch._requests.importer_rules import scan
    from vertexbatch._requests.lines import _compact_json

    bad, _, _, fixed = scan(value)
    try:
        return _compact_json(value, fixed and not bad)
    except (TypeError, ValueError) as exc:
        return type(exc).__name__


@settings(max_examples=examples(3000), deadline=None)
@given(value=st.dictionaries(_TEXT, _JSON, max_size=6))
def test_sorted_json_is_byte_for_byte_what_json_writes(value: dict[str, object]) -> None:
    """Non-ASCII, escapes, large integers, floats of every size, NaN: the same bytes, or the
    same refusal."""
    assert _ours(value) == _stdlib(value)


@settings(max_examples=examples(2000), deadline=None)
@given(value=st.dictionaries(_TEXT, _JSON, max_size=6))
def test_compact_json_is_byte_for_byte_what_json_writes(value: dict[str, object]) -> None:
    """Labels as staged (keys in their own order): the same bytes as json, or the same
    refusal."""
    assert _ours_compact(value) == _stdlib_compact(value)


@pytest.mark.parametrize("edge", [*_EDGE_FLOATS, -float("inf"), *_EDGE_INTS, *_EDGE_TEXTS])
def test_each_edge_alone_is_written_as_json_writes_it(edge: object) -> None:
    """Each edge alone, at the top, in a list and nested: beside another value it could be
    hidden (one float out of orjson's range sends the whole line to json)."""
    for value in ({"v": edge}, {"v": [edge]}, {"v": {"w": [1, edge]}}, {str(edge): edge}):
        assert _ours(value) == _stdlib(value)
        assert _ours_compact(value) == _stdlib_compact(value)


@pytest.mark.parametrize(
    "value",
    [
        {"a": float("nan")},
        {"a": [float("inf")]},
        {"a": {"b": -float("inf")}},
        {"x": "\ud800"},  # a lone surrogate: not UTF-8
        {"\udfff": 1},
    ],
)
def test_what_json_refuses_is_refused(value: dict[str, object]) -> None:
    assert _ours(value) == _stdlib(value) != b""
    assert isinstance(_ours(value), str)  # an exception's name, not bytes


def test_edge_values_are_written_as_json_writes_them() -> None:
    deep: object = 1
    for _ in range(15):
        deep = {"d": [deep]}
    for value in [
        {"big": 2**64, "neg": -(2**63) - 1, "huge": 10**100, "u64": 2**64 - 1},
        {"small": 1e-05, "tiny": 5e-324, "large": 1e16, "exp": 1.5e300, "neg0": -0.0},
        {"é": "ü", "🙂": ["\u2028", "\x00", "\x7f"], "B": 1, "a": 2, "\uffff": 3},
        {"deep": deep},
    ]:
        assert _ours(value) == _stdlib(value)
        assert isinstance(_ours(value), bytes)


def _both_ways(build: object, request: object, monkeypatch: pytest.MonkeyPatch) -> None:
    from vertexbatch._requests import lines as _lines

    fast = build(request)  # type: ignore[operator]
    with monkeypatch.context() as m:
        m.setattr(_lines, "_sorted_json", lambda body, fixed: _STDLIB_SORTED.encode(body).encode())
        m.setattr(
            _lines, "_compact_json", lambda value, fixed: _STDLIB_COMPACT.encode(value).encode()
        )
        plain = build(request)  # type: ignore[operator]
    assert fast == plain  # data, digest, canonical digest: every byte
    assert fast.key_record() == plain.key_record()


def test_staged_lines_are_the_same_bytes_without_orjson(monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude and Gemini lines (the benchmark's requests and edge cases): same line, digests."""
    from benchmarks import workload
    from vertexbatch._requests.lines import claude_line, gemini_line

    for request in workload.claude_requests(50):
        _both_ways(claude_line, request, monkeypatch)
    for request in workload.gemini_requests(50):
        _both_ways(gemini_line, request, monkeypatch)
    odd = {"n": [1e-05, 2**70, 0.5], "t": "é\n🙂", "z": None, "e": [], "i": 3.0}
    claude = vb.ClaudeRequest(
        "k-é",
        {"max_tokens": 5, "temperature": 1e-05, "metadata": {"user_id": "ü"},
         "messages": [{"role": "user", "content": "x", "extra": odd}]},
    )  # fmt: skip
    _both_ways(claude_line, claude, monkeypatch)
    gemini = vb.GeminiRequest(
        "g-🙂",
        [{"role": "user", "parts": [{"text": "\u2028 é"}]}],
        {"temperature": 0.7, "labels": {"team": "ü-x"}, "max_output_tokens": 2**31 - 1},
    )
    _both_ways(gemini_line, gemini, monkeypatch)


@settings(max_examples=examples(300), deadline=None)
@given(params=st.dictionaries(st.sampled_from(["temperature", "top_p", "metadata"]), _JSON))
def test_claude_lines_with_any_values_are_the_same_bytes_without_orjson(
    params: dict[str, object],
) -> None:
    from vertexbatch._errors import InvalidRequestError
    from vertexbatch._requests.lines import claude_line

    request = vb.ClaudeRequest("k", {"max_tokens": 5, "messages": [], **params})
    with pytest.MonkeyPatch.context() as m:
        try:
            _both_ways(claude_line, request, m)
        except InvalidRequestError:  # refused: it must be refused both ways
            with pytest.raises(InvalidRequestError):
                from vertexbatch._requests import lines as _lines

                m.setattr(_lines, "_sorted_json", lambda b, f: _STDLIB_SORTED.encode(b).encode())
                claude_line(request)


# --- the field types' tree gives what the path strings gave ----------------------------------


class _ReferenceFieldTypes:
    """FieldTypes as first written (one path string per field): the reference."""

    __slots__ = ("_lines", "_seen")

    def __init__(self) -> None:
        self._lines = 0
        # schema path -> (type, line it was first seen on, that line's key)
        self._seen: dict[str, tuple[str, int, str]] = {}

    def add(self, request: Any, key: str) -> _importer.Problem | None:
        self._lines += 1
        line = self._lines
        seen = self._seen
        kinds = _field_types._KINDS
        stack: list[tuple[Any, str]] = [(request, "")]
        # One pass; leaves are checked where they are met (no stack entry), lists and objects
        # when popped. Written out twice, for objects and lists: every line comes through here.
        while stack:
            node, path = stack.pop()
            kind = kinds[type(node)]
            first = seen.get(path)
            if first is None:
                seen[path] = (kind, line, key)
            elif first[0] is not kind:
                return _field_types._clash(request, path, kind, first, line, key)
            if kind is _field_types._OBJECT:
                for name, value in node.items():
                    where = path + _field_types._KEY_STEP + name
                    cls = type(value)
                    if cls is dict or cls is list:
                        stack.append((value, where))
                        continue
                    leaf = kinds.get(cls)  # None: null, which fits any type
                    if leaf is not None:
                        first = seen.get(where)
                        if first is None:
                            seen[where] = (leaf, line, key)
                        elif first[0] is not leaf:
                            return _field_types._clash(request, where, leaf, first, line, key)
            else:
                where = path + _field_types._ITEM_STEP
                for value in node:
                    cls = type(value)
                    if cls is dict or cls is list:
                        stack.append((value, where))
                        continue
                    leaf = kinds.get(cls)
                    if leaf is not None:
                        first = seen.get(where)
                        if first is None:
                            seen[where] = (leaf, line, key)
                        elif first[0] is not leaf:
                            return _field_types._clash(request, where, leaf, first, line, key)
        return None


_SHAPE_KEYS = st.sampled_from(["a", "b", "text", "parts"])
_SHAPE_LEAVES = st.sampled_from([None, True, 1, 2.5, "s"])
_SHAPES = st.recursive(
    _SHAPE_LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_SHAPE_KEYS, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=examples(1500), deadline=None)
@given(requests=st.lists(st.dictionaries(_SHAPE_KEYS, _SHAPES, max_size=4), max_size=6))
def test_field_types_find_the_same_clash_as_before(requests: list[dict[str, object]]) -> None:
    """Lines of few shapes and types: the same first clash, named the same way, or none."""
    ours, reference = _field_types.FieldTypes(), _ReferenceFieldTypes()
    for number, request in enumerate(requests):
        found = ours.add(request, f"key-{number}")
        assert found == reference.add(request, f"key-{number}")
        if found is not None:
            break


# --- output lines parsed by json's scanner directly read as json.loads reads them -------------


def _loaded(load: Any, text: bytes) -> object:
    try:
        return ("ok", repr(load(text)))  # repr: NaN is not equal to itself
    except ValueError as exc:
        return ("ValueError", str(exc))


@settings(max_examples=examples(1500), deadline=None)
@given(
    value=st.dictionaries(_TEXT, _JSON, max_size=5),
    before=st.sampled_from(["", " ", "\n", "\ufeff"]),
    after=st.sampled_from(["", " ", "\r", "{}", "x", "}", ","]),
    cut=st.integers(min_value=0, max_value=3),
)
def test_output_lines_read_as_json_loads_reads_them(
    value: dict[str, object], before: str, after: str, cut: int
) -> None:
    """Objects with whitespace, a byte-order mark, extra data or cut short: the same value, or
    the same error."""
    from vertexbatch._json import load_json

    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = text[: len(text) - cut] + after
    data = (before + text).encode("utf-8", "surrogatepass")
    expected = _loaded(json.loads, data[3:] if before == "\ufeff" else data)
    assert _loaded(load_json, data) == expected


@pytest.mark.parametrize(
    "text", [b'{"a":}', b'{"":nul{}', b'{"a":[1,}', b'{"a":{"b":}}', b'{"a" 1}', b"{,}"]
)
def test_a_value_missing_inside_an_object_is_a_value_error(text: bytes) -> None:
    """json's scanner says so with StopIteration, which must not escape (in a generator it
    would become a RuntimeError): the line is refused as json.loads refuses it."""
    from vertexbatch._json import load_json

    assert _loaded(load_json, text) == _loaded(json.loads, text)
    assert _loaded(load_json, text)[0] == "ValueError"


@pytest.mark.parametrize(
    "text",
    [
        b'{"n":9223372036854775807,"m":-9223372036854775808,"u":18446744073709551615}',
        b'{"n":18446744073709551616}',  # past 64 bits: orjson would read a float
        b'{"n":-9223372036854775809}',
        b'{"n":-9999999999999999999}',  # 19 digits, below -2**63
        b'{"n":[1,{"m":123456789012345678901234567890}]}',
        b'{"n":1234567890123456789.5,"s":"12345678901234567890"}',
        b'{"n":1e400,"m":-1e400}',  # json: infinities; orjson refuses
        b'{"n":NaN,"m":Infinity,"k":-Infinity}',
        b'{"s":"\\ud800","t":"\\udc00x","u":"\\ud83d\\u0041"}',  # lone surrogates
        b'{"s":"\xed\xa0\x80"}',  # a surrogate written in UTF-8
        b'\xef\xbb\xbf{"a":1}',
        b'{"a":1,"a":2,"b":{"c":3,"c":[]}}',
        b'{"f":[0.1,1e-7,5e-324,2.4e-324,1.7976931348623157e308,-0.0,1E5]}',
        b'{"s":"\\u00e9\xc3\xa9\\u2028\\n\\"\\\\"}',
        b'{"a":"x\x01"}',  # a raw control character: both refuse
        b"{" + b'"a":[' * 64 + b"1" + b"]" * 64 + b"}",
        b'{"a":' + b"[" * 128 + b"]" * 128 + b"}",  # deeper than MAX_DEPTH
        b'{"s":"' + b"[" * 200 + b'"}',  # brackets in a string are not nesting
    ],
)
def test_output_lines_read_by_orjson_read_as_json_loads_reads_them(text: bytes) -> None:
    """The edges where orjson and json part: big integers, NaN, infinities, surrogates, a
    byte-order mark, depth: the same value (the same types) or the same error."""
    from vertexbatch._json import load_json

    expected = _loaded(json.loads, text[3:] if text.startswith(b"\xef\xbb\xbf") else text)
    if text.startswith(b'{"a":[[[['):  # 129 levels: refused before parsing
        expected = ("ValueError", "JSON nested deeper than 128 levels")
    assert _loaded(load_json, text) == expected


@settings(max_examples=examples(1500), deadline=None)
@given(number=_INTS | _FLOATS, digits=st.text("0123456789", min_size=1, max_size=40))
def test_numbers_read_by_orjson_read_as_json_loads_reads_them(number: object, digits: str) -> None:
    """Any integer or float json writes, and any run of digits as an integer, a fraction and an
    exponent: the same number of the same type as json.loads reads."""
    from vertexbatch._json import load_json

    for text in (
        json.dumps({"n": number}),
        f'{{"n":{digits.lstrip("0") or "0"}}}',
        f'{{"n":-{digits.lstrip("0") or "0"}}}',
        f'{{"n":0.{digits}}}',
        f'{{"n":1.{digits}e-{len(digits)}}}',
    ):
        data = text.encode()
        assert _loaded(load_json, data) == _loaded(json.loads, data)


# --- FieldTypes.check gives what scan and add give, in one walk -------------------------------


class _Key(str):
    """A str subclass, as an enum's value is: not plain."""


class _Number(int):
    """An int subclass: not plain."""


_CHECK_KEYS = st.sampled_from(["a", "b", "text", "parts", "", "$ref", "a b", "é", _Key("a")])
_CHECK_LEAVES = st.sampled_from(
    [None, True, False, 1, 0, 2**70, 2.5, 3.0, -0.0, 1e-05, 1e16, float("nan"), float("inf"),
     "s", "", _Key("s"), _Number(1), b"x", (1,)]
)  # fmt: skip
_CHECK_VALUES = st.recursive(
    _CHECK_LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_CHECK_KEYS, inner, max_size=3),
    max_leaves=14,
)
_CHECK_LINES = st.one_of(
    st.dictionaries(_CHECK_KEYS, _CHECK_VALUES, max_size=4),
    st.dictionaries(st.sampled_from(["a", "b"]), _SHAPES, max_size=3),  # few types: clashes
    st.just({"d": json.loads('{"a":' * 14 + "1" + "}" * 14)}),  # 16 levels
    st.just({"d": json.loads('[{"a":' * 7 + "1" + "}]" * 7)}),  # 15 levels
    st.just({1: "int key"}),
    st.lists(_CHECK_VALUES, max_size=2),  # not an object
)


def _reference_check(
    lines: list[tuple[Any, str]], request: Any, key: str
) -> tuple[tuple[bool, bool, bool, bool], _importer.Problem | None]:
    """``scan``, then ``add`` on a fresh FieldTypes that saw only the lines kept before."""
    found = _importer.scan(request)
    if found[0] or not found[2]:
        return found, None
    types = _field_types.FieldTypes()
    for before, before_key in lines:
        assert types.add(before, before_key) is None
    return found, types.add(request, key)


@settings(max_examples=examples(2000), deadline=None)
@example(  # two clashes in one line: the first is named
    requests=[{"a": 1, "b": "x", "c": [1]}, {"a": "s", "b": 2, "c": {"d": 1}}],
    refused=[False] * 7,
    pool=[1],
    picks=[],
)
@example(
    requests=[{"a": [1], "b": {"c": "s"}}, {"a": ["s"], "b": {"c": 1}}],
    refused=[False] * 7,
    pool=[1],
    picks=[],
)
@example(requests=[{"a": [[1], ["s"]]}, {"a": [[1]]}], refused=[False] * 7, pool=[1], picks=[])
@example(  # a line with a clash leaves none of its fields behind, those before the clash too
    requests=[{"a": 1}, {"b": "s", "a": "x"}, {"b": 1}],
    refused=[False] * 7,
    pool=[1],
    picks=[],
)
@example(  # a shared value noted on a line refused later: walked again when next met
    requests=[{"x": 1}, {"x": 1}, {"x": 1}],
    refused=[True] + [False] * 6,
    pool=[{"k": 1}, {"k": "s"}],
    picks=[("s", 0), ("s", 0), ("s", 1)],
)
@given(
    requests=st.lists(_CHECK_LINES, max_size=7),
    refused=st.lists(st.booleans(), min_size=7, max_size=7),
    pool=st.lists(_CHECK_VALUES, min_size=1, max_size=3),
    picks=st.lists(st.tuples(st.sampled_from(["s", "a", "t"]), st.integers(0, 3)), max_size=7),
)
def test_check_gives_what_scan_and_add_give(
    requests: list[Any], refused: list[bool], pool: list[Any], picks: list[tuple[str, int]]
) -> None:
    """Bad lines, lines that are not plain (str and int subclasses, bytes, tuples), NaN, deep
    ones, type clashes, lines refused after the check (``undo``), values shared between lines
    (the same objects under ``shared`` fields, walked once): the same four answers (all but
    those a bad line's early stop leaves open), the same first clash named the same way, and a
    refused line leaves nothing behind."""
    types = _field_types.FieldTypes()
    kept: list[tuple[Any, str]] = []
    for number, request in enumerate(requests):
        key = f"key-{number}"
        if number < len(picks) and type(request) is dict:  # a shared value, the same object
            name, which = picks[number]
            request = {**request, name: pool[which % len(pool)]}
        (bad, canonical, plain, fixed), clash = _reference_check(kept, request, key)
        got = types.check(request, key, ("s", "t"))
        if bad:
            assert got[0] is True and got[1] is False and got[4] is None
            continue
        assert got == (bad, canonical, plain, fixed, clash)
        if plain and clash is None:
            if refused[number]:  # refused later (not JSON, say): forgotten
                types.undo()
            else:
                kept.append((request, key))


# --- a Gemini config is validated once per distinct config, exactly ---------------------------


def _gemini_or_error(request: vb.GeminiRequest) -> object:
    from vertexbatch._errors import InvalidRequestError
    from vertexbatch._requests.lines import gemini_line

    try:
        line = gemini_line(request)
    except InvalidRequestError as exc:
        return ("refused", str(exc), exc.field)
    return line, line.key_record()


def _unremembered(request: vb.GeminiRequest, monkeypatch: pytest.MonkeyPatch) -> object:
    """The line (or the refusal) with no config remembered: the config validated afresh."""
    from vertexbatch._requests import gemini_body as _gemini_body

    with monkeypatch.context() as m:
        m.setattr(_gemini_body, "_config_key", lambda config: None)
        return _gemini_or_error(request)


class _Word(str):
    """A str subclass (as a str enum's member is)."""


def test_equal_dict_configs_are_validated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A job's requests with equal dict configs (built per request, as the benchmark's are)
    validate the config once, and each line is what a freshly validated config gives."""
    from benchmarks import workload
    from vertexbatch._requests import gemini_body as _gemini_body

    _gemini_body._PARTS.clear()
    calls: list[object] = []
    real = _gemini_body._config

    def counted(key: str, config: object) -> dict[str, Any]:
        calls.append(config)
        return real(key, config)

    requests = list(workload.gemini_requests(100))
    with monkeypatch.context() as m:
        m.setattr(_gemini_body, "_config", counted)
        lines = [_gemini_or_error(r) for r in requests]
    assert len(calls) == 1
    assert lines == [_unremembered(r, monkeypatch) for r in requests]


_CONFIG_VALUES = st.sampled_from(
    [1, 1.0, True, 0, 0.0, -0.0, 2, 2.0, 1e-05, 1e16, 2**64 - 1, 2**70, float("nan"),
     float("inf"), "1", "", "é", _Word("x"), "x", None, [], [1], (1,), {}, {"type": "integer"},
     uuid.UUID(int=1), {"type": "STRING"}, {"a": {}}]
)  # fmt: skip
_CONFIG_FIELDS = st.sampled_from(
    ["temperature", "max_output_tokens", "response_json_schema", "labels", "seed", "top_k",
     "stop_sequences", "system_instruction", "httpOptions", "not_a_field", "response_schema"]
)  # fmt: skip


class _Colour(enum.Enum):
    RED = "x"


@settings(max_examples=examples(600), deadline=None)
@example(changes=[("temperature", None), ("temperature", float("nan"))], fresh=[False] * 8)
@example(changes=[("seed", None), ("seed", float("inf"))], fresh=[True] * 8)
@example(
    changes=[("response_json_schema", {"a": v}) for v in (1, 1.0, True, 0.0, -0.0, 0)],
    fresh=[False] * 8,
)
@example(
    changes=[("labels", {"a": v}) for v in ("x", _Word("x"), _Colour.RED, uuid.UUID(int=1))],
    fresh=[False] * 8,
)
@example(
    changes=[("response_json_schema", {"a": v}) for v in ("x", _Colour.RED, (1,), [1])],
    fresh=[False] * 8,
)
@given(
    changes=st.lists(
        st.tuples(_CONFIG_FIELDS, _CONFIG_VALUES | st.dictionaries(_TEXT, _CONFIG_VALUES)),
        min_size=1,
        max_size=8,
    ),
    fresh=st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_a_config_changed_between_requests_gives_what_it_holds(
    changes: list[tuple[str, object]], fresh: list[bool]
) -> None:
    """One dict config changed in place between requests (or an equal copy given): each line,
    or its refusal, is what that config validated afresh gives. Values that are equal but not
    the same JSON (1, 1.0 and True; 0.0 and -0.0), NaN, big integers, a str subclass, a tuple,
    an unknown or client-only field."""
    import copy

    from vertexbatch._requests import gemini_body as _gemini_body

    _gemini_body._PARTS.clear()
    config: dict[str, object] = {"temperature": 0.5}
    with pytest.MonkeyPatch.context() as m:
        for number, (name, value) in enumerate(changes):
            config[name] = value
            given = copy.deepcopy(config) if fresh[number] else config
            request = vb.GeminiRequest(f"k{number}", "Hi", given)
            assert _gemini_or_error(request) == _unremembered(request, m)


def _staged_or_error(requests: list[vb.GeminiRequest] | list[vb.ClaudeRequest]) -> object:
    """The staged lines and key records of ``requests`` (all of one provider), and the error
    that stopped them, if any."""
    from vertexbatch._errors import InvalidRequestError
    from vertexbatch._requests.lines import claude_line, gemini_line
    from vertexbatch._submission.lines import staged_lines as _staged_lines

    claude = bool(requests) and isinstance(requests[0], vb.ClaudeRequest)
    kind, build = (vb.ClaudeRequest, claude_line) if claude else (vb.GeminiRequest, gemini_line)
    lines: list[object] = []
    try:
        for line in _staged_lines(requests, kind, build):
            lines.append((line, line.key_record()))
    except InvalidRequestError as exc:
        return lines, str(exc)
    return lines, None


_SCHEMA_TYPES = st.sampled_from(["string", ["string", "null"], 1, {"a": 1}, None])


@settings(max_examples=examples(300), deadline=None)
@given(
    configs=st.lists(
        st.fixed_dictionaries(
            {"response_json_schema": st.fixed_dictionaries({"type": _SCHEMA_TYPES})},
            optional={
                "system_instruction": st.sampled_from(["sys", "other"]),
                "temperature": st.sampled_from([0.5, 1, 2.0]),
                "labels": st.sampled_from([{"team": "a"}, {"team": "b"}]),
            },
        ),
        min_size=1,
        max_size=3,
    ),
    picks=st.lists(st.integers(0, 2), min_size=1, max_size=8),
)
def test_lines_of_shared_configs_are_checked_as_fresh_ones(
    configs: list[dict[str, Any]], picks: list[int]
) -> None:
    """Requests drawing equal copies of a few configs (a config's parts shared between lines
    and walked once): the same lines, or the same first clash between lines, as configs
    validated afresh for every request."""
    import copy

    from vertexbatch._requests import gemini_body as _gemini_body

    requests = [
        vb.GeminiRequest(f"k{n}", "Hi", copy.deepcopy(configs[pick % len(configs)]))
        for n, pick in enumerate(picks)
    ]
    _gemini_body._PARTS.clear()
    remembered = _staged_or_error(requests)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_gemini_body, "_config_key", lambda config: None)
        assert remembered == _staged_or_error(requests)


def test_a_shared_config_is_walked_once_per_input() -> None:
    """The parts of one config shared by a job's lines are noted by the input's field types
    (and so not walked again), the labels, which each line replaces, aside."""
    from vertexbatch._requests.importer_types import FieldTypes
    from vertexbatch._requests.lines import gemini_line

    types = FieldTypes()
    config = {"system_instruction": "s", "temperature": 0.5, "labels": {"team": "a"}}
    lines = [gemini_line(vb.GeminiRequest(f"k{n}", "Hi", dict(config)), types) for n in range(3)]
    assert sorted(types._shared) == ["generationConfig", "systemInstruction"]
    assert all(b'"labels":{"team":"a","vb_key":"k' in line.data for line in lines)


_SYSTEMS = st.sampled_from(
    ["be brief", "be brief", "é\u2028", _Word("be brief"), [{"type": "text", "text": "x"}],
     [{"type": "text", "text": 1}], [{"type": "image"}], "", None, 3]
)  # fmt: skip


@settings(max_examples=examples(300), deadline=None)
@given(systems=st.lists(_SYSTEMS, min_size=1, max_size=8))
def test_lines_of_shared_system_prompts_are_checked_as_fresh_ones(systems: list[object]) -> None:
    """Claude requests with equal system strings (their blocks shared between lines and walked
    once) and other systems: the same lines, or the same refusal, as fresh blocks each time."""
    from vertexbatch._requests import claude_shape as _claude_shape

    requests = [
        vb.ClaudeRequest(
            f"k{n}",
            {"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "system": system},
        )
        for n, system in enumerate(systems)
    ]
    _claude_shape._SYSTEM_BLOCKS.clear()
    shared = _staged_or_error(requests)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_claude_shape, "_system_blocks", lambda s: [{"type": "text", "text": s}])
        assert shared == _staged_or_error(requests)


def test_a_shared_system_prompt_is_walked_once_per_input() -> None:
    """Equal system strings become one list of blocks, noted by the input's field types."""
    from vertexbatch._requests.claude_shape import one_shape
    from vertexbatch._requests.importer_types import FieldTypes
    from vertexbatch._requests.lines import claude_line

    types = FieldTypes()
    params = {"max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
    for n in range(3):
        claude_line(
            vb.ClaudeRequest(f"k{n}", {**params, "system": "".join(["be ", "brief"])}), types
        )
    assert list(types._shared) == ["system"]
    blocks = one_shape({"system": "".join(["be ", "brief"])})["system"]
    assert blocks == [{"type": "text", "text": "be brief"}]
    assert types._shared["system"][0] is blocks is one_shape({"system": "be brief"})["system"]
