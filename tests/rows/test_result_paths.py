"""The results fast paths give exactly what the checked paths give: results built through slot
setters, usual rows classified without the wrapper and status checks, metrics attributes reused."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import pickle
from collections.abc import Mapping
from itertools import pairwise
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

import vertexbatch as vb
from tests.helpers import examples
from tests.rows.test_outcomes import ALL_ROWS
from vertexbatch._observe.metrics import OPERATION, PROVIDER, Telemetry
from vertexbatch._requests.digests import key_digest
from vertexbatch._requests.keymap import KeyMap, parse_key_record
from vertexbatch._rows.build import result_of, usage_of
from vertexbatch._rows.classify import classify_row, claude_usage
from vertexbatch._rows.content import GEMINI_OTHER_PARTS
from vertexbatch._rows.fast_path import row_reader
from vertexbatch._values import Job, Refusal, Result, Usage

_COUNTS = st.integers(min_value=0, max_value=2**63 - 1)
_ERRORS = st.sampled_from(
    [
        None,
        vb.RefusedError("request refused by the provider", key="k"),
        vb.TruncatedError("answer stopped at the token limit", key="k"),
        vb.LineError("x", key="k", status="NOT_FINISHED", transient=True),
        vb.LineError("x", key="k", code=400, status="INVALID_ARGUMENT", transient=False),
        vb.MissingError("no output line for this key", key="k"),
        vb.ResultError("x", key="k"),  # "failed", as a permanent LineError: told apart by type
    ]
)


def _fields(value: object) -> list[tuple[str, object]]:
    return [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]  # type: ignore[arg-type]


@settings(max_examples=examples(300), deadline=None)
@given(
    counts=st.tuples(_COUNTS, _COUNTS, _COUNTS, _COUNTS),
    key=st.text(min_size=1, max_size=8),
    text=st.text(max_size=8),
    stop=st.text(max_size=8),
    refusal=st.none() | st.builds(Refusal, st.text(max_size=4), st.text(max_size=4)),
    error=_ERRORS,
    response=st.none() | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
def test_results_built_fast_are_the_constructors_results(
    counts: tuple[int, int, int, int],
    key: str,
    text: str,
    stop: str,
    refusal: Refusal | None,
    error: vb.ResultError | None,
    response: dict[str, int] | None,
) -> None:
    """Every field the same object, equal, the same hash and repr, frozen, pickled alike."""
    usage, plain_usage = usage_of(*counts), Usage(*counts)
    assert _fields(usage) == _fields(plain_usage)
    assert (usage, hash(usage), repr(usage)) == (plain_usage, hash(plain_usage), repr(plain_usage))
    fast = result_of(key, text, usage, stop, refusal, error, response)
    plain = Result(
        key=key, text=text, usage=usage, stop=stop, refusal=refusal, error=error, response=response
    )
    assert all(a is b for (_, a), (_, b) in zip(_fields(fast), _fields(plain), strict=True))
    assert (fast, hash(fast), repr(fast)) == (plain, hash(plain), repr(plain))
    assert (fast.ok, fast.outcome) == (plain.ok, plain.outcome)
    assert pickle.dumps(fast) == pickle.dumps(plain)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.key = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        usage.input = 1  # type: ignore[misc]


def _checked(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The same row with each object the classifiers read as a mapping (the row, its response,
    usage, feedback, Claude content blocks, Gemini candidates, contents and parts) a mapping
    that is not a dict: classify_row and the content readers take their checked paths all the
    way down. Other values are kept as they are (``str`` of a mapping proxy is not a dict's)."""
    response = row.get("response")
    if isinstance(response, dict):
        return MappingProxyType({**row, "response": _proxy(response, _RESPONSE_PATHS)})
    return MappingProxyType(dict(row))


# Each field whose value the classifiers read as a mapping, or as a list of mappings, and the
# fields of that value they read so in turn.
_RESPONSE_PATHS: dict[str, Any] = {
    "content": {},  # Claude: a list of blocks
    "usage": {},
    "stop_details": {},
    "usageMetadata": {},
    "usage_metadata": {},
    "promptFeedback": {},
    "prompt_feedback": {},
    "candidates": {
        "content": {
            "parts": {
                "functionCall": {},
                "function_call": {},
                **{key: {} for key in GEMINI_OTHER_PARTS},
            }
        }
    },
}


