"""Adversarial input: what a request may hold, refused before any cloud call and never echoed.

Issue 10, defects 2, 6, 8 and 14 and their siblings: values that are not JSON (NaN, Infinity,
non-string keys, sets, bytes, lone surrogates, integers too long to write), request content in
errors, reprs, pickles, chained causes and logs, and fields batch prediction cannot honour
(``stream``, ``model`` in params, client-only google-genai fields). All go through
``vertexbatch.Client`` against the local stack, or the ``vertexbatch`` command.
"""

from __future__ import annotations

import decimal
import enum
import json
import logging
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from google.genai import types

import vertexbatch as vb
from tests.helpers import (
    CLAUDE,
    GEMINI,
    claude_params,
    claude_requests,
    gemini_requests,
    staged_names,
    write_jsonl,
)
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode
from vertexbatch.emulator import LocalStack

# Request content, as a value and as a mapping key: it must never leave the request.
SECRET = "wombat-secret-4417"
NAN, INF = float("nan"), float("inf")


def _claude(key: str = "bad-key", **extra: Any) -> vb.ClaudeRequest:
    return vb.ClaudeRequest(key, claude_params(**extra))


def _refused(
    client: vb.Client,
    stack: LocalStack,
    bucket: str,
    submit: Callable[[vb.Client, str], object],
    submission_id: str = "refused",
) -> vb.InvalidRequestError:
    """Submit, expect InvalidRequestError, and check nothing was staged or sent to Vertex."""
    with pytest.raises(vb.InvalidRequestError) as info:
        submit(client, submission_id)
    assert staged_names(stack, bucket, submission_id) == []
    assert stack.calls() == {}
    return info.value


def _claude_submit(*requests: vb.ClaudeRequest) -> Callable[[vb.Client, str], object]:
    # A good request first: the bad one is found while staging streams, and staging is undone.
    rows = [*claude_requests(1), *requests]
    return lambda client, sid: client.submit_claude(sid, CLAUDE, rows)


def _gemini_submit(*requests: vb.GeminiRequest) -> Callable[[vb.Client, str], object]:
    rows = [*gemini_requests(1), *requests]
    return lambda client, sid: client.submit_gemini(sid, GEMINI, rows)


def _submit_for(
    request_: vb.ClaudeRequest | vb.GeminiRequest,
) -> Callable[[vb.Client, str], object]:
    """The submit call for one request of either provider."""
    if isinstance(request_, vb.ClaudeRequest):
        return _claude_submit(request_)
    return _gemini_submit(request_)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception and every cause and context chained to it."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        item = todo.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        todo += [item.__cause__, item.__context__]


# -- NaN and Infinity (defect 2) -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "field", "place"),
    [
        (_claude(temperature=NAN), "params", "params.temperature"),
        (_claude(top_p=INF), "params", "params.top_p"),
        (_claude(metadata={"user_id": "u", "scores": [1.0, -INF]}), "params", "params.metadata"),
        (
            _claude(
                tools=[
                    {
                        "name": "t",
                        "input_schema": {"type": "object", "properties": {"x": {"maximum": INF}}},
                    }
                ]
            ),
            "params",
            "params.tools[0].input_schema.properties.<field 1>.maximum",
        ),
        (vb.GeminiRequest("bad-key", "Hi", {"temperature": NAN}), "config", "config.temperature"),
        (
            vb.GeminiRequest("bad-key", "Hi", types.GenerateContentConfig(temperature=NAN)),
            "config",
            "generationConfig.temperature",
        ),
        (
            vb.GeminiRequest("bad-key", "Hi", types.GenerateContentConfig(top_p=-INF)),
            "config",
            "generationConfig.topP",
        ),
        (
            vb.GeminiRequest(
                "bad-key",
                [
                    {
                        "role": "user",
                        "parts": [{"functionResponse": {"name": "f", "response": {"v": NAN}}}],
                    }
                ],
            ),
            "contents",
            "contents[0].parts[0].functionResponse.response.<field 1>",
        ),
    ],
    ids=[
        "claude-temperature",
        "claude-top_p",
        "claude-nested-list",
        "claude-tool-schema",
        "gemini-dict-config",
        "gemini-typed-config",
        "gemini-typed-config-neg",
        "gemini-dict-contents",
    ],
)
def test_nan_and_infinity_are_refused_before_staging(
    client: vb.Client,
    stack: LocalStack,
    bucket: str,
    request_: vb.ClaudeRequest | vb.GeminiRequest,
    field: str,
    place: str,
) -> None:
    """NaN/Infinity anywhere in a request: InvalidRequestError naming key, place and rule."""
    submit = _submit_for(request_)
    error = _refused(client, stack, bucket, submit)
    message = str(error)
    assert "'bad-key'" in message and place in message, message
    assert "not JSON: NaN/Infinity" in message
    assert error.field == field
    assert error.__cause__ is None and error.__context__ is None


