"""Input lines and correlation: what goes on the wire, and how echoes find their key."""

import json
import random
from typing import Any

import pytest
from google.genai import types
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from tests.helpers import examples
from vertexbatch import ClaudeRequest, GeminiRequest, InvalidRequestError
from vertexbatch._requests.claude_shape import one_shape
from vertexbatch._requests.digests import canonical_digest, key_digest
from vertexbatch._requests.keymap import KeyMap
from vertexbatch._requests.lines import ANTHROPIC_VERSION, claude_line, gemini_line


def _claude(key: str = "k1", **params: Any) -> ClaudeRequest:
    base = {"max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]}
    return ClaudeRequest(key, {**base, **params})


def test_claude_line_shape() -> None:
    """A Claude line carries the digest as custom_id and sets anthropic_version."""
    line = claude_line(_claude())
    data = json.loads(line.data)
    assert data["custom_id"] == key_digest("k1")
    assert data["request"]["anthropic_version"] == ANTHROPIC_VERSION
    assert line.data.endswith(b"\n") and line.data.count(b"\n") == 1


def test_claude_keeps_caller_anthropic_version() -> None:
    """A caller-set anthropic_version is kept."""
    data = json.loads(claude_line(_claude(anthropic_version="vertex-2025-08-04")).data)
    assert data["request"]["anthropic_version"] == "vertex-2025-08-04"


def test_key_digest_fits_custom_id_and_labels() -> None:
    """Digests are 33 chars of [a-z0-9], starting with a letter, and differ per key."""
    digests = {key_digest(k) for k in ["a", "b", "ü" * 500, "0000"]}
    assert len(digests) == 4
    for d in digests:
        assert len(d) == 33 and d[0] == "k" and d.isalnum() and d == d.lower()


def test_claude_missing_required_params() -> None:
    """Claude params without max_tokens or messages are refused with the key named."""
    with pytest.raises(InvalidRequestError, match="'x' lack 'max_tokens'"):
        claude_line(ClaudeRequest("x", {"messages": []}))
    with pytest.raises(InvalidRequestError, match="'x' lack 'messages'"):
        claude_line(ClaudeRequest("x", {"max_tokens": 8}))


SECRET = "do-not-echo-this"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"max_tokens": 8, "messages": SECRET}, "give 'messages' as str: Claude needs a list"),
        ({"max_tokens": 8, "messages": []}, "give 'messages' as an empty list"),
        ({"max_tokens": 8, "messages": {"role": SECRET}}, "give 'messages' as dict"),
        ({"max_tokens": 0, "messages": [{"role": "user", "content": SECRET}]}, "as 0: Claude"),
        ({"max_tokens": -5, "messages": [{"role": "user", "content": SECRET}]}, "as -5"),
        ({"max_tokens": True, "messages": [{"role": "user", "content": "x"}]}, "as bool"),
        ({"max_tokens": "64", "messages": [{"role": "user", "content": "x"}]}, "as str"),
        ({"max_tokens": 1.5, "messages": [{"role": "user", "content": "x"}]}, "as float"),
    ],
)
def test_claude_messages_and_max_tokens_are_checked_before_staging(
    params: dict[str, Any], message: str
) -> None:
    """What the Messages API refuses line by line is refused before staging, by key and rule,
    never quoting the request."""
    with pytest.raises(InvalidRequestError, match=message) as info:
        claude_line(ClaudeRequest("x", params))
    assert "'x'" in str(info.value) and SECRET not in str(info.value)
    assert info.value.field == "params"


@pytest.mark.parametrize("contents", [[], ()])
def test_gemini_contents_of_no_turn_are_refused(contents: Any) -> None:
    with pytest.raises(InvalidRequestError, match="'x' are empty: a Gemini request needs"):
        gemini_line(GeminiRequest("x", contents))


def test_unserialisable_params() -> None:
    """Params JSON cannot hold are refused without their content in the message."""
    with pytest.raises(InvalidRequestError, match="not JSON data") as info:
        claude_line(_claude(metadata={"secret-value": object()}))
    assert "secret-value" not in str(info.value)
    assert "params.metadata.<field 1> is a value of type object" in str(info.value)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"tools": [{"name": "t", "input_schema": {}}]}, "empty object"),
        ({"metadata": {"$defs": 1}}, "not a valid column name"),
        ({"metadata": json.loads('{"a":' * 15 + "1" + "}" * 15)}, "deeper than 15 levels"),
        ({"metadata": json.loads("[" * 15 + "1" + "]" * 15)}, "deeper than 15 levels"),
        ({"metadata": json.loads('[{"a":' * 8 + "1" + "}]" * 8)}, "deeper than 15 levels"),
        ({"stop_sequences": ["a", None]}, r"params.stop_sequences\[1\] is null inside a list"),
    ],
)
def test_importer_rules_are_checked_before_upload(extra: dict[str, Any], message: str) -> None:
    """Lines Vertex's importer would fail the whole job on are refused up front."""
    with pytest.raises(InvalidRequestError, match=message):
        claude_line(_claude(**extra))


