"""A Claude request of the Messages API's first fields only is known to have no unknown field
without importing anthropic (``_requests.sdk_fields.plain_claude``); the fast path is held against
the installed SDK's own types, which judge everything else."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest
from anthropic.types import MessageCreateParams
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from vertexbatch._requests import sdk_fields as fields
from vertexbatch._requests.sdk_fields import _claude_root, claude_unknown, plain_claude
from vertexbatch._requests.type_walk import FREE, LEAF, ListOf, Record, UnionOf

_ROOT, _COMPILER = _claude_root(MessageCreateParams)


def member_for(node: Any, tag: str, value: str) -> Record:
    """The record the walk takes a mapping ``{tag: value}`` at ``node`` to be."""
    if type(node) is UnionOf:
        records = [m for m in _COMPILER.candidates(node, {tag: value}) if type(m) is Record]
        assert records, (tag, value)
        node = records[0]
    assert type(node) is Record, (tag, value)
    return _COMPILER.resolve(node)


def _sdk(body: Any) -> Any:
    """The SDK walk alone (an explicit params type never takes the plain path)."""
    return claude_unknown(body, MessageCreateParams)


def _not_looked_into(node: Any) -> bool:
    """Whether the walk takes any value at this node (a leaf, free JSON, a list of either)."""
    if node is LEAF or node is FREE:
        return True
    return type(node) is ListOf and (node.item is LEAF or node.item is FREE)


def test_each_plain_name_is_a_field_of_the_installed_sdk_where_plain_takes_it() -> None:
    root = _ROOT
    assert fields._PLAIN_LEAVES | {"messages", "system", "metadata"} == fields._PLAIN_TOP
    for name in fields._PLAIN_LEAVES:
        assert name in root.fields, name
        assert _not_looked_into(root.fields[name][0]), name
    metadata = _COMPILER.resolve(root.fields["metadata"][0])
    assert type(metadata) is Record and metadata.fields.keys() >= fields._PLAIN_METADATA
    assert all(_not_looked_into(metadata.fields[name][0]) for name in fields._PLAIN_METADATA)
    system = root.fields["system"][0]
    assert type(system) is ListOf
    _assert_text_block(system.item)
    messages = root.fields["messages"][0]
    assert type(messages) is ListOf
    for role in fields._PLAIN_ROLES:
        message = member_for(messages.item, "role", role)
        assert message.fields.keys() >= fields._PLAIN_MESSAGE, role
        content = message.fields["content"][0]
        assert type(content) is ListOf, role
        _assert_text_block(member_for(content.item, "type", "text"))


def _assert_text_block(node: Any) -> None:
    block = member_for(node, "type", "text")
    assert block.fields.keys() >= fields._PLAIN_TEXT
    assert _not_looked_into(block.fields["text"][0])
    cache = member_for(block.fields["cache_control"][0], "type", "ephemeral")
    assert cache.fields.keys() >= fields._PLAIN_CACHE
    assert all(_not_looked_into(cache.fields[name][0]) for name in fields._PLAIN_CACHE)


# Values over the plain names and their near misses, nested the ways a request nests.
_NAMES = st.sampled_from(
    [
        "max_tokens", "stop_sequences", "messages", "system", "metadata", "user_id",
        "anthropic_version", "temperature", "top_p", "role", "content", "type", "text",
        "cache_control", "ttl", "tools", "citations", "source", "name", "input", "thinking",
    ]
)  # fmt: skip
_SCALARS = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.sampled_from(["user", "assistant", "system", "text", "image", "ephemeral", "5m", "x"]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_NAMES, inner, max_size=4)
    ),
    max_leaves=12,
)
_TEXT = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "image"]), "text": _SCALARS},
    optional={"cache_control": _VALUES, "citations": _VALUES},
)
_MESSAGE = st.fixed_dictionaries(
    {
        "role": st.one_of(_SCALARS, _VALUES),
        "content": st.one_of(_SCALARS, st.lists(st.one_of(_TEXT, _VALUES))),
    },
    optional={"name": _VALUES},
)
_REQUESTS = st.fixed_dictionaries(
    {"max_tokens": _SCALARS, "messages": st.one_of(st.lists(_MESSAGE, max_size=3), _VALUES)},
    optional={
        "system": st.one_of(_SCALARS, st.lists(_TEXT, max_size=2), _VALUES),
        "metadata": _VALUES,
        "stop_sequences": _VALUES,
        "temperature": _VALUES,
        "tools": _VALUES,
    },
)


@settings(max_examples=examples(400), deadline=None)
@given(_REQUESTS)
def test_a_request_plain_takes_has_no_unknown_field_by_the_sdk(body: dict[str, Any]) -> None:
    if plain_claude(body):
        assert _sdk(body) is None
    assert claude_unknown(body) == _sdk(body)  # the answer never depends on the path


@pytest.mark.parametrize(
    "body",
    [
        {"max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}]},
        {
            "max_tokens": 8,
            "anthropic_version": "vertex-2023-10-16",
            "temperature": 0.2,
            "stop_sequences": ["END"],
            "metadata": {"user_id": "u"},
            "system": [
                {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
            ],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
                {"role": "assistant", "content": "Hello"},
            ],
        },
    ],
)
def test_a_text_request_is_plain(body: dict[str, Any]) -> None:
    assert plain_claude(body)


@pytest.mark.parametrize(
    "body",
    [
        {"max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}], "tools": []},
        {"max_tokens": 8, "messages": [{"role": "system", "content": "Hi"}]},
        {"max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "image"}]}]},
        {"max_tokens": 8, "messages": [{"role": "user", "contnet": "Hi"}]},
        {"max_tokens": 8, "messages": "Hi"},
        {"max_tokens": 8, "metadata": {"user_id": "u", "tier": 1}},
        {"max_tokens": 8, "system": [{"type": "text", "text": "x", "citations": []}]},
        # A role or a block type that is not a string (unhashable too): the SDK's to judge.
        {"max_tokens": 8, "messages": [{"role": ["user"], "content": "Hi"}]},
        {"max_tokens": 8, "messages": [{"role": {"user": 1}, "content": "Hi"}]},
        {"max_tokens": 8, "messages": [{"role": "user", "content": [{"type": ["text"]}]}]},
    ],
)
def test_anything_else_is_the_sdks_to_judge(body: dict[str, Any]) -> None:
    assert not plain_claude(body)


def _imports_anthropic(requests: str) -> bool:
    """Whether checking these requests' fields imports anthropic, in a fresh interpreter."""
    code = textwrap.dedent(
        f"""
        import sys
        from vertexbatch import ClaudeRequest
        from vertexbatch._requests.field_check import check_claude_fields
        for params in {requests}:
            check_claude_fields(ClaudeRequest("k", params))
        print("anthropic" in sys.modules)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip() == "True"


@pytest.mark.processes
def test_plain_requests_never_import_anthropic_and_others_do() -> None:
    plain = '[{"max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}]}]'
    assert not _imports_anthropic(plain)
    tools = (
        '[{"max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}],'
        ' "tools": [{"name": "f", "input_schema": {"type": "object"}}]}]'
    )
    assert _imports_anthropic(tools)