def test_nan_in_a_run_is_refused_before_staging(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """run_claude refuses NaN like submit_claude does, with nothing staged."""
    with pytest.raises(vb.InvalidRequestError, match="not JSON: NaN/Infinity"):
        client.run_claude("nan-run", CLAUDE, [_claude(temperature=NAN)])
    assert staged_names(stack, bucket, "nan-run") == []


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_command_refuses_nan_tokens_in_the_request_file(
    stack_env: str, stack: LocalStack, tmp_path: Path, token: str
) -> None:
    """A NaN/Infinity token in a request file: exit 3 naming the file and line, nothing staged."""
    good = {"key": "a", "params": claude_params()}
    path = tmp_path / "in.jsonl"
    path.write_text(
        json.dumps(good) + "\n" + json.dumps({"key": "b", "params": claude_params(temperature=7)})
        .replace("7", token) + "\n"
    )  # fmt: skip
    args = ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "nan-cmd", str(path)]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == ExitCode.INVALID_REQUEST, result.output
    assert f"{path} line 2: not JSON: NaN/Infinity" in result.stderr
    assert staged_names(stack, stack_env, "nan-cmd") == []


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"key": "b", "params": {"max_tokens": 1' + "0" * 5000 + "}}", "an integer too long"),
        ('{"key": "b", "params": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        # Deeper than MAX_DEPTH, shallow enough for json: measured, refused before parsing.
        ('{"key": "b", "params": ' + "[" * 200 + "]" * 200 + "}", "nested too deeply"),
        (
            json.dumps({"key": "b", "params": claude_params(system="\ud800")}),
            "params.system is not JSON: not UTF-8 text",
        ),
        (
            json.dumps({"key": "b", "params": claude_params(metadata={"\udc80": 1})}),
            "params.metadata.<field 1> is a key that is not UTF-8 text",
        ),
    ],
    ids=["huge-integer", "deep-nesting", "past-max-depth", "lone-surrogate", "lone-surrogate-key"],
)
def test_command_refuses_lines_json_cannot_carry(
    stack_env: str, stack: LocalStack, tmp_path: Path, line: str, expected: str
) -> None:
    """Lines Python reads but JSON cannot carry: exit 3 naming the line, never 1 ("a bug")."""
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"key": "a", "params": claude_params()}) + "\n" + line + "\n")
    args = ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "odd-cmd", str(path)]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == ExitCode.INVALID_REQUEST, result.output
    assert f"{path} line 2: " in result.stderr and expected in result.stderr
    assert staged_names(stack, stack_env, "odd-cmd") == []


# -- keys that are not strings, values that are not JSON (defect 6) ------------------------------


_ODD_KEYS = [1, 2.5, True, None, (1, 2), b"k"]


