"""The deterministic local model and its directives (pure).

An answer is derived from a hash of the request's text, never an echo of it: the same request
always gets the same text, ids and usage. Directives written anywhere in that text force an
outcome, `[[vb:NAME arg k=v ...]]`:

- `refuse [category=C] [detail=some_words] [block=R]`: Claude `stop_reason: "refusal"` with
  `stop_details`, no content; Gemini `promptFeedback.blockReason` (SAFETY or R), no candidates.
- `finish REASON`: Claude `stop_reason: REASON`; Gemini candidate `finishReason: REASON` with
  `finishMessage`; both with partial text.
- `truncate`: a max-tokens stop with partial text (`max_tokens` / `MAX_TOKENS`).
- `empty`: a finished answer with no text (Claude `content: []`; Gemini STOP with no parts).
- `no_candidates`: Gemini: no candidates and no promptFeedback; Claude: as `empty`.
- `error CODE [shape=S]`: a per-line error (Claude in shape S or the job's shape).
- `drop`: no output line at all.
- `think [tokens=N]`: a thinking block (Claude) or thought part (Gemini) before the text.
- `cached N`: Claude `cache_read_input_tokens`, Gemini `cachedContentTokenCount` (in the prompt).
- `cache_write N`: Claude `cache_creation_input_tokens` (Gemini ignores it).

An unknown directive or a malformed argument answers the line with a 400 error, so a typo in a
test shows up instead of silently giving a normal answer.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from vertexbatch.emulator._errors import status_name
from vertexbatch.emulator._options import CLAUDE_ERROR_SHAPES

__all__ = [
    "Answer",
    "DirectiveError",
    "LineError",
    "Plan",
    "answer_claude",
    "answer_gemini",
    "plan_directives",
    "rfc3339",
]

_DIRECTIVE = re.compile(r"\[\[vb:([^\]\s]*)([^\]]*)\]\]")

_WORDS = (
    "amber", "basalt", "cedar", "delta", "ember", "fjord", "granite", "harbor",
    "iris", "juniper", "kelp", "lagoon", "meadow", "nectar", "onyx", "pebble",
    "quartz", "river", "saffron", "tundra", "umber", "valley", "willow", "xenon",
    "yarrow", "zephyr", "alder", "birch", "canyon", "dune", "estuary", "fern",
    "glacier", "heather", "inlet", "jade", "knoll", "lichen", "marsh", "nova",
    "orchid", "prairie", "quill", "ridge", "sierra", "thistle", "upland", "vista",
    "wren", "yonder", "azure", "bramble", "coral", "dawn", "elm", "flint",
    "grove", "hazel", "ivy", "jasper", "kestrel", "lark", "maple", "nimbus",
)  # fmt: skip

Outcome = Literal[
    "answer", "refuse", "finish", "truncate", "empty", "no_candidates", "error", "drop"
]
# When several outcome directives are written, the first in this order wins.
_OUTCOME_RANK: tuple[Outcome, ...] = (
    "drop", "error", "refuse", "no_candidates", "empty", "truncate", "finish", "answer",
)  # fmt: skip

_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}

_ERROR_MESSAGES = {
    400: "Request contains an invalid argument.",
    403: "Permission denied.",
    404: "Requested entity was not found.",
    429: "Resource exhausted. Please try again later.",
    500: "Internal error encountered.",
    503: "The service is currently unavailable.",
    504: "Deadline exceeded.",
    529: "The model is overloaded. Please try again later.",
}


class DirectiveError(ValueError):
    """A directive the local model does not understand (the line gets a 400 error)."""


@dataclass(frozen=True, slots=True)
class LineError:
    """A per-line failure: an HTTP-style code and a message without request content.

    `shape` overrides the job's Claude error shape when a directive asked for one.
    """

    code: int
    message: str
    shape: str | None = None

    @property
    def status(self) -> str:
        """The gRPC status name of the code."""
        return status_name(self.code)

    @property
    def anthropic_type(self) -> str:
        """The Anthropic error type of the code."""
        if self.code in _ANTHROPIC_ERROR_TYPES:
            return _ANTHROPIC_ERROR_TYPES[self.code]
        return "api_error" if self.code >= 500 else "invalid_request_error"


@dataclass(frozen=True, slots=True)
class Answer:
    """The model's answer to one line: a response, a per-line error, or nothing (dropped)."""

    response: dict[str, Any] | None = None
    error: LineError | None = None
    dropped: bool = False


