"""The directive language of the local model: `[[vb:NAME arg k=v ...]]` read into a Plan (pure).

Directives written anywhere in a request's text (`claude_texts`, `gemini_texts`) force an outcome:

- `refuse [category=C] [detail=some_words] [block=R]`: Claude `stop_reason: "refusal"` with
  `stop_details`, no content; Gemini `promptFeedback.blockReason` (SAFETY or R), no candidates.
- `finish REASON`: Claude `stop_reason: REASON`; Gemini candidate `finishReason: REASON` with
  `finishMessage`; both with partial text.
- `truncate`: a max-tokens stop with partial text (`max_tokens` / `MAX_TOKENS`).
- `empty`: a finished answer with no text (Claude `content: []`; Gemini STOP with no parts).
- `no_candidates`: Gemini: no candidates and no promptFeedback; Claude: as `empty`.
- `error CODE [shape=S] [text=some_words]`: a per-line error in shape S or the job's shape;
  `text` is the sentence of the `status_text` shape (underscores become spaces).
- `drop`: no output line at all.
- `think [tokens=N]`: a thinking block (Claude) or thought part (Gemini) before the text.
- `cached N`: Claude `cache_read_input_tokens`, Gemini `cachedContentTokenCount` (in the prompt).
- `cache_write N`: Claude `cache_creation_input_tokens` (Gemini ignores it).
- `nonconforming`: a request with a response schema (Claude's forced tool or
  `output_config.format`, Gemini's `responseSchema` / `responseJsonSchema`) is answered with
  JSON that does not follow it; without one, nothing changes. A schema's answer otherwise
  conforms (`_conform.py`).
- `not_json`: a request with a response schema is answered with prose, not JSON (Claude: a text
  block instead of the forced tool call).
- `tool_call [name=N]`: the answer is a call of the request's declared tool N (default: the first
  declared; Claude `tool_use` with `stop_reason: "tool_use"`, Gemini a `functionCall` part), its
  arguments conforming to the tool's schema; a request that declares no tool gets a 400 error.
- `parts KIND[,KIND...]`: Gemini: a finished answer (STOP) whose parts are one of each KIND, in
  order, and no text part: `inline_data` (a PNG), `file_data` (a gs:// file), `executable_code`,
  `code_execution_result`, `thought` (a thought part). Claude has no such answer: a 400 error.

When several outcome directives are written, the first of drop, error, refuse, no_candidates,
empty, truncate, finish wins. An unknown directive or a malformed argument raises DirectiveError,
which the local model answers with a 400 line error, so a typo in a test shows up instead of
silently giving a normal answer. Directives steer the outcome, never the answer's text
(`without_directives`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from vertexbatch.emulator._options import CLAUDE_ERROR_SHAPES

__all__ = [
    "PART_KINDS",
    "DirectiveError",
    "Outcome",
    "Plan",
    "claude_texts",
    "gemini_texts",
    "plan_directives",
    "without_directives",
]

_DIRECTIVE = re.compile(r"\[\[vb:([^\]\s]*)([^\]]*)\]\]")

Outcome = Literal[
    "answer", "refuse", "finish", "truncate", "empty", "no_candidates", "error", "drop"
]
# When several outcome directives are written, the first in this order wins.
_OUTCOME_RANK: tuple[Outcome, ...] = (
    "drop", "error", "refuse", "no_candidates", "empty", "truncate", "finish", "answer",
)  # fmt: skip


class DirectiveError(ValueError):
    """A directive the local model does not understand (the line gets a 400 error)."""


@dataclass(frozen=True, slots=True)
class Plan:
    """The combined effect of a request's directives."""

    outcome: Outcome = "answer"
    finish_reason: str | None = None
    error_code: int = 0
    error_shape: str | None = None
    error_text: str | None = None
    refuse_category: str | None = None
    refuse_detail: str | None = None
    block_reason: str = "SAFETY"
    think_tokens: int | None = None
    cached: int = 0
    cache_write: int = 0
    schema_answer: Literal["conforming", "nonconforming", "not_json"] = "conforming"
    tool_call: str | None = None  # "" for the first declared tool
    parts: tuple[str, ...] | None = None  # Gemini: the answer's part kinds, no text part


PART_KINDS = ("inline_data", "file_data", "executable_code", "code_execution_result", "thought")


def _int_arg(name: str, value: str) -> int:
    if not value.isdigit():
        raise DirectiveError(f"directive {name} needs a non-negative integer")
    return int(value)