def _with_key(key: object) -> list[tuple[vb.ClaudeRequest | vb.GeminiRequest, str, str]]:
    """Requests holding ``key`` as a mapping key, each with the field and place to name."""
    return [
        (_claude(metadata={key: "v"}), "params", "params.metadata.<field 1>"),
        (
            _claude(
                messages=[{"role": "user", "content": [{"type": "text", "text": "x", key: 1}]}]
            ),
            "params",
            "params.messages[0].content[0].<field 3>",
        ),
        (vb.ClaudeRequest("bad-key", {**claude_params(), key: 1}), "params", "params.<field 3>"),
        (
            vb.GeminiRequest("bad-key", [{"role": "user", "parts": [{"text": "x"}], key: 1}]),
            "contents",
            "contents[0].<field 3>",
        ),
        (vb.GeminiRequest("bad-key", "Hi", {"labels": {key: "v"}}), "config", "config.labels"),
        (
            vb.GeminiRequest("bad-key", "Hi", {"temperature": 0.5, key: 1}),
            "config",
            "config.<field 2>",
        ),
        (
            vb.GeminiRequest("bad-key", "Hi", {"response_json_schema": {"type": "object", key: 1}}),
            "config",
            "config.response_json_schema.<field 2>",
        ),
    ]


@pytest.mark.parametrize(
    ("request_", "field", "place"),
    [case for key in _ODD_KEYS for case in _with_key(key)],
    ids=[f"{type(key).__name__}-{i}" for key in _ODD_KEYS for i in range(len(_with_key(key)))],
)
def test_keys_that_are_not_strings_are_refused(
    client: vb.Client,
    stack: LocalStack,
    bucket: str,
    request_: vb.ClaudeRequest | vb.GeminiRequest,
    field: str,
    place: str,
) -> None:
    """int, float, bool, None, tuple or bytes keys: InvalidRequestError, never a bare TypeError
    and never silently written as strings."""
    submit = _submit_for(request_)
    error = _refused(client, stack, bucket, submit)
    assert error.field == field
    assert place in str(error) and "not a string" in str(error), str(error)
    assert error.__cause__ is None and error.__context__ is None


class _Tag(str):
    """A str subclass that lies about its first character."""

    def __getitem__(self, index: Any) -> str:
        return "x"


def test_str_subclass_keys_and_enum_values_are_written_as_plain_json(client: vb.Client) -> None:
    """Keys and values of str, int and float subclasses (enums) are their plain JSON values."""

    class Role(enum.StrEnum):
        USER = "user"

    class Size(enum.IntEnum):
        SMALL = 64

    request = vb.ClaudeRequest(
        "enum-key",
        {
            "max_tokens": Size.SMALL,
            "messages": [{"role": Role.USER, "content": "Hi"}],
            "metadata": {_Tag("user_id"): Role.USER},
        },
    )
    job = client.submit_claude("enums", CLAUDE, [request])
    assert job.keys == 1
    # ... and a str subclass key is checked by its real text, not by what it claims.
    with pytest.raises(vb.InvalidRequestError, match="not a valid column name"):
        client.submit_claude("enums-2", CLAUDE, [_claude(metadata={_Tag("$bad"): 1})])


@pytest.mark.parametrize(
    "value",
    [{1, 2}, frozenset({3}), b"bytes", bytearray(b"x"), object(), decimal.Decimal("0.5"), 1j],
    ids=["set", "frozenset", "bytes", "bytearray", "object", "decimal", "complex"],
)
@pytest.mark.parametrize("where", ["params", "contents", "config"])
def test_values_that_are_not_json_are_refused(
    client: vb.Client, stack: LocalStack, bucket: str, value: object, where: str
) -> None:
    """Sets, bytes, objects, decimals in params, contents or config: InvalidRequestError naming
    the place and the type, with no exception chained."""
    if where == "params":
        submit = _claude_submit(_claude(metadata={"user_id": value}))
        place = "params.metadata.user_id"
    elif where == "contents":
        contents = [{"role": "user", "parts": [{"text": "x"}], "extra": [value]}]
        submit = _gemini_submit(vb.GeminiRequest("bad-key", contents))
        place = "contents[0].<field 3>[0]"
    else:
        config = {"response_json_schema": {"type": "object", "default": value}}
        submit = _gemini_submit(vb.GeminiRequest("bad-key", "Hi", config))
        place = "config.response_json_schema.default"
    error = _refused(client, stack, bucket, submit)
    assert error.field == where
    assert place in str(error) and "not JSON data" in str(error), str(error)
    assert type(value).__name__ in str(error)
    assert error.__cause__ is None and error.__context__ is None