@dataclass(frozen=True, slots=True)
class Plan:
    """The combined effect of a request's directives."""

    outcome: Outcome = "answer"
    finish_reason: str | None = None
    error_code: int = 0
    error_shape: str | None = None
    refuse_category: str | None = None
    refuse_detail: str | None = None
    block_reason: str = "SAFETY"
    think_tokens: int | None = None
    cached: int = 0
    cache_write: int = 0


def rfc3339(moment: datetime) -> str:
    """RFC3339 with microseconds and `Z` (moment must be UTC)."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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
        allowed_named = {"shape"}
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
    elif name == "think":
        allowed_named = {"tokens"}
        fields["think_tokens"] = _int_arg(name, named["tokens"]) if "tokens" in named else -1
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


@dataclass(frozen=True, slots=True)
class _Draft:
    """What the local model would say, before any provider shape is applied."""

    digest: str
    text: str
    partial: str
    thought: str
    prompt_tokens: int
    think_tokens: int

    @property
    def words(self) -> int:
        return len(self.text.split())

    @property
    def partial_words(self) -> int:
        return len(self.partial.split())


def _draft(texts: list[str], plan: Plan) -> _Draft:
    prompt = "\n".join(texts)
    # Directives steer the outcome, not the answer: the same question gets the same text.
    digest = hashlib.sha256(_DIRECTIVE.sub("", prompt).strip().encode("utf-8")).hexdigest()
    raw = bytes.fromhex(digest)
    count = 5 + raw[0] % 8
    words = [_WORDS[b % len(_WORDS)] for b in raw[1 : 1 + count]]
    text = f"Local model answer {digest[:8]}: {' '.join(words)}."
    partial = f"Local model answer {digest[:8]}: {' '.join(words[: max(1, count // 2)])}"
    thought = f"Local model thinking {digest[8:16]}: weighing {words[0]} against {words[-1]}."
    think_tokens = 0
    if plan.think_tokens is not None:
        think_tokens = plan.think_tokens if plan.think_tokens >= 0 else 16 + raw[20] % 48
    return _Draft(
        digest=digest,
        text=text,
        partial=partial,
        thought=thought,
        prompt_tokens=len(prompt) // 4 + 3,
        think_tokens=think_tokens,
    )


def _line_error(plan: Plan) -> LineError:
    code = plan.error_code
    message = _ERROR_MESSAGES.get(code, f"Local model error {code}.")
    return LineError(code=code, message=message, shape=plan.error_shape)


def _int_field(request: Mapping[str, Any], *path: str) -> int | None:
    value: Any = request
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def answer_claude(request: Any, model: str) -> Answer:
    """Answer one Claude line's `request` (an Anthropic Messages body without `model`)."""
    if not isinstance(request, Mapping):
        return Answer(error=LineError(400, "request: must be an object"))
    if not isinstance(request.get("messages"), list) or not request["messages"]:
        return Answer(error=LineError(400, "messages: Field required"))
    if _int_field(request, "max_tokens") is None:
        return Answer(error=LineError(400, "max_tokens: Field required"))
    version = request.get("anthropic_version")
    if not isinstance(version, str) or not version:
        return Answer(error=LineError(400, "anthropic_version: Field required"))
    texts = claude_texts(request)
    try:
        plan = plan_directives(texts)
    except DirectiveError as exc:
        return Answer(error=LineError(400, f"Local model: {exc}"))
    if plan.outcome == "drop":
        return Answer(dropped=True)
    if plan.outcome == "error":
        return Answer(error=_line_error(plan))
    draft = _draft(texts, plan)
    content: list[dict[str, Any]] = []
    stop_reason = "end_turn"
    stop_sequence: str | None = None
    output_tokens = 0
    text: str | None = None
    if plan.outcome == "answer":
        text, output_tokens = draft.text, draft.words
    elif plan.outcome == "truncate":
        stop_reason = "max_tokens"
        text = draft.partial
        output_tokens = _int_field(request, "max_tokens") or draft.partial_words
    elif plan.outcome == "finish":
        stop_reason = plan.finish_reason or "end_turn"
        text, output_tokens = draft.partial, draft.partial_words
        if stop_reason == "stop_sequence":
            sequences = request.get("stop_sequences")
            stop_sequence = sequences[0] if isinstance(sequences, list) and sequences else "###"
    elif plan.outcome == "refuse":
        stop_reason = "refusal"
    if text is not None:
        if plan.think_tokens is not None:
            signature = base64.b64encode(bytes.fromhex(draft.digest)).decode("ascii")
            content.append({"type": "thinking", "thinking": draft.thought, "signature": signature})
            output_tokens += draft.think_tokens
        content.append({"type": "text", "text": text})
    usage: dict[str, Any] = {"input_tokens": draft.prompt_tokens, "output_tokens": output_tokens}
    if plan.cache_write:
        usage["cache_creation_input_tokens"] = plan.cache_write
    if plan.cached:
        usage["cache_read_input_tokens"] = plan.cached
    message: dict[str, Any] = {
        "id": f"msg_vrtx_{draft.digest[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "usage": usage,
    }
    if plan.outcome == "refuse":
        message["stop_details"] = {
            "type": "refusal",
            "category": plan.refuse_category,
            "explanation": plan.refuse_detail,
        }
    return Answer(response=message)


