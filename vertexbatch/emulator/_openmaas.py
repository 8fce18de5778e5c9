"""The local model's answers for managed open models (Llama, Qwen, DeepSeek, gpt-oss, ...): an
OpenAI chat-completions body in, an OpenAI chat completion out (pure).

A line of such a job is in the OpenAI batch format (`custom_id`, `method`, `url`, `body`); its
`body` is answered here, deterministically, as `_model` answers Claude and Gemini lines (the
same draft, the same directives; `_directives.py`). The outcome each directive gives:

- a normal answer: `finish_reason: "stop"`, the text in `message.content`; with
  `response_format: {"type": "json_schema", "json_schema": {"schema": S}}`, JSON following S
  (`nonconforming`, `not_json` as for the other lanes).
- `truncate`, or `max_tokens` / `max_completion_tokens` of `TINY_LIMIT` or less:
  `finish_reason: "length"` with partial text.
- `refuse`: `finish_reason: "content_filter"`, no content; `refuse category=refusal`: the
  message's `refusal` (the detail's words) with `finish_reason: "stop"`.
- `finish REASON`: that `finish_reason` with partial text.
- `empty`: `finish_reason: "stop"`, empty content; `no_candidates`: no choices.
- `tool_call [name=N]`: a call of the declared function N (`tools[].function`), arguments
  conforming to its `parameters`, `finish_reason: "tool_calls"`.
- `cached N`: `usage.prompt_tokens_details.cached_tokens` (within `prompt_tokens`).
- `error`, `drop`: as for the other lanes (`_rows.format_row` shapes the error; the
  `error_envelope` shape writes an OpenAI error body, `{"error": {"message", "type", "code"}}`).
- `parts`: a 400 error (no such answer).

The body's top-level fields are not checked against OpenAI's list (the client refuses an
unknown one before staging unless `check_fields=False`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from vertexbatch.emulator._conform import breaking, conforming
from vertexbatch.emulator._directives import claude_texts
from vertexbatch.emulator._errors import LineFailure
from vertexbatch.emulator._model import Answer, _int_field, _outcome, _plan, _schema_text, _word

__all__ = ["answer_chat"]


def _function(tools: Any, name: str) -> Mapping[str, Any] | None:
    """The declared function ``name`` (``""``: the first) of OpenAI ``tools``."""
    for tool in tools if isinstance(tools, list) else ():
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping) and (name == "" or function.get("name") == name):
            return function
    return None


def answer_chat(body: Any, model: str) -> Answer:
    """Answer one open-model line's `body` (an OpenAI chat-completions request)."""
    if not isinstance(body, Mapping):
        return Answer(error=LineFailure(400, "body: must be an object"))
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return Answer(error=LineFailure(400, "messages: Field required"))
    if body.get("stream"):
        return Answer(error=LineFailure(400, "stream: batch prediction does not stream"))
    planned = _plan(claude_texts(body))
    if isinstance(planned, Answer):
        return planned
    plan, draft = planned
    if plan.parts is not None:
        return Answer(error=LineFailure(400, "parts: chat completions have no such parts"))
    limit = _int_field(body, "max_completion_tokens") or _int_field(body, "max_tokens")
    outcome = _outcome(plan, limit)
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "stop"
    output = 0
    if outcome == "answer" and plan.tool_call is not None:
        function = _function(body.get("tools"), plan.tool_call)
        if function is None:
            return Answer(error=LineFailure(400, "tool_call: the request declares no such tool"))
        arguments = conforming(function.get("parameters"), _word(draft))
        call = {"name": function.get("name"), "arguments": json.dumps(arguments)}
        message["tool_calls"] = [
            {"id": f"call_vrtx_{draft.digest[:20]}", "type": "function", "function": call}
        ]
        finish, output = "tool_calls", draft.words
    elif outcome == "answer":
        form = body.get("response_format")
        spec = form.get("json_schema") if isinstance(form, Mapping) else None
        if isinstance(form, Mapping) and form.get("type") == "json_schema":
            schema = spec.get("schema") if isinstance(spec, Mapping) else None
            make = breaking if plan.schema_answer == "nonconforming" else conforming
            text = (
                _schema_text(schema, plan, draft)
                if plan.schema_answer == "not_json"
                else json.dumps(make(schema, _word(draft)), separators=(",", ":"))
            )
            message["content"] = text
        else:
            message["content"] = draft.text
        output = draft.words
    elif outcome == "truncate":
        finish, message["content"] = "length", draft.partial
        output = limit or draft.partial_words
    elif outcome == "finish":
        finish = plan.finish_reason or "stop"
        message["content"], output = draft.partial, draft.partial_words
    elif outcome == "refuse" and plan.refuse_category == "refusal":
        message["refusal"] = (plan.refuse_detail or "I can't help with that.").replace("_", " ")
    elif outcome == "refuse":
        finish = "content_filter"
    elif outcome == "empty":
        message["content"] = ""
    output += draft.think_tokens
    usage: dict[str, Any] = {
        "prompt_tokens": draft.prompt_tokens,
        "completion_tokens": output,
        "total_tokens": draft.prompt_tokens + output,
    }
    if plan.cached:
        usage["prompt_tokens_details"] = {"cached_tokens": min(plan.cached, draft.prompt_tokens)}
    choices = (
        []
        if outcome == "no_candidates"
        else [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}]
    )
    return Answer(
        response={
            "id": f"chatcmpl-vrtx-{draft.digest[:24]}",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": choices,
            "usage": usage,
        }
    )