@pytest.mark.parametrize(
    ("request_", "field", "expected"),
    [
        (_claude(system="ok \ud83d broken"), "params", "params.system is not JSON: not UTF-8"),
        (_claude(metadata={"\udfff": 1}), "params", "params.metadata.<field 1> is a key that is"),
        (
            _claude(temperature=10**5000),  # max_tokens past int32 is refused as such first
            "params",
            "params.temperature is not JSON: an integer too long",
        ),
        (
            vb.GeminiRequest("bad-key", "Hi", {"system_instruction": "x\ud800"}),
            "config",
            "config.system_instruction is not JSON: not UTF-8",
        ),
        (
            vb.GeminiRequest(
                "bad-key", "Hi", types.GenerateContentConfig(system_instruction="\ud800")
            ),
            "config",
            "systemInstruction.parts[0].text is not JSON: not UTF-8",
        ),
        (
            vb.GeminiRequest("bad-key", "x\udc00y"),
            "contents",
            "contents[0].parts[0].text is not JSON: not UTF-8",
        ),
    ],
    ids=[
        "surrogate-value",
        "surrogate-key",
        "huge-int",
        "config-surrogate",
        "typed-config-surrogate",
        "contents-surrogate",
    ],
)
def test_strings_and_numbers_json_cannot_write_are_refused(
    client: vb.Client,
    stack: LocalStack,
    bucket: str,
    request_: vb.ClaudeRequest | vb.GeminiRequest,
    field: str,
    expected: str,
) -> None:
    """Lone surrogates (not UTF-8) and integers too long to write: InvalidRequestError, never a
    bare UnicodeEncodeError or ValueError."""
    submit = _submit_for(request_)
    error = _refused(client, stack, bucket, submit)
    assert error.field == field
    assert expected in str(error), str(error)
    assert error.__cause__ is None and error.__context__ is None


def _cycle() -> dict[str, Any]:
    node: dict[str, Any] = {}
    node["a"] = node
    node["b"] = [node]
    return node


def _deep_tuple(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = (value,)
    return value


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (_claude(metadata=_cycle()), "params"),
        (_claude(metadata={"user_id": _deep_tuple(50_000)}), "params"),
        (vb.GeminiRequest("bad-key", "Hi", {"response_json_schema": _cycle()}), "config"),
        (vb.GeminiRequest("bad-key", "Hi", {"labels": _deep_tuple(50_000)}), "config"),
        (vb.GeminiRequest("bad-key", [{"role": "user", "parts": [_cycle()]}]), "contents"),
    ],
    ids=["params-cycle", "params-deep-tuple", "config-cycle", "config-deep", "contents-cycle"],
)
def test_cyclic_and_very_deep_values_are_refused_in_bounded_time(
    client: vb.Client,
    stack: LocalStack,
    bucket: str,
    request_: vb.ClaudeRequest | vb.GeminiRequest,
    field: str,
) -> None:
    """A cycle or 50,000 levels: refused for its depth, never RecursionError or a hang."""
    submit = _submit_for(request_)
    error = _refused(client, stack, bucket, submit)
    assert error.field == field
    assert "nested deeper than 15 levels" in str(error), str(error)


@pytest.mark.parametrize(
    ("key", "expected"),
    [("a\tb", "not a valid column name"), ("a\u00a0b", "not a valid column name")],
    ids=["tab", "no-break-space"],
)
def test_keys_with_any_whitespace_are_refused(
    client: vb.Client, stack: LocalStack, bucket: str, key: str, expected: str
) -> None:
    """Any whitespace in a key fails Vertex's importer (the local stack's too), not just ' '."""
    error = _refused(client, stack, bucket, _claude_submit(_claude(metadata={key: 1})))
    assert expected in str(error) and "params.metadata.<field 1>" in str(error)


