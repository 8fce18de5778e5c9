"""A local stack that behaves as a `vertexbatch probe` report says the real service did (pure).

`options_from_report` reads the report's flat `facts` (docs/local-stack.md lists each one, the
UNCONFIRMED point it settles and the option it sets) and returns the JobOptions and Timing that
reproduce them; a fact the probe could not see, or saw both ways ("mixed"), keeps the default.
The stack reads the report as data: it shares no code with the client that wrote it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import replace
from itertools import accumulate
from typing import Any

from vertexbatch.emulator._options import JobOptions, Timing

__all__ = ["QUEUE_SECONDS", "load_report", "options_from_report"]

QUEUE_SECONDS = 0.05
"""How long a job queues on a stack built from a report that saw QUEUED: the state, not the
real wait (which can be minutes)."""

_ERROR_SHAPES = {
    "prefix_json": "status_string",
    "object": "status_object",
    "text": "status_text",
    "envelope": "error_envelope",
}


MAX_REPORT = 4 * 1024 * 1024  # a report is a few kilobytes: anything this large is not one


def load_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a probe report.

    Raises:
        ValueError: the file is not a probe report (not UTF-8 JSON, nested too deeply, over
            ``MAX_REPORT`` bytes, no `vertexbatch_probe` version and `facts`), or is a partial
            one (the probe stopped early).
    """
    with open(path, "rb") as handle:
        data = handle.read(MAX_REPORT + 1)
    if len(data) > MAX_REPORT:
        raise ValueError(f"{path} is larger than a probe report can be ({MAX_REPORT} bytes)")
    # Measured before parsing: a parser that recursed to its limit would run whatever the
    # garbage collector finalizes there at that depth too (and fail it).
    if _nesting(data) > MAX_NESTING:
        raise ValueError(f"{path} is not a vertexbatch probe report (nested too deeply)")
    try:
        report = json.loads(data.decode("utf-8"))
    except ValueError as exc:  # not UTF-8, or not JSON
        raise ValueError(
            f"{path} is not a vertexbatch probe report ({type(exc).__name__})"
        ) from None
    if isinstance(report, dict) and report.get("partial") is True:
        raise ValueError(
            f"{path} is a partial probe report (the probe stopped early, before any facts): "
            "run vertexbatch probe again"
        )
    if not isinstance(report, dict) or not isinstance(report.get("facts"), dict):
        raise ValueError(f"{path} is not a vertexbatch probe report (no 'facts')")
    if report.get("vertexbatch_probe") != 1:
        raise ValueError(
            f"{path}: unsupported probe report version {report.get('vertexbatch_probe')!r}"
        )
    return report


MAX_NESTING = 32
"""The deepest a report may nest: far deeper than one does (a few levels of facts), far
shallower than the parser's recursion limit."""

_STRING = re.compile(rb'"[^"]*"?')  # once escaped backslashes and quotes are gone
_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def _nesting(data: bytes) -> int:
    """How deep the arrays and objects of JSON text nest (brackets inside strings not counted;
    an upper bound for text that is not JSON)."""
    if data.count(b"[") + data.count(b"{") <= MAX_NESTING:
        return 0
    plain = _STRING.sub(b"", data.replace(b"\\\\", b"").replace(b'\\"', b""))
    steps = plain.translate(None, _BRACKETS)
    return max(accumulate(1 if step in b"[{" else -1 for step in steps), default=0)


def _first(facts: Mapping[str, Any], *keys: str) -> Any:
    """The first fact among keys that was seen one way (not None, not "mixed")."""
    for key in keys:
        value = facts.get(key)
        if value is not None and value != "mixed":
            return value
    return None


def options_from_report(report: Mapping[str, Any]) -> tuple[JobOptions, Timing]:
    """The JobOptions and Timing that make a stack show what the report's service showed."""
    facts: Mapping[str, Any] = report.get("facts") or {}
    options = JobOptions()
    changes: dict[str, Any] = {}
    # Each provider's row facts set its own option (Gemini's apart): one seen for one provider
    # only sets both, as the stack did before it could tell them apart.
    siblings = _first(facts, "claude.custom_id_echoed", "gemini.sibling_echoed")
    if isinstance(siblings, bool):
        changes["echo_siblings"] = siblings
    gemini_siblings = _first(facts, "gemini.sibling_echoed")
    if isinstance(gemini_siblings, bool) and gemini_siblings != siblings:
        changes["gemini_echo_siblings"] = gemini_siblings
    labels = _first(facts, "gemini.labels_echoed")
    if isinstance(labels, bool):
        changes["echo_labels"] = labels
    echo = _first(facts, "claude.request_echo", "gemini.request_echo")
    if echo in ("object", "string"):
        changes["request_echo"] = echo
    gemini_echo = _first(facts, "gemini.request_echo")
    if gemini_echo in ("object", "string") and gemini_echo != echo:
        changes["gemini_request_echo"] = gemini_echo
    response = _first(facts, "claude.response")
    if response in ("object", "string", "body"):
        changes["claude_success_shape"] = response
    claude_error = _ERROR_SHAPES.get(str(_first(facts, "claude.error_status")))
    if claude_error is not None:
        changes["claude_error_shape"] = claude_error
    gemini_error = _ERROR_SHAPES.get(str(_first(facts, "gemini.error_status")))
    if gemini_error is not None and gemini_error != "error_envelope":
        changes["gemini_error_shape"] = gemini_error
    ends = {facts.get("claude.end_state"), facts.get("gemini.end_state")}
    if "JOB_STATE_PARTIALLY_SUCCEEDED" in ends:
        changes["partially_succeeded"] = True
    offsets = [
        job.get("output_dir_offset_seconds")
        for job in (report.get("jobs") or {}).values()
        if isinstance(job, Mapping)
    ]
    offset = next((o for o in offsets if isinstance(o, int | float)), None)
    if offset is not None:
        changes["output_time_offset"] = float(offset)
    if 1 in (facts.get("claude.input_uris_accepted"), facts.get("gemini.input_uris_accepted")):
        changes["max_input_uris"] = 1  # a job of two input files was refused
    # The two lanes whose answered rows the probe checks against the row the reader assumes:
    # a form the stack can write is reproduced from the field names the rows had.
    if facts.get("embeddings.output_row") == "differs" and "response.embeddings[].values" in (
        facts.get("embeddings.output_fields") or ()
    ):
        changes["embedding_response"] = "embeddings"
    if facts.get("chat.output_row") == "differs" and "response.body.choices" in (
        facts.get("chat.output_fields") or ()
    ):
        changes["chat_response"] = "batch_body"
    timing = Timing()
    if facts.get("claude.queued_seen") or facts.get("gemini.queued_seen"):
        created_queued = "JOB_STATE_QUEUED" in (
            facts.get("claude.create_state"),
            facts.get("gemini.create_state"),
        ) or bool(
            facts.get("claude.queued_before_pending") or facts.get("gemini.queued_before_pending")
        )
        timing = Timing(
            queued_seconds=QUEUE_SECONDS, queued_at="create" if created_queued else "after_pending"
        )
    return replace(options, **changes), timing