def plan_directives(texts: list[str]) -> Plan:
    """Parse every `[[vb:...]]` directive in texts into one plan.

    Raises:
        DirectiveError: an unknown directive or a malformed argument.
    """
    outcomes: set[Outcome] = set()
    fields: dict[str, Any] = {}
    for text in texts:
        for match in _DIRECTIVE.finditer(text):
            name = match.group(1)
            positional: list[str] = []
            named: dict[str, str] = {}
            for token in match.group(2).split():
                key, sep, value = token.partition("=")
                if sep:
                    named[key] = value
                else:
                    positional.append(token)
            _apply(name, positional, named, outcomes, fields)
    outcome: Outcome = next((o for o in _OUTCOME_RANK if o in outcomes), "answer")
    return Plan(outcome=outcome, **fields)


def _apply(
    name: str,
    positional: list[str],
    named: dict[str, str],
    outcomes: set[Outcome],
    fields: dict[str, Any],
) -> None:
    allowed_named: set[str] = set()
    max_positional = 0
    if name == "refuse":
        outcomes.add("refuse")
        allowed_named = {"category", "detail", "block"}
        if "category" in named:
            fields["refuse_category"] = named["category"]
        if "detail" in named:
            fields["refuse_detail"] = named["detail"].replace("_", " ")
        if "block" in named:
            fields["block_reason"] = named["block"]
    elif name == "finish":
        max_positional = 1
        if len(positional) != 1:
            raise DirectiveError("directive finish needs a REASON")
        outcomes.add("finish")
        fields["finish_reason"] = positional[0]
    elif name in ("truncate", "empty", "no_candidates", "drop"):
        outcomes.add(name)  # type: ignore[arg-type]
    elif name == "error":
        max_positional = 1
        allowed_named = {"shape", "text"}
        if len(positional) != 1:
            raise DirectiveError("directive error needs an HTTP status")
        code = _int_arg(name, positional[0])
        if not 400 <= code <= 599:
            raise DirectiveError("directive error needs a status from 400 to 599")
        shape = named.get("shape")
        if shape is not None and shape not in CLAUDE_ERROR_SHAPES:
            raise DirectiveError(f"directive error shape must be one of {CLAUDE_ERROR_SHAPES}")
        outcomes.add("error")
        fields["error_code"] = code
        fields["error_shape"] = shape
        if "text" in named:
            fields["error_text"] = named["text"].replace("_", " ")
    elif name == "think":
        allowed_named = {"tokens"}
        fields["think_tokens"] = _int_arg(name, named["tokens"]) if "tokens" in named else -1
    elif name in ("nonconforming", "not_json"):
        fields["schema_answer"] = name
    elif name == "tool_call":
        allowed_named = {"name"}
        fields["tool_call"] = named.get("name", "")
    elif name == "parts":
        max_positional = 1
        kinds = tuple(positional[0].split(",")) if len(positional) == 1 else ()
        if not kinds or not set(kinds) <= set(PART_KINDS):
            raise DirectiveError(f"directive parts needs kinds among {PART_KINDS}")
        fields["parts"] = kinds
    elif name in ("cached", "cache_write"):
        max_positional = 1
        if len(positional) != 1:
            raise DirectiveError(f"directive {name} needs a token count")
        fields[name] = _int_arg(name, positional[0])
    else:
        raise DirectiveError("unknown directive")
    if len(positional) > max_positional or set(named) - allowed_named:
        raise DirectiveError(f"unexpected arguments to directive {name}")


def _texts(value: Any, keys: frozenset[str], key: str | None = None) -> Iterator[str]:
    if isinstance(value, str):
        if key in keys:
            yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _texts(v, keys, k)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item, keys, key)


_CLAUDE_TEXT_KEYS = frozenset({"text", "content", "system"})
_GEMINI_TEXT_KEYS = frozenset({"text"})


def claude_texts(request: Mapping[str, Any]) -> list[str]:
    """The texts of a Claude request: `system` and message content (strings and text blocks)."""
    found = list(_texts(request.get("system"), _CLAUDE_TEXT_KEYS, "system"))
    found.extend(_texts(request.get("messages"), _CLAUDE_TEXT_KEYS))
    return found


def gemini_texts(request: Mapping[str, Any]) -> list[str]:
    """The texts of a Gemini request: `parts[].text` in contents and the system instruction."""
    found: list[str] = []
    for key in ("systemInstruction", "system_instruction", "contents"):
        found.extend(_texts(request.get(key), _GEMINI_TEXT_KEYS))
    return found


def without_directives(text: str) -> str:
    """`text` with every directive taken out."""
    return _DIRECTIVE.sub("", text)