def answer_gemini(request: Any, model: str, now: datetime) -> Answer:
    """Answer one Gemini line's `request` (a GenerateContentRequest, camelCase or snake_case)."""
    if not isinstance(request, Mapping):
        return Answer(error=LineError(400, "request: must be an object"))
    contents = request.get("contents")
    if not isinstance(contents, list) or not contents:
        return Answer(
            error=LineError(400, "Unable to submit request because it has an empty contents field.")
        )
    texts = gemini_texts(request)
    try:
        plan = plan_directives(texts)
    except DirectiveError as exc:
        return Answer(error=LineError(400, f"Local model: {exc}"))
    if plan.outcome == "drop":
        return Answer(dropped=True)
    if plan.outcome == "error":
        return Answer(error=_line_error(plan))
    draft = _draft(texts, plan)
    prompt_tokens = draft.prompt_tokens + plan.cached
    response: dict[str, Any] = {}
    candidate_tokens = 0
    thought_tokens = 0
    if plan.outcome in ("answer", "truncate", "finish", "empty"):
        parts: list[dict[str, Any]] = []
        finish = "STOP"
        text: str | None = draft.text
        if plan.outcome == "truncate":
            finish, text = "MAX_TOKENS", draft.partial
            config = request.get("generationConfig") or request.get("generation_config") or {}
            limit = _int_field(config, "maxOutputTokens") or _int_field(config, "max_output_tokens")
            candidate_tokens = limit or draft.partial_words
        elif plan.outcome == "finish":
            finish, text = plan.finish_reason or "STOP", draft.partial
            candidate_tokens = draft.partial_words
        elif plan.outcome == "empty":
            text = None
        else:
            candidate_tokens = draft.words
        if text is not None:
            if plan.think_tokens is not None:
                parts.append({"text": draft.thought, "thought": True})
                thought_tokens = draft.think_tokens
            parts.append({"text": text})
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
        candidate["finishReason"] = finish
        if plan.outcome == "finish":
            candidate["finishMessage"] = f"Local model stopped with {finish}."
        response["candidates"] = [candidate]
    elif plan.outcome == "refuse":
        response["promptFeedback"] = {
            "blockReason": plan.block_reason,
            "blockReasonMessage": plan.refuse_detail
            or "The prompt was blocked by the local model.",
        }
    usage: dict[str, Any] = {"promptTokenCount": prompt_tokens}
    if candidate_tokens:
        usage["candidatesTokenCount"] = candidate_tokens
    usage["totalTokenCount"] = prompt_tokens + candidate_tokens + thought_tokens
    if thought_tokens:
        usage["thoughtsTokenCount"] = thought_tokens
    if plan.cached:
        usage["cachedContentTokenCount"] = plan.cached
        usage["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": plan.cached}]
    usage["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": prompt_tokens}]
    if candidate_tokens:
        usage["candidatesTokensDetails"] = [{"modality": "TEXT", "tokenCount": candidate_tokens}]
    usage["trafficType"] = "ON_DEMAND"
    response["usageMetadata"] = usage
    response["modelVersion"] = model
    response["createTime"] = rfc3339(now)
    response["responseId"] = base64.urlsafe_b64encode(bytes.fromhex(draft.digest[:34])).decode()[
        :23
    ]
    return Answer(response=response)