@pytest.mark.parametrize(
    ("contents", "config", "field", "expected"),
    [
        (None, None, "contents", "contents of request 'bad-key' are None"),
        (12345, None, "contents", "are not google-genai contents"),
        ([1, 2], None, "contents", "are not google-genai contents"),
        ("Hi", ["temperature"], "config", "must be a GenerateContentConfig or its dict form"),
        ("Hi", "temperature=1", "config", "must be a GenerateContentConfig or its dict form"),
    ],
    ids=["contents-none", "contents-int", "contents-ints", "config-list", "config-str"],
)
def test_contents_and_config_of_the_wrong_shape(
    client: vb.Client,
    stack: LocalStack,
    bucket: str,
    contents: Any,
    config: Any,
    field: str,
    expected: str,
) -> None:
    """Contents or config of the wrong type: InvalidRequestError with the field, no chain."""
    error = _refused(
        client, stack, bucket, _gemini_submit(vb.GeminiRequest("bad-key", contents, config))
    )
    assert error.field == field
    assert expected in str(error), str(error)
    assert error.__cause__ is None and error.__context__ is None


# -- fields batch cannot honour (defect 14) -------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (_claude(stream=True), "set 'stream': batch prediction answers each request whole"),
        (_claude(model=CLAUDE), "set 'model': the job's model is given to submit_claude"),
    ],
    ids=["stream", "model"],
)
def test_claude_stream_and_model_in_params_are_refused(
    client: vb.Client,
    stack: LocalStack,
    bucket: str,
    request_: vb.ClaudeRequest,
    expected: str,
) -> None:
    """``stream`` and ``model`` in params are refused, not staged as is or dropped silently."""
    error = _refused(client, stack, bucket, _claude_submit(request_))
    assert error.field == "params"
    assert "params of request 'bad-key'" in str(error) and expected in str(error)


def test_claude_stream_false_is_accepted(client: vb.Client) -> None:
    """``stream: false`` says what batch does anyway: it is staged."""
    assert client.submit_claude("no-stream", CLAUDE, [_claude(stream=False)]).keys == 1


@pytest.mark.parametrize(
    ("config", "name"),
    [
        (types.GenerateContentConfig(http_options=types.HttpOptions(timeout=5)), "httpOptions"),
        ({"http_options": {"timeout": 5}}, "httpOptions"),
        ({"should_return_http_response": True}, "shouldReturnHttpResponse"),
        (
            types.GenerateContentConfig(
                automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True)
            ),
            "automaticFunctionCalling",
        ),
        ({"automaticFunctionCalling": {"maximumRemoteCalls": 3}}, "automaticFunctionCalling"),
    ],
    ids=["typed-http", "dict-http", "dict-should-return", "typed-afc", "dict-afc-camel"],
)
def test_client_only_gemini_config_fields_are_refused(
    client: vb.Client, stack: LocalStack, bucket: str, config: Any, name: str
) -> None:
    """Config fields only the google-genai client uses are refused, naming the field and why."""
    error = _refused(
        client, stack, bucket, _gemini_submit(vb.GeminiRequest("bad-key", "Hi", config))
    )
    assert error.field == "config"
    assert name in str(error) and "no effect in batch prediction" in str(error), str(error)


# -- content never leaks (defect 8) --------------------------------------------------------------


def _secret_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {SECRET: {"type": "string", "description": SECRET}}}


def _deep(levels: int) -> Any:
    value: Any = {SECRET: SECRET}
    for _ in range(levels):
        value = {SECRET: [value]}
    return value


def _contents(**part: Any) -> list[dict[str, Any]]:
    return [{"role": "user", "parts": [{"text": SECRET, **part}]}]