def _proxy(value: Any, paths: dict[str, Any]) -> Any:
    if isinstance(value, list):
        return [_proxy(v, paths) for v in value]
    if not isinstance(value, dict):
        return value
    return MappingProxyType({k: _proxy(v, paths[k]) if k in paths else v for k, v in value.items()})


def _plain(value: Any) -> Any:
    """``value`` with every mapping in it a dict again, to compare."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _same(fast: Result, checked: Result) -> None:
    assert _fields(fast)[:5] == _fields(checked)[:5]  # key, text, usage, stop, refusal
    assert fast.tool_calls == checked.tool_calls
    assert type(fast.error) is type(checked.error)
    assert repr(fast.error) == repr(checked.error)
    if fast.error is not None:
        assert vars(fast.error) == vars(checked.error)
    assert (fast.response is None) == (checked.response is None)
    if fast.response is not None:
        assert _plain(fast.response) == _plain(checked.response)
    assert (fast.shared, fast.cached, fast.outcome) == (
        checked.shared,
        checked.cached,
        checked.outcome,
    )


@pytest.mark.parametrize(("line", "provider"), ALL_ROWS)
def test_every_row_kind_classifies_as_the_checked_path_does(
    line: dict[str, Any], provider: vb.Provider
) -> None:
    """Each row of test_outcomes' tables (answers, refusals, truncations, failures, wrappers,
    usage shapes), for both providers: the same Result field by field."""
    for row in (line, {**line, "status": None}, {**line, "status": ""}):
        checked = classify_row(_checked(row), key="k", provider=provider)
        _same(classify_row(row, key="k", provider=provider), checked)
        _same(row_reader(provider)(row, "k"), checked)


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**64) | st.floats() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=10,
)
_CLAUDE_KEYS = st.sampled_from(
    ["type", "content", "stop_reason", "usage", "stop_details", "error", "body"]
)
_GEMINI_KEYS = st.sampled_from(
    ["candidates", "usageMetadata", "usage_metadata", "promptFeedback", "error", "body"]
)


@settings(max_examples=examples(1000), deadline=None)
@given(
    claude=st.dictionaries(_CLAUDE_KEYS, _VALUES, max_size=5),
    gemini=st.dictionaries(_GEMINI_KEYS, _VALUES, max_size=5),
    stop=st.sampled_from(["end_turn", "max_tokens", "refusal", "pause_turn", "tool_use", None, 3]),
    finish=st.sampled_from(["STOP", "MAX_TOKENS", "SAFETY", 2, None, ""]),
    text=_VALUES,
    counts=st.dictionaries(
        st.sampled_from(
            ["input_tokens", "output_tokens", "promptTokenCount", "thoughtsTokenCount"]
        ),
        _VALUES,
    ),
)
def test_any_response_classifies_as_the_checked_path_does(
    claude: dict[str, Any],
    gemini: dict[str, Any],
    stop: object,
    finish: object,
    text: object,
    counts: dict[str, Any],
) -> None:
    """Responses of any shape, near the usual one and far from it: the same Result."""
    claude.setdefault("stop_reason", stop)
    claude.setdefault("content", [{"type": "text", "text": text}])
    claude.setdefault("usage", counts)
    gemini.setdefault(
        "candidates", [{"content": {"parts": [{"text": text}]}, "finishReason": finish}]
    )
    gemini.setdefault("usageMetadata", counts)
    for response, provider in ((claude, "anthropic"), (gemini, "google")):
        row = {"status": "", "processed_time": "t", "response": response}
        checked = classify_row(_checked(row), key="k", provider=provider)  # type: ignore[arg-type]
        _same(classify_row(row, key="k", provider=provider), checked)  # type: ignore[arg-type]
        _same(row_reader(provider)(row, "k"), checked)  # type: ignore[arg-type]


def _usual_claude() -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "answer"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 3},
    }


def _usual_gemini() -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "answer"}]}, "finishReason": "STOP"}
        ],
        "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 3},
    }


def _set(path: tuple[Any, ...], value: Any) -> Any:
    """A change to the usual response: ``value`` at ``path`` (``...``: the key is removed)."""

    def change(response: dict[str, Any]) -> None:
        node = response
        for step in path[:-1]:
            node = node[step]
        if value is ...:
            node.pop(path[-1], None)
        else:
            node[path[-1]] = value

    return change


_WEIRD = [None, "", 0, 3, -1, 2**63, 2.0, "12", True, [], {}, "x"]
_CLAUDE_CHANGES = [
    *(_set(("type",), v) for v in ("error", None, "other")),
    *(
        _set(("stop_reason",), v)
        for v in ("stop_sequence", "tool_use", "max_tokens", "refusal", "pause_turn", None, 3)
    ),
    *(_set(("content", 0, "text"), v) for v in _WEIRD),
    *(_set(("content", 0, "type"), v) for v in ("tool_use", "thinking", None)),
    _set(("content", 0, "name"), "f"),
    _set(("content",), [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]),
    _set(("content",), [{"type": "tool_use", "name": "f", "input": {}, "id": "t"}]),
    _set(("content",), "a string"),
    _set(("content",), []),
    *(_set(("usage",), v) for v in (None, [], "x", {})),
    *(
        _set(("usage", name), v)
        for name in (
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        )
        for v in _WEIRD
    ),
    _set(("error",), {"type": "overloaded_error", "message": "m"}),
    _set(("body",), {"type": "message"}),
    _set(("stop_details",), {"category": "cyber"}),
]
_GEMINI_CHANGES = [
    _set(("type",), "error"),
    _set(("error",), {"code": 429, "status": "RESOURCE_EXHAUSTED"}),
    _set(("body",), {}),
    *(_set(("promptFeedback",), v) for v in ({}, {"blockReason": "SAFETY"}, {"blockReason": ""})),
    _set(("prompt_feedback",), {"block_reason": "OTHER"}),
    *(_set(("candidates",), v) for v in ([], None, "x", [3])),
    *(_set(("candidates", 0, "finishReason"), v) for v in ("MAX_TOKENS", "SAFETY", 1, 2, None,
                                                            "")),
    _set(("candidates", 0, "finish_reason"), "STOP"),
    _set(("candidates", 0, "finish_reason"), "SAFETY"),
    _set(("candidates", 0, "finishMessage"), "why"),
    *(_set(("candidates", 0, "content"), v) for v in (None, [], "x")),
    *(_set(("candidates", 0, "content", "parts"), v) for v in (None, [], "x", [3],
                                                                 [{"text": "a"}, {"text": "b"}])),
    *(_set(("candidates", 0, "content", "parts", 0, "text"), v) for v in _WEIRD),
    *(_set(("candidates", 0, "content", "parts", 0, "thought"), v) for v in (True, False, 1)),
    *(_set(("candidates", 0, "content", "parts", 0, "functionCall"), v)
      for v in ({"name": "f", "args": {}}, {"name": ""}, {}, 3, None)),
    _set(("candidates", 0, "content", "parts", 0, "function_call"), {"name": "g"}),
    *(_set(("candidates", 0, "content", "parts", 0, name), v) for name in GEMINI_OTHER_PARTS
      for v in ({"data": "iVBO"}, {}, "x")),
    _set(("candidates", 0, "content", "parts"), [{"inlineData": {"data": "iVBO"}}]),
    _set(("candidates", 0, "content", "parts"), [{"text": "t", "thought": True},
                                                 {"fileData": {"fileUri": "gs://b/o"}}]),
    *(_set(("usageMetadata",), v) for v in (None, [], {}, ...)),
    _set(("usage_metadata",), {"prompt_token_count": 4}),
    lambda response: response.update(usage_metadata=response.pop("usageMetadata", None)),
    *(_set(("usageMetadata", name), v) for name in ("promptTokenCount", "candidatesTokenCount",
                                                    "thoughtsTokenCount",
                                                    "cachedContentTokenCount",
                                                    "toolUsePromptTokenCount") for v in _WEIRD),
]  # fmt: skip


@settings(max_examples=examples(1500), deadline=None)
@given(
    status=st.sampled_from(["", None, " ", "Bad Request", {"code": 0}]),
    claude=st.sets(st.integers(0, len(_CLAUDE_CHANGES) - 1), max_size=3),
    gemini=st.sets(st.integers(0, len(_GEMINI_CHANGES) - 1), max_size=3),
)
def test_usual_rows_read_as_the_checked_path_reads_them(
    status: object, claude: set[int], gemini: set[int]
) -> None:
    """``row_reader``'s one-step reading of the usual answer, and of rows up to three changes
    away from it (another stop or finish, a second block or part, a thought, a call, feedback,
    an error field, a wrapper, counts that are not plain ints, a status): the Result
    ``classify_row`` gives."""
    rows = []
    for usual, changes, chosen, provider in (
        (_usual_claude(), _CLAUDE_CHANGES, claude, "anthropic"),
        (_usual_gemini(), _GEMINI_CHANGES, gemini, "google"),
    ):
        for index in sorted(chosen):
            # An earlier change may have taken this one's path away.
            with contextlib.suppress(KeyError, IndexError, TypeError):
                changes[index](usual)
        rows.append(({"status": status, "processed_time": "t", "response": usual}, provider))
    for row, provider in rows:
        checked = classify_row(_checked(row), key="k", provider=provider)  # type: ignore[arg-type]
        _same(row_reader(provider)(row, "k"), checked)  # type: ignore[arg-type]


def test_a_row_reader_refuses_a_provider_it_does_not_know() -> None:
    """The provider is checked once, when the reader is made, as classify_row checks it."""
    with pytest.raises(
        vb.InvalidRequestError,
        match="provider must be one of anthropic, google, embeddings, openmaas",
    ):
        row_reader("openai")  # type: ignore[arg-type]


class _Before(Telemetry):
    """Telemetry.record as it was before its attribute sets were reused."""

    def record(self, result: Result, job: Job) -> None:
        base = {
            "gen_ai.operation.name": OPERATION,
            "gen_ai.provider.name": PROVIDER,
            "gen_ai.request.model": job.model,
        }
        usage = result.usage
        if (usage.input or usage.output) and not (result.shared or result.cached):
            self._tokens.record(usage.input, {**base, "gen_ai.token.type": "input"})
            self._tokens.record(usage.output, {**base, "gen_ai.token.type": "output"})
        attributes = {**base, "vertexbatch.outcome": result.outcome}
        if result.error is not None:
            attributes["error.type"] = type(result.error).__name__
        self._results.add(1, attributes)


def _points(reader: InMemoryMetricReader) -> dict[str, list[tuple[object, ...]]]:
    data = reader.get_metrics_data()
    out: dict[str, list[tuple[object, ...]]] = {}
    for rm in data.resource_metrics if data is not None else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                out[metric.name] = sorted(
                    (
                        tuple(sorted(p.attributes.items())),
                        getattr(p, "value", None),
                        getattr(p, "sum", None),
                        getattr(p, "count", None),
                        tuple(getattr(p, "bucket_counts", ())),
                    )
                    for p in metric.data.data_points
                )
    return out


@settings(max_examples=examples(100), deadline=None)
@given(
    results=st.lists(
        st.tuples(
            st.sampled_from(["m1", "m2"]),
            st.integers(0, 5000),
            st.integers(0, 5000),
            _ERRORS,
            st.booleans(),
            st.booleans(),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_metrics_read_as_before(results: list[tuple[str, int, int, Any, bool, bool]]) -> None:
    """Results of two models, every outcome, shared and cached: a metrics reader sees the same
    points (attributes, counts, sums, buckets) as with attribute sets built per result."""
    ours_reader, before_reader = InMemoryMetricReader(), InMemoryMetricReader()
    ours = Telemetry(MeterProvider(metric_readers=[ours_reader]))
    before = _Before(MeterProvider(metric_readers=[before_reader]))
    for model, given_in, given_out, error, shared, cached in results:
        job = Job("i", "n", "anthropic", model, "gs://b/i", "gs://b/o", 1)
        result = dataclasses.replace(
            Result(key="k", usage=Usage(given_in, given_out), error=error),
            shared=shared,
            cached=cached,
        )
        ours.record(result, job)
        before.record(result, job)
    assert _points(ours_reader) == _points(before_reader)


def _state(km: KeyMap) -> tuple[object, ...]:
    return (
        km.keys,
        km._digests.items(),
        list(km._canonical),
        km._shared,
        km._primary,
        km.cached,
        km._by_cache,
        km.lines,
        km.sharing,
    )


def _added(records: list[bytes]) -> tuple[object, ...] | str:
    """What ``KeyMap.add`` makes of the records one by one (the checked path)."""
    km, seen = KeyMap(), set()
    for number, raw in enumerate(records, start=1):
        try:
            key, digest, canonical = parse_key_record(raw)
        except ValueError as exc:
            return f"line {number}: {exc}"
        if key in seen:
            return f"line {number}: a key appears twice"
        seen.add(key)
        km.add(key, digest, canonical)
    return _state(km)


def _from_records(records: list[bytes], batch: int = 1024) -> tuple[object, ...] | str:
    try:
        return _state(KeyMap.from_records(records, batch=batch))
    except ValueError as exc:
        return str(exc)


_RECORD_KEYS = st.sampled_from(["a", "b", "é", 'q"', "t\\", "\x01", "🙂"]) | st.text(max_size=4)


_RECORDS = st.lists(
    st.tuples(_RECORD_KEYS, st.integers(0, 3), st.sampled_from(["k", "c"]), st.booleans()),
    max_size=12,
)
_DAMAGE = st.sampled_from(
    [
        None,
        b"\xff",
        b"\xed\xa0\x80",
        b"[]",
        b'["x","k1"]',
        b'["a\nb","k1",""]',
        # 32 bytes where a digest goes, not lowercase hex (the plain batch's regex takes any)
        b'["u","k' + b"A" * 32 + b'",""]',
        b'["q","k' + b"0" * 15 + b'"' + b"0" * 16 + b'",""]',
        b'["c","k' + b"0" * 32 + b'","' + b"g" * 32 + b'"]',
    ]
)


def _record_lines(
    records: list[tuple[str, int, str, bool]], damage: bytes | None, where: int
) -> list[bytes]:
    lines = []
    for key, line, kind, canonical in records:
        digest = kind + key_digest(f"line {line}")[1:]
        lines.append(
            json.dumps(
                [key, digest, "ab" * 16 if canonical else ""], separators=(",", ":")
            ).encode()
        )
        if key and key.isalpha():  # the same key written raw, as StagedLine.key_record writes
            lines[-1] = lines[-1].replace(json.dumps(key).encode(), b'"' + key.encode() + b'"')
    if damage is not None:
        lines.insert(
            min(where, len(lines)),
            b'["' + damage + b'","' + key_digest("x").encode() + b'",""]'
            if damage[:1] != b"["
            else damage,
        )
    return lines


@settings(max_examples=examples(1000), deadline=None)
@given(records=_RECORDS, damage=_DAMAGE, where=st.integers(0, 12))
def test_key_maps_read_fast_are_what_add_makes(
    records: list[tuple[str, int, str, bool]], damage: bytes | None, where: int
) -> None:
    """Plain records, records with escapes, deduplicated keys (a digest seen before), cached
    keys, repeated keys, damaged and non-UTF-8 lines: the same key map, or the same error."""
    lines = _record_lines(records, damage, where)
    assert _from_records(lines) == _added(lines)


@settings(max_examples=examples(1000), deadline=None)
@given(records=_RECORDS, damage=_DAMAGE, where=st.integers(0, 12), size=st.integers(1, 4))
def test_key_maps_read_in_batches_are_what_add_makes(
    records: list[tuple[str, int, str, bool]], damage: bytes | None, where: int, size: int
) -> None:
    """The same, read a few records a batch: a repeated key, a line's other key or a damaged
    line in a later batch than the first is found, and named by its line, as ``add`` finds it,
    whichever batches are plain."""
    lines = _record_lines(records, damage, where)
    assert _from_records(lines, batch=size) == _added(lines)


@settings(max_examples=examples(1000), deadline=None)
@given(
    records=_RECORDS,
    damage=_DAMAGE,
    where=st.integers(0, 12),
    size=st.integers(1, 4),
    cuts=st.lists(st.integers(0, 13), max_size=4),
)
def test_key_maps_read_in_blocks_are_what_add_makes(
    records: list[tuple[str, int, str, bool]],
    damage: bytes | None,
    where: int,
    size: int,
    cuts: list[int],
) -> None:
    """The same, given in blocks of any size (a range's lines, as ``read_key_map`` gives them,
    empty blocks too), each read a few records a batch: a batch never spans two blocks, and the
    error names the line by its number in the whole map."""
    lines = _record_lines(records, damage, where)
    edges = [0, *sorted(cuts), len(lines)]
    blocks = [lines[start:end] for start, end in pairwise(edges)]
    try:
        read: tuple[object, ...] | str = _state(KeyMap.from_blocks(blocks, batch=size))
    except ValueError as exc:
        read = str(exc)
    assert read == _added(lines)


def _match_id_checked(km: KeyMap, row: dict[str, Any]) -> int | None:
    """``KeyMap.match_id`` through ``_digest_index`` (the checked path)."""
    for name in ("custom_id", "vb_key"):
        value = row.get(name)
        if isinstance(value, str):
            index = km._digest_index(value)
            if index is not None:
                return index
    request = row.get("request")
    labels = request.get("labels") if isinstance(request, dict) else None
    value = labels.get("vb_key") if isinstance(labels, dict) else None
    return km._digest_index(value) if isinstance(value, str) else None


_DIGESTS = st.sampled_from([key_digest("a"), key_digest("b"), key_digest("absent")]) | st.builds(
    lambda digest, at, char: digest[:at] + char + digest[at + 1 :],
    st.sampled_from([key_digest("a"), key_digest("b")]),
    st.integers(0, 34),
    st.sampled_from([" ", "_", "+", "-", "g", "A", "é", "", "0"]),
)


@settings(max_examples=examples(1000), deadline=None)
@given(
    custom_id=st.none() | _DIGESTS | st.integers(),
    sibling=st.none() | _DIGESTS,
    label=st.none() | _DIGESTS,
)
def test_ids_match_as_digest_index_matches_them(
    custom_id: object, sibling: str | None, label: str | None
) -> None:
    """Digests found, absent, cut, lengthened, with spaces, underscores, signs or upper case
    (which ``int`` reads), not strings: the same key, or none."""
    km = KeyMap()
    km.add("a", key_digest("a"), "")
    km.add("b", key_digest("b"), "")
    row: dict[str, Any] = {"custom_id": custom_id, "vb_key": sibling}
    if label is not None:
        row["request"] = {"labels": {"vb_key": label}}
    assert km.match_id(row) == _match_id_checked(km, row)


# Each token count a row may carry, and the count a Usage records of it: only an integer
# (or what reads as one) in 1..2**63-1 counts; anything else is 0.
_COUNTED = [
    (None, 0),
    (0, 0),
    (3, 3),
    (2**63 - 1, 2**63 - 1),
    (-1, 0),
    (2**63, 0),
    (2.0, 2),
    (2.5, 0),
    ("12", 12),
    (True, 0),
    ("x", 0),
    ([], 0),
]


@pytest.mark.parametrize(("value", "counted"), _COUNTED, ids=[repr(v) for v, _ in _COUNTED])
@pytest.mark.parametrize("field", ["input", "output", "cache_read", "cache_write"])
def test_claude_usage_counts_each_field_as_a_token_count(
    field: str, value: object, counted: int
) -> None:
    """Claude's usage fields, each read as a token count, the usual ones too: a negative or
    past-64-bit integer is no count (the fast path and ``classify_row`` share this reader, so
    only a test of it alone sees it)."""
    names = {
        "input": "input_tokens",
        "output": "output_tokens",
        "cache_read": "cache_read_input_tokens",
        "cache_write": "cache_creation_input_tokens",
    }
    usage = {"input_tokens": 7, "output_tokens": 5, names[field]: value}
    expected = {"input": 7, "output": 5, "cache_read": 0, "cache_write": 0, field: counted}
    assert claude_usage(usage) == Usage(**expected)
