"""The deterministic local model: the answer to one request line (pure).

An answer is derived from a hash of the request's text, never an echo of it: the same request
always gets the same text, ids and usage. The request's directives (`_directives.py`) choose the
outcome: a normal answer, a refusal, a truncation, a finish reason, an empty answer, a per-line
LineFailure, or no line at all; each is shaped here as Claude's Messages API or Gemini's
GenerateContentResponse would write it.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from vertexbatch._requests.sdk_fields import claude_unknown, gemini_unknown
from vertexbatch.emulator._claude_tools import tool_problem
from vertexbatch.emulator._conform import breaking, conforming
from vertexbatch.emulator._directives import (
    DirectiveError,
    Plan,
    claude_texts,
    gemini_texts,
    plan_directives,
    without_directives,
)
from vertexbatch.emulator._errors import LineFailure
from vertexbatch.emulator._followups import (
    answers_tools,
    claude_followup_problem,
    claude_thinks,
    gemini_followup_problem,
    signature_of,
    signs_calls,
)
from vertexbatch.emulator._gemini_parts import gemini_part, gemini_schema

__all__ = ["Answer", "answer_claude", "answer_gemini", "rfc3339"]

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


TINY_LIMIT = 2
"""A max_tokens / maxOutputTokens this small truncates any answer, as it would on a real model
(the local model's answers are at least nine words); larger limits are not counted: use
`[[vb:truncate]]`."""
GEMINI_ROLES = ("user", "model")


def _outcome(plan: Plan, limit: int | None) -> str:
    """The plan's outcome, or a truncation when a normal answer meets a tiny limit."""
    if plan.outcome == "answer" and limit is not None and 0 < limit <= TINY_LIMIT:
        return "truncate"
    return plan.outcome


@dataclass(frozen=True, slots=True)
class Answer:
    """The model's answer to one line: a response, a per-line error, or nothing (dropped)."""

    response: dict[str, Any] | None = None
    error: LineFailure | None = None
    dropped: bool = False


def rfc3339(moment: datetime) -> str:
    """RFC3339 with microseconds and `Z` (moment must be UTC)."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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
    digest = hashlib.sha256(without_directives(prompt).strip().encode("utf-8")).hexdigest()
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


def _plan(texts: list[str]) -> Answer | tuple[Plan, _Draft]:
    """The answer when the directives settle it (bad, drop, error), else the plan and the draft."""
    try:
        plan = plan_directives(texts)
    except DirectiveError as exc:
        return Answer(error=LineFailure(400, f"Local model: {exc}"))
    if plan.outcome == "drop":
        return Answer(dropped=True)
    if plan.outcome == "error":
        code = plan.error_code
        message = _ERROR_MESSAGES.get(code, f"Local model error {code}.")
        return Answer(
            error=LineFailure(
                code=code, message=message, shape=plan.error_shape, text=plan.error_text
            )
        )
    return plan, _draft(texts, plan)


def _int_field(request: Mapping[str, Any], *path: str) -> int | None:
    value: Any = request
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _word(draft: _Draft) -> str:
    """A word of the draft, for the strings of a schema's answer."""
    return draft.text.split(": ", 1)[1].split()[0].rstrip(".")


def _schema_text(schema: Any, plan: Plan, draft: _Draft) -> str:
    """The answer text to a request with a response schema, as the plan wants it."""
    if plan.schema_answer == "not_json":
        return draft.text
    make = breaking if plan.schema_answer == "nonconforming" else conforming
    return json.dumps(make(schema, _word(draft)), separators=(",", ":"))


def _declared(tools: Any, name: str | None, *fields: str) -> Mapping[str, Any] | None:
    """The declared tool ``name`` (``""``: the first) among ``tools``."""
    found = [t for t in tools if isinstance(t, Mapping)] if isinstance(tools, list) else []
    for tool in found:
        if name == "" or tool.get("name") == name:
            return tool
    return None


def _claude_special(
    request: Mapping[str, Any], plan: Plan, draft: _Draft
) -> Answer | tuple[list[dict[str, Any]], str, int] | None:
    """A Claude answer shaped by a tool call or a response schema: (content, stop, tokens)."""
    tools = request.get("tools")
    choice = request.get("tool_choice")
    forced = (
        choice.get("name") if isinstance(choice, Mapping) and choice.get("type") == "tool" else None
    )
    call_id = f"toolu_vrtx_{draft.digest[:20]}"
    if plan.tool_call is not None and not answers_tools(request):
        tool = _declared(tools, plan.tool_call)
        if tool is None:
            return Answer(error=LineFailure(400, "tool_call: the request declares no such tool"))
        arguments = conforming(tool.get("input_schema"), _word(draft))
        block = {"type": "tool_use", "id": call_id, "name": tool.get("name"), "input": arguments}
        return [block], "tool_use", draft.words
    tool = _declared(tools, forced) if isinstance(forced, str) and forced else None
    if tool is not None and plan.schema_answer != "not_json":
        make = breaking if plan.schema_answer == "nonconforming" else conforming
        arguments = make(tool.get("input_schema"), _word(draft))
        block = {"type": "tool_use", "id": call_id, "name": forced, "input": arguments}
        return [block], "tool_use", draft.words
    config = request.get("output_config")
    form = config.get("format") if isinstance(config, Mapping) else None
    if isinstance(form, Mapping) and form.get("type") == "json_schema":
        text = _schema_text(form.get("schema"), plan, draft)
        return [{"type": "text", "text": text}], "end_turn", draft.words
    return None


def answer_claude(request: Any, model: str, *, check_fields: bool = True) -> Answer:
    """Answer one Claude line's `request` (an Anthropic Messages body without `model`).

    A field the installed anthropic SDK's `MessageCreateParams` does not name (nor Vertex's own,
    `_requests.sdk_fields.VERTEX_CLAUDE_FIELDS`) is refused as the Anthropic API refuses it: 400
    `invalid_request_error`, "temprature: Extra inputs are not permitted" (`check_fields=False`:
    any field is taken).
    """
    if not isinstance(request, Mapping):
        return Answer(error=LineFailure(400, "request: must be an object"))
    if not isinstance(request.get("messages"), list) or not request["messages"]:
        return Answer(error=LineFailure(400, "messages: Field required"))
    if _int_field(request, "max_tokens") is None:
        return Answer(error=LineFailure(400, "max_tokens: Field required"))
    max_tokens = _int_field(request, "max_tokens")
    if max_tokens is not None and max_tokens < 1:
        return Answer(error=LineFailure(400, "max_tokens: must be greater than or equal to 1"))
    unknown = claude_unknown(request) if check_fields else None
    if unknown is not None:
        return Answer(error=LineFailure(400, unknown.anthropic_message))
    version = request.get("anthropic_version")
    if not isinstance(version, str) or not version:
        return Answer(error=LineFailure(400, "anthropic_version: Field required"))
    refused = tool_problem(request.get("tools")) or claude_followup_problem(request)
    if refused is not None:
        return Answer(error=LineFailure(400, refused))
    planned = _plan(claude_texts(request))
    if isinstance(planned, Answer):
        return planned
    plan, draft = planned
    if plan.parts is not None:
        return Answer(error=LineFailure(400, "parts: Claude answers have no such parts"))
    content: list[dict[str, Any]] = []
    stop_reason = "end_turn"
    stop_sequence: str | None = None
    output_tokens = 0
    text: str | None = None
    outcome = _outcome(plan, max_tokens)
    special = _claude_special(request, plan, draft) if outcome == "answer" else None
    if isinstance(special, Answer):
        return special
    if special is not None:
        content, stop_reason, output_tokens = special
    elif outcome == "answer":
        text, output_tokens = draft.text, draft.words
    elif outcome == "truncate":
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
        content.append({"type": "text", "text": text})
    thinks = plan.think_tokens is not None or claude_thinks(request)
    if thinks and (text is not None or stop_reason == "tool_use"):
        thought = {"type": "thinking", "thinking": draft.thought}
        content.insert(0, {**thought, "signature": signature_of(draft.thought)})
        output_tokens += draft.think_tokens
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


def answer_gemini(
    request: Any,
    model: str,
    now: datetime,
    *,
    check_fields: bool = True,
    media: tuple[str, ...] = (),
) -> Answer:
    """Answer one Gemini line's `request` (a GenerateContentRequest, camelCase or snake_case).

    `media`: the marks of what its media parts hold (`_media.read_media`), part of the prompt.

    A field google-genai's types do not name is refused first, as Vertex's JSON parser refuses
    it: 400 INVALID_ARGUMENT, `Invalid JSON payload received. Unknown name "x" at
    'generation_config': Cannot find field.` (`check_fields=False`: any field is taken).
    """
    if not isinstance(request, Mapping):
        return Answer(error=LineFailure(400, "request: must be an object"))
    unknown = gemini_unknown(request) if check_fields else None
    if unknown is not None:
        return Answer(error=LineFailure(400, unknown.google_message))
    unsigned = gemini_followup_problem(request, model)
    if unsigned is not None:
        return Answer(error=LineFailure(400, unsigned))
    contents = request.get("contents")
    if not isinstance(contents, list) or not contents:
        message = "Unable to submit request because it has an empty contents field."
        return Answer(error=LineFailure(400, message))
    if any(
        isinstance(content, Mapping) and content.get("role", "user") not in GEMINI_ROLES
        for content in contents
    ):
        return Answer(error=LineFailure(400, "Please use a valid role: user, model."))
    planned = _plan(gemini_texts(request) + list(media))
    if isinstance(planned, Answer):
        return planned
    plan, draft = planned
    config = request.get("generationConfig") or request.get("generation_config") or {}
    limit = _int_field(config, "maxOutputTokens") or _int_field(config, "max_output_tokens")
    outcome = _outcome(plan, limit)
    prompt_tokens = draft.prompt_tokens + plan.cached
    response: dict[str, Any] = {}
    candidate_tokens = 0
    thought_tokens = 0
    if outcome in ("answer", "truncate", "finish", "empty"):
        parts: list[dict[str, Any]] = []
        finish = "STOP"
        text: str | None = draft.text
        if outcome == "truncate":
            finish, text = "MAX_TOKENS", draft.partial
            candidate_tokens = limit or draft.partial_words
        elif plan.outcome == "finish":
            finish, text = plan.finish_reason or "STOP", draft.partial
            candidate_tokens = draft.partial_words
        elif plan.outcome == "empty":
            text = None
        else:
            candidate_tokens = draft.words
            call = _gemini_call(request, plan, draft, signs_calls(model))
            if isinstance(call, Answer):
                return call
            if plan.parts is not None:
                made = (draft.thought, draft.digest, draft.words)
                parts.extend(gemini_part(kind, *made) for kind in plan.parts)
                text = None
            elif call is not None:
                parts.append(call)
                text = None
            else:
                schema = gemini_schema(config)
                if schema is not None:
                    text = _schema_text(schema, plan, draft)
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


def _gemini_call(
    request: Mapping[str, Any], plan: Plan, draft: _Draft, signed: bool
) -> Answer | dict[str, Any] | None:
    """A ``functionCall`` part when the plan asks for a tool call (``None``: it does not, or
    the request answers tool calls), signed for a Gemini 3 model or a plan that thinks."""
    if plan.tool_call is None or answers_tools(request):
        return None
    declared: list[Any] = []
    for tool in request.get("tools") or ():
        if isinstance(tool, Mapping):
            found = tool.get("functionDeclarations") or tool.get("function_declarations") or ()
            declared.extend(found if isinstance(found, list) else ())
    function = _declared(declared, plan.tool_call)
    if function is None:
        return Answer(error=LineFailure(400, "tool_call: the request declares no such function"))
    schema = function.get("parameters") or function.get("parametersJsonSchema")
    args = conforming(schema, _word(draft)) if schema is not None else {}
    part: dict[str, Any] = {"functionCall": {"name": function.get("name"), "args": args}}
    if signed or plan.think_tokens is not None:
        part["thoughtSignature"] = signature_of(f"{function.get('name')} {draft.digest}")
    return part