def test_depth_counts_lists_and_objects() -> None:
    """15 levels of lists and objects together pass (the request is the first), as the local
    stack's importer counts them; one more is refused (test_importer_rules_...)."""
    claude_line(_claude(metadata=json.loads('{"a":' * 14 + "1" + "}" * 14)))
    claude_line(_claude(metadata=json.loads("[" * 14 + "1" + "]" * 14)))
    claude_line(_claude(metadata={"a": json.loads('[{"a":' * 6 + "[1]" + "}]" * 6)}))


def test_gemini_line_from_types_and_dicts_agree() -> None:
    """google-genai types and their dict forms give one line."""
    typed = GeminiRequest(
        "t1",
        [types.Content(role="user", parts=[types.Part(text="Hello")])],
        types.GenerateContentConfig(
            system_instruction="Be brief",
            temperature=0.2,
            max_output_tokens=256,
            labels={"team": "a"},
            safety_settings=[
                types.SafetySetting(
                    category=types.HarmCategory.HARM_CATEGORY_HATE_SPEECH,
                    threshold=types.HarmBlockThreshold.BLOCK_ONLY_HIGH,
                )
            ],
        ),
    )
    as_dicts = GeminiRequest(
        "t1",
        [{"role": "user", "parts": [{"text": "Hello"}]}],
        {
            "system_instruction": "Be brief",
            "temperature": 0.2,
            "max_output_tokens": 256,
            "labels": {"team": "a"},
            "safety_settings": [
                {"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_ONLY_HIGH"}
            ],
        },
    )
    line = json.loads(gemini_line(typed).data)
    assert line == json.loads(gemini_line(as_dicts).data)
    request = line["request"]
    assert line["vb_key"] == key_digest("t1")
    assert request["labels"] == {"team": "a", "vb_key": key_digest("t1")}
    assert request["systemInstruction"] == {"role": "user", "parts": [{"text": "Be brief"}]}
    assert request["generationConfig"] == {"temperature": 0.2, "maxOutputTokens": 256}
    assert request["safetySettings"][0]["threshold"] == "BLOCK_ONLY_HIGH"


def test_gemini_string_contents_is_one_user_turn() -> None:
    """A plain string is one user turn, as in google-genai."""
    request = json.loads(gemini_line(GeminiRequest("a", "Hi")).data)["request"]
    assert request["contents"] == [{"role": "user", "parts": [{"text": "Hi"}]}]


def test_gemini_bad_config_names_field() -> None:
    """An unknown config field is refused, named by position (its name may be content)."""
    with pytest.raises(InvalidRequestError, match=r"config\.<field 2> \(unknown field\)") as info:
        gemini_line(GeminiRequest("a", "Hi", {"temperature": 1, "temprature": 1}))
    assert "temprature" not in str(info.value) and info.value.field == "config"


def test_gemini_reserved_label() -> None:
    """The correlation label cannot be set by the caller."""
    with pytest.raises(InvalidRequestError, match="reserves"):
        gemini_line(GeminiRequest("a", "Hi", {"labels": {"vb_key": "x"}}))


def test_gemini_empty_tool_object_is_refused() -> None:
    """GoogleSearch() serialises to {}, which fails Vertex's importer: refused up front."""
    config = types.GenerateContentConfig(tools=[types.Tool(google_search=types.GoogleSearch())])
    with pytest.raises(InvalidRequestError, match="empty object"):
        gemini_line(GeminiRequest("a", "Hi", config))


def _normalise_like_vertex(request: dict[str, Any], rng: random.Random) -> Any:
    """Inject nulls, turn ints to floats and shuffle key order, as the importer does."""
    if isinstance(request, dict):
        items = [(k, _normalise_like_vertex(v, rng)) for k, v in request.items()]
        items += [("injectedField", None), ("fileData", None)]
        rng.shuffle(items)
        return dict(items)
    if isinstance(request, list):
        return [_normalise_like_vertex(v, rng) for v in request]
    if isinstance(request, int) and not isinstance(request, bool):
        return float(request)
    return request


def test_canonical_digest_survives_importer_normalisation() -> None:
    """An echoed request with nulls, floats and reordered keys has the staged digest."""
    line = json.loads(
        gemini_line(
            GeminiRequest(
                "a", "Hi", {"temperature": 1, "max_output_tokens": 5, "labels": {"x": "y"}}
            )
        ).data
    )
    request = line["request"]
    echo = _normalise_like_vertex(request, random.Random(3))
    del echo["labels"]  # labels not echoed
    assert canonical_digest(echo) == canonical_digest(request)
    changed = {**request, "contents": [{"role": "user", "parts": [{"text": "Ho"}]}]}
    assert canonical_digest(changed) != canonical_digest(request)