# Each case puts SECRET in the request as a value and as a mapping key, and breaks one rule.
_LEAKY: list[tuple[str, vb.ClaudeRequest | vb.GeminiRequest]] = [
    ("dollar-key", _claude(metadata={f"${SECRET}": SECRET})),
    ("space-key", _claude(metadata={f"{SECRET} x": SECRET})),
    ("empty-object", _claude(metadata={SECRET: {}}, system=SECRET)),
    ("too-deep", _claude(metadata=_deep(20))),
    ("nan", _claude(metadata={SECRET: NAN}, system=SECRET)),
    ("non-string-key", _claude(metadata={SECRET: {1: SECRET}})),
    ("set", _claude(metadata={SECRET: {SECRET}})),
    ("bytes", _claude(metadata={SECRET: SECRET.encode()})),
    ("surrogate", _claude(metadata={SECRET: SECRET + "\ud800"})),
    ("surrogate-key", _claude(metadata={SECRET + "\ud800": SECRET})),
    ("object", _claude(metadata={SECRET: object()}, system=SECRET)),
    ("stream", _claude(stream=True, system=SECRET, metadata={SECRET: SECRET})),
    ("model", _claude(model=SECRET, metadata={SECRET: SECRET})),
    ("missing-max-tokens", vb.ClaudeRequest("bad-key", {"messages": SECRET, SECRET: SECRET})),
    ("params-not-mapping", vb.ClaudeRequest("bad-key", [SECRET])),  # type: ignore[arg-type]
    (
        "tool-schema-dollar",
        _claude(tools=[{"name": "t", "input_schema": {**_secret_schema(), f"${SECRET}": 1}}]),
    ),
    ("config-unknown-field", vb.GeminiRequest("bad-key", SECRET, {SECRET: SECRET})),
    ("config-bad-value", vb.GeminiRequest("bad-key", SECRET, {"temperature": SECRET})),
    (
        "config-bad-nested",
        vb.GeminiRequest("bad-key", SECRET, {"system_instruction": {SECRET: SECRET}}),
    ),
    ("config-label-value", vb.GeminiRequest("bad-key", SECRET, {"labels": {SECRET: 5}})),
    ("config-label-key", vb.GeminiRequest("bad-key", SECRET, {"labels": {1: SECRET}})),
    ("config-nan", vb.GeminiRequest("bad-key", SECRET, {"temperature": NAN, SECRET: SECRET})),
    (
        "config-schema-nan",
        vb.GeminiRequest("bad-key", SECRET, {"response_json_schema": {SECRET: NAN}}),
    ),
    (
        "config-schema-dollar",
        vb.GeminiRequest("bad-key", SECRET, {"response_json_schema": {f"${SECRET}": SECRET}}),
    ),
    (
        "config-http-options",
        vb.GeminiRequest("bad-key", SECRET, {"http_options": {"base_url": SECRET}}),
    ),
    (
        "typed-config-nan",
        vb.GeminiRequest(
            "bad-key",
            SECRET,
            types.GenerateContentConfig(temperature=NAN, system_instruction=SECRET),
        ),
    ),
    ("config-list", vb.GeminiRequest("bad-key", SECRET, [SECRET])),  # type: ignore[arg-type]
    ("config-reserved-label", vb.GeminiRequest("bad-key", SECRET, {"labels": {"vb_key": SECRET}})),
    ("contents-nan", vb.GeminiRequest("bad-key", _contents(**{SECRET: NAN}))),
    ("contents-key", vb.GeminiRequest("bad-key", _contents(**{f"${SECRET}": SECRET}))),
    ("contents-empty", vb.GeminiRequest("bad-key", _contents(**{SECRET: {}}))),
    ("contents-odd-key", vb.GeminiRequest("bad-key", _contents(**{SECRET: {2.5: SECRET}}))),
    ("contents-set", vb.GeminiRequest("bad-key", {SECRET})),
    ("contents-none", vb.GeminiRequest("bad-key", None, {"system_instruction": SECRET})),
    (
        "typed-contents-object",
        vb.GeminiRequest(
            "bad-key",
            [
                types.Content(
                    role="user",
                    parts=[
                        types.Part(
                            function_call=types.FunctionCall(
                                name=SECRET, args={SECRET: object(), "v": SECRET}
                            )
                        )
                    ],
                )
            ],
        ),
    ),
]


def _assert_no_secret(error: vb.InvalidRequestError) -> None:
    for item in _chain(error):
        assert SECRET not in str(item) and SECRET not in repr(item), (type(item), str(item))
    assert SECRET.encode() not in pickle.dumps(error)
    assert SECRET not in str(pickle.loads(pickle.dumps(error)))


