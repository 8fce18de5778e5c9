"""Claude params in one shape: every field Anthropic takes as a string or as blocks, in block form.

Vertex's importer fixes each field's JSON type from the lines it reads, so a job whose lines mix
``"system": "..."`` and ``"system": [{...}]`` would fail whole; staged in one shape, they cannot
(pure: bodies are copied where changed, never modified below the top).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["one_shape"]


def _text_blocks(value: Any) -> Any:
    """A string as a list of one text block; anything else as it is."""
    if isinstance(value, str):
        return [{"type": "text", "text": str.__str__(value)}]
    return value


# The blocks of a system string (``_system_blocks``), by the string: a few, as prompts may be
# long and are held until cleared.
_SYSTEM_BLOCKS: dict[str, list[dict[str, str]]] = {}
_SYSTEM_HELD = 16


def _system_blocks(system: str) -> list[dict[str, str]]:
    """``_text_blocks`` of a ``str``, one list for equal strings: a job's requests usually
    share one system prompt, and its blocks are then walked once per input (``shared``)."""
    found = _SYSTEM_BLOCKS.get(system)
    if found is None:
        if len(_SYSTEM_BLOCKS) >= _SYSTEM_HELD:
            _SYSTEM_BLOCKS.clear()  # many prompts: each is used by few lines
        found = _SYSTEM_BLOCKS[system] = [{"type": "text", "text": system}]
    return found


def _blocks_of(content: Any) -> Any:
    """Message content as a list of blocks, a ``tool_result``'s own content too (copied when
    changed, never modified)."""
    if isinstance(content, str):
        return _text_blocks(content)
    if type(content) is not list:
        return content
    out: list[Any] | None = None
    for i, block in enumerate(content):
        if (
            isinstance(block, Mapping)
            and block.get("type") == "tool_result"
            and isinstance(block.get("content"), str)
        ):
            if out is None:
                out = list(content)
            out[i] = {**block, "content": _text_blocks(block["content"])}
    return content if out is None else out


def one_shape(body: dict[str, Any]) -> dict[str, Any]:
    """Claude params with every field Anthropic takes as a string or as blocks in block form.

    ``system`` and message (and ``tool_result``) ``content`` may be a string or a list of content
    blocks; Vertex's importer fixes each field's type from the lines it reads, so a job mixing
    the two would fail whole. A string becomes ``[{"type": "text", "text": ...}]``, which
    Anthropic reads the same. ``body`` is a fresh dict and is updated; nothing below it is
    modified (changed messages are copies). A ``system`` string's blocks are shared between
    the bodies of equal strings: never modify them.
    """
    if "system" in body:
        system = body["system"]
        body["system"] = _system_blocks(system) if type(system) is str else _text_blocks(system)
    messages = body.get("messages")
    if type(messages) is list:
        out: list[Any] | None = None
        for i, message in enumerate(messages):
            if (type(message) is dict or isinstance(message, Mapping)) and "content" in message:
                content = message["content"]
                blocks = _blocks_of(content)
                if blocks is not content:
                    if out is None:
                        out = list(messages)
                    out[i] = {**message, "content": blocks}
        if out is not None:
            body["messages"] = out
    return body