def test_key_map_matches_by_id_label_sibling_and_canonical() -> None:
    """Rows find their key by custom_id, label, sibling field, or the echoed request alone."""
    lines = [gemini_line(GeminiRequest(k, f"prompt {k}")) for k in ["a", "b", "c", "d"]]
    km = KeyMap()
    for line in lines:
        km.add(line.key, line.digest, line.canonical)
    requests = [json.loads(line.data)["request"] for line in lines]
    assert km.match({"custom_id": key_digest("a")}) == 0
    assert km.match({"request": requests[1]}) == 1  # label echoed
    assert km.match({"vb_key": key_digest("c"), "request": {}}) == 2
    bare = {k: v for k, v in requests[3].items() if k != "labels"}
    assert km.match({"request": bare}) == 3
    assert km.match({"request": {"contents": []}}) is None
    assert km.find_digest(b'garbage {"vb_key": "' + key_digest("b").encode() + b'"') == 1


def test_identical_requests_each_take_one_row() -> None:
    """Two keys with identical requests each get one echoed row, not both the same."""
    lines = [gemini_line(GeminiRequest(k, "same")) for k in ["a", "b"]]
    km = KeyMap()
    for line in lines:
        km.add(line.key, line.digest, line.canonical)
    bare = {k: v for k, v in json.loads(lines[0].data)["request"].items() if k != "labels"}
    first = km.match({"request": bare})
    assert first is not None
    second = km.match({"request": bare}, {first})
    assert {first, second} == {0, 1}


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(-3, 3, allow_nan=False)
    | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "labels", "C"]), inner, min_size=1, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=examples(300), deadline=None)
@given(
    extra=st.dictionaries(
        st.sampled_from(["metadata", "system", "labels", "stop"]), _json, max_size=3
    )
)
def test_staged_canonical_digest_matches_the_line(extra: dict[str, Any]) -> None:
    """The digest taken while serialising equals the canonical digest of the staged request."""
    try:
        line = claude_line(_claude(**extra))
    except InvalidRequestError:
        reject()  # an empty object somewhere: refused, as the importer would
    staged = json.loads(line.data)
    assert line.canonical == canonical_digest(staged["request"])
    expected = one_shape({**_claude(**extra).params, "anthropic_version": ANTHROPIC_VERSION})
    assert staged["request"] == expected


def test_non_json_values_in_contents_are_converted() -> None:
    """google-genai objects nested in dict contents are dumped, not refused."""
    request = GeminiRequest("a", [{"role": "user", "parts": [types.Part(text="Hi")]}])
    staged = json.loads(gemini_line(request).data)["request"]
    assert staged["contents"] == [{"role": "user", "parts": [{"text": "Hi"}]}]


def test_a_refused_line_leaves_no_field_types_behind() -> None:
    """A line refused after its walk (NaN is not JSON) records no field types: the next lines
    are numbered and typed as if it was never given."""
    from vertexbatch._requests.importer_types import FieldTypes

    types = FieldTypes()
    claude_line(_claude("k0", temperature=0.5), types)
    with pytest.raises(InvalidRequestError, match="NaN"):
        claude_line(_claude("k1", metadata={"user_id": float("nan")}), types)
    claude_line(_claude("k2", metadata={"user_id": "u"}), types)  # no clash with the NaN line
    with pytest.raises(InvalidRequestError, match=r"line 3 \(request 'k3'\).* line 1 \("):
        claude_line(_claude("k3", temperature="hot"), types)


def test_a_claude_refusal_names_the_place_in_the_callers_shape() -> None:
    """A string staged as a block (``system``, a message's content) is named as the caller
    wrote it, not as the block it became; the caller's params are left as they were."""
    params = {"max_tokens": 5, "system": "\ud800", "messages": [{"role": "user", "content": "x"}]}
    with pytest.raises(InvalidRequestError, match=r"params\.system is not JSON: not UTF-8"):
        claude_line(ClaudeRequest("k", params))
    params["system"] = "fine"
    params["messages"] = [{"role": "user", "content": "\udc00"}]
    with pytest.raises(InvalidRequestError, match=r"params\.messages\[0\]\.content is not JSON"):
        claude_line(ClaudeRequest("k", params))
    assert params == {
        "max_tokens": 5,
        "system": "fine",
        "messages": [{"role": "user", "content": "\udc00"}],
    }


def test_the_per_line_cpu_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m benchmarks.lines_cpu`` prints a row per provider with its ratios."""
    from benchmarks import lines_cpu

    lines_cpu.main(["--n", "200", "--repeats", "1"])
    rows = capsys.readouterr().out.splitlines()
    assert [row.split(" | ")[0] for row in rows[2:]] == ["| claude", "| gemini"]
    assert all(row.endswith("x |") for row in rows[2:])