@pytest.mark.parametrize("request_", [r for _, r in _LEAKY], ids=[n for n, _ in _LEAKY])
def test_request_content_never_reaches_errors_or_logs(
    client: vb.Client,
    stack: LocalStack,
    bucket: str,
    caplog: pytest.LogCaptureFixture,
    request_: vb.ClaudeRequest | vb.GeminiRequest,
) -> None:
    """No value or key from params, contents or config in the message, repr, pickle, chained
    cause or context, or a log line; the request key is named."""
    caplog.set_level(logging.DEBUG)
    submit = _submit_for(request_)
    error = _refused(client, stack, bucket, submit)
    assert "'bad-key'" in str(error), str(error)
    assert error.field in {"params", "contents", "config"}
    _assert_no_secret(error)
    assert SECRET not in caplog.text


def test_requests_repr_shows_the_key_only() -> None:
    """The repr of a request names its key, never its params, contents or config."""
    claude = vb.ClaudeRequest("k-1", {SECRET: SECRET})
    gemini = vb.GeminiRequest("k-2", SECRET, {SECRET: SECRET})
    assert repr(claude) == "ClaudeRequest(key='k-1')"
    assert repr(gemini) == "GeminiRequest(key='k-2')"
    assert SECRET not in repr([claude, gemini]) and SECRET not in str(gemini)


# Lines a request file can hold (JSON), each carrying SECRET as a value and a key.
_LEAKY_LINES: list[tuple[str, str, dict[str, Any]]] = [
    (
        "claude",
        "dollar-key",
        {"key": "bad-key", "params": claude_params(metadata={f"${SECRET}": SECRET})},
    ),
    (
        "claude",
        "space-key",
        {"key": "bad-key", "params": claude_params(metadata={f"{SECRET} x": 1})},
    ),
    ("claude", "empty", {"key": "bad-key", "params": claude_params(metadata={SECRET: {}})}),
    ("claude", "deep", {"key": "bad-key", "params": claude_params(metadata=_deep(20))}),
    ("claude", "nan", {"key": "bad-key", "params": claude_params(metadata={SECRET: NAN})}),
    ("claude", "stream", {"key": "bad-key", "params": claude_params(stream=True, system=SECRET)}),
    ("claude", "model", {"key": "bad-key", "params": claude_params(model=SECRET)}),
    ("claude", "no-max-tokens", {"key": "bad-key", "params": {"messages": SECRET, SECRET: 1}}),
    ("claude", "surrogate", {"key": "bad-key", "params": claude_params(system=SECRET + "\ud800")}),
    ("gemini", "config-field", {"key": "bad-key", "contents": SECRET, "config": {SECRET: 1}}),
    (
        "gemini",
        "config-value",
        {"key": "bad-key", "contents": SECRET, "config": {"temperature": SECRET}},
    ),
    (
        "gemini",
        "config-nested",
        {"key": "bad-key", "contents": SECRET, "config": {"system_instruction": {SECRET: 1}}},
    ),
    (
        "gemini",
        "config-client-only",
        {"key": "bad-key", "contents": SECRET, "config": {"http_options": {"base_url": SECRET}}},
    ),
    ("gemini", "contents-nan", {"key": "bad-key", "contents": _contents(**{SECRET: NAN})}),
    ("gemini", "contents-odd", {"key": "bad-key", "contents": {SECRET: SECRET}}),
]


@pytest.mark.parametrize(
    ("provider", "row"), [(p, r) for p, _, r in _LEAKY_LINES], ids=[n for _, n, _ in _LEAKY_LINES]
)
def test_command_never_prints_request_content(
    stack_env: str, stack: LocalStack, tmp_path: Path, provider: str, row: dict[str, Any]
) -> None:
    """At -vv (DEBUG logs and the traceback of the error), the command's stderr holds no
    content; it exits 3 naming the line."""
    path = write_jsonl(tmp_path / "in.jsonl", [row])
    model = CLAUDE if provider == "claude" else GEMINI
    args = ["-vv", "submit", "--provider", provider, "--model", model, "--id", "leak", str(path)]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == ExitCode.INVALID_REQUEST, result.output
    assert f"{path} line 1: " in result.stderr
    assert SECRET not in result.stderr and SECRET not in result.output
    assert staged_names(stack, stack_env, "leak") == []
