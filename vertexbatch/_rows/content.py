"""An answer's content read into its text and its tool calls (pure; inputs never modified).

Claude: ``text`` blocks joined in order, ``tool_use`` blocks as ``ToolCall`` (name, ``input``,
``id``). Gemini: the non-thought ``text`` parts joined in order, ``functionCall`` parts as
``ToolCall`` (name, ``args``, ``id`` when given, the part's ``thoughtSignature``). Blocks and
parts of any other shape are passed over; a call with no name is no call.

A Gemini answer may also be parts that are neither text nor a call: an image (``inlineData``), a
file (``fileData``), code (``executableCode``) or its result (``codeExecutionResult``).
``gemini_other_parts`` says whether a candidate has one that is no thought: such an answer is an
answer, its parts read from ``Result.response``. A part of a kind not named here is not counted.
"""

from __future__ import annotations

from collections.abc import Mapping

from .._values import ToolCall

__all__ = ["GEMINI_OTHER_PARTS", "claude_content", "gemini_content", "gemini_other_parts"]

GEMINI_OTHER_PARTS = (
    "inlineData",
    "inline_data",
    "fileData",
    "file_data",
    "executableCode",
    "executable_code",
    "codeExecutionResult",
    "code_execution_result",
)
"""The fields of a Gemini part, camelCase or snake_case, that make it an answer without text."""


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def claude_content(content: object) -> tuple[str, tuple[ToolCall, ...]]:
    """Return (the text blocks joined in order, the tool_use blocks as calls, in order)."""
    if isinstance(content, str):
        return content, ()
    if not isinstance(content, list):
        return "", ()
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in content:
        if type(block) is not dict and not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str):
                texts.append(text)
        elif kind == "tool_use":
            name = _text(block.get("name"))
            if name:
                calls.append(ToolCall(name, block.get("input"), _text(block.get("id"))))
    return "".join(texts), tuple(calls)


def gemini_content(content: object) -> tuple[str, tuple[ToolCall, ...]]:
    """Return (the non-thought text parts joined in order, the function calls, in order)."""
    if type(content) is not dict and not isinstance(content, Mapping):
        return "", ()
    parts = content.get("parts")
    if not isinstance(parts, list):
        return "", ()
    texts: list[str] = []
    calls: list[ToolCall] = []
    for part in parts:
        if type(part) is not dict and not isinstance(part, Mapping):
            continue
        if part.get("thought") is True:
            continue
        text = part.get("text")
        if type(text) is str or isinstance(text, str):
            texts.append(text)
        call = part.get("functionCall")
        if call is None:
            call = part.get("function_call")
        if isinstance(call, Mapping):
            name = _text(call.get("name"))
            if name:
                signature = part.get("thoughtSignature")
                if signature is None:
                    signature = part.get("thought_signature")
                signed = signature if isinstance(signature, str) and signature else None
                calls.append(ToolCall(name, call.get("args"), _text(call.get("id")), signed))
    return "".join(texts), tuple(calls)


def gemini_other_parts(content: object) -> bool:
    """Whether ``content`` has a part, not a thought, holding a non-empty ``GEMINI_OTHER_PARTS``
    object (an image, a file, code, a code result)."""
    if type(content) is not dict and not isinstance(content, Mapping):
        return False
    parts = content.get("parts")
    if not isinstance(parts, list):
        return False
    for part in parts:
        if type(part) is not dict and not isinstance(part, Mapping):
            continue
        if part.get("thought") is True:
            continue
        for name in GEMINI_OTHER_PARTS:
            value = part.get(name)
            if isinstance(value, Mapping) and value:
                return True
    return False
