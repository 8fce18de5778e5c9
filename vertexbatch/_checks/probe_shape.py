"""``vertexbatch probe``'s pure half: a job or row reduced to its shape, and the facts it shows.

A shape keeps field names and JSON types and drops every value, except enums (``stop_reason``,
``finishReason``, ``type``, ``role``, ...: short identifiers only) and the prefix of a per-line
``status`` (``"Bad Request: {json}"`` keeps ``Bad Request``). No request or response text
survives: a string under any other key becomes ``"string"``.

``facts`` condenses a probe's jobs and rows into the flat, documented keys that
``LocalStack.from_probe_report`` reads and that docs/local-stack.md maps to the reference's
UNCONFIRMED points; ``LOCAL_DEFAULTS`` is what a default local stack shows (a test pins it by
probing one), and ``differences`` lists where a report departs from it. ``probe_rows`` are the
rows a probe stages: an answer, a truncation and one Vertex refuses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final

from .._json import load_json
from .._providers import by_command
from .._values import Provider

__all__ = [
    "PROBE_LANES",
    "ProbeLane",
    "probe_parts",
    "probe_rows",
    "LOCAL_DEFAULTS",
    "differences",
    "facts",
    "field_names",
    "output_dir_offset",
    "row_facts",
    "shape",
    "status_format",
]

# Keys whose string values are enums, kept when they look like one.
ENUM_KEYS = frozenset(
    {
        "stop_reason",
        "finishReason",
        "finish_reason",
        "blockReason",
        "type",
        "role",
        "modality",
        "trafficType",
        "state",
        "status",
        "service_tier",
    }
)
_ENUM = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
_PREFIXED = re.compile(r"^([A-Za-z][A-Za-z ]{0,40}): (\{.*\})\s*$", re.DOTALL)
_MAPS = frozenset({"labels"})  # map fields: their keys are ours, listed as the map alone
_OUTPUT_DIR = re.compile(r"prediction-model-(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)$")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def shape(value: Any, key: str = "", *, row: bool = True) -> Any:
    """``value`` with every value replaced by its JSON type, enums and status prefixes kept.

    Objects keep their keys (in order); an array becomes the list of its distinct element
    shapes; an integer ``code`` is kept (an error code, not content). ``row``: ``value`` is
    an output row, whose top-level string ``status`` is shaped by ``status_shape``.
    """
    if isinstance(value, dict):
        if key in _MAPS:
            return "object(map)"
        return {k: _shape_in(v, k, top=row and not key) for k, v in value.items()}
    if isinstance(value, list):
        seen: list[Any] = []
        for item in value:
            item_shape = shape(item, key, row=False)
            if item_shape not in seen:
                seen.append(item_shape)
        return seen
    return _scalar(value, key)


def _shape_in(value: Any, key: str, *, top: bool) -> Any:
    if top and key == "status" and isinstance(value, str):
        return status_shape(value)
    if isinstance(value, dict | list):
        return shape(value, key, row=False)
    return _scalar(value, key)


def _scalar(value: Any, key: str) -> Any:
    if isinstance(value, str) and key in ENUM_KEYS and _ENUM.match(value):
        return value
    if key == "code" and isinstance(value, int) and not isinstance(value, bool):
        return value
    return _json_type(value)


def status_shape(status: str) -> Any:
    """A string status: ``""``, ``"PREFIX: " + shape of its JSON tail``, or ``"text"``."""
    if status == "":
        return ""
    found = _PREFIXED.match(status)
    if found is None:
        return "text"
    try:
        tail = load_json(found.group(2))
    except ValueError:
        return f"{found.group(1)}: text"
    return {"prefix": found.group(1), "json": shape(tail, row=False)}


def status_format(row: Mapping[str, Any]) -> str:
    """How a row's status is written: absent, empty, prefix_json, object, text or envelope.

    ``envelope`` is an Anthropic error object in ``response`` (whatever the status says).
    """
    response = row.get("response")
    if isinstance(response, dict) and response.get("type") == "error":
        return "envelope"
    if "status" not in row:
        return "absent"
    status = row["status"]
    if isinstance(status, dict):
        return "object"
    if status == "":
        return "empty"
    if isinstance(status, str) and _PREFIXED.match(status):
        return "prefix_json"
    return "text"


def field_names(value: Any, prefix: str = "") -> list[str]:
    """Dotted field paths of a JSON object (``completionStats.successfulCount``), maps whole."""
    names: list[str] = []
    if not isinstance(value, dict):
        return names
    for key, item in value.items():
        path = f"{prefix}{key}"
        names.append(path)
        if isinstance(item, dict) and key not in _MAPS:
            names += field_names(item, path + ".")
        elif isinstance(item, list):
            for element in item:
                names += field_names(element, path + "[].")
    return sorted(set(names))


def output_dir_offset(directory: str, create_time: str) -> float | None:
    """Seconds from ``createTime`` to the time naming ``prediction-model-<time>`` (3 decimals)."""
    found = _OUTPUT_DIR.search(directory.rstrip("/"))
    if found is None:
        return None
    try:
        named = datetime.fromisoformat(found.group(1))
        created = datetime.fromisoformat(create_time)
    except ValueError:
        return None
    return round((named - created).total_seconds(), 3)


def _response_shape(response: Any) -> str:
    if isinstance(response, str):
        return "string"
    if isinstance(response, dict) and isinstance(response.get("body"), dict):
        return "body"
    if isinstance(response, dict) and response:
        return "object"
    return "absent"


def _request_echo(row: Mapping[str, Any]) -> str:
    request = row.get("request")
    if isinstance(request, str):
        return "string"
    return "object" if isinstance(request, dict) else "absent"


def row_facts(provider: Provider, row: Mapping[str, Any]) -> dict[str, Any]:
    """What one output row shows: echoes, request and response forms, status format."""
    request = row.get("request")
    if isinstance(request, str):
        try:
            request = load_json(request)
        except ValueError:
            request = None
    failed = status_format(row) not in ("empty", "absent")
    out: dict[str, Any] = {
        "request_echo": _request_echo(row),
        "status": status_format(row),
        "failed": failed,
    }
    out.update(PROBE_LANES[provider].row_facts(row, request, failed))
    return out


def _one(values: Iterable[Any]) -> Any:
    """The one value all rows agree on, "mixed" when they differ, None when there is none."""
    distinct: list[Any] = []
    for value in values:
        if value not in distinct:
            distinct.append(value)
    if not distinct:
        return None
    return distinct[0] if len(distinct) == 1 else "mixed"


def facts(
    jobs: Mapping[str, Mapping[str, Any]], rows: Mapping[str, Sequence[Any]]
) -> dict[str, Any]:
    """The flat facts of a probe: ``jobs`` and ``rows`` by provider key ("claude", "gemini").

    ``rows`` hold ``row_facts`` dicts.
    """
    out: dict[str, Any] = {}
    for name, job in jobs.items():
        states = [step["state"] for step in job.get("states", [])]
        out[f"{name}.create_state"] = states[0] if states else None
        out[f"{name}.queued_seen"] = "JOB_STATE_QUEUED" in states
        out[f"{name}.queued_before_pending"] = (
            "JOB_STATE_QUEUED" in states
            and "JOB_STATE_PENDING" in states
            and states.index("JOB_STATE_QUEUED") < states.index("JOB_STATE_PENDING")
        )
        out[f"{name}.end_state"] = states[-1] if states else None
        out[f"{name}.output_files"] = job.get("output_files")
        offset = job.get("output_dir_offset_seconds")
        out[f"{name}.output_dir_is_create_time"] = None if offset is None else offset == 0
        out[f"{name}.completion_counts"] = _one(job.get("completion_stats", {}).values())
        # Whether the service takes a job of two input files and answers the rows of both.
        out[f"{name}.input_uris_accepted"] = job.get("input_uris")
        read, staged = job.get("output_rows"), job.get("input_rows")
        out[f"{name}.reads_every_input_uri"] = None if not read else read >= (staged or 0)
    for name, found in rows.items():
        failed = [r for r in found if r["failed"]]
        good = [r for r in found if not r["failed"]]
        out[f"{name}.request_echo"] = _one(r["request_echo"] for r in found)
        out[f"{name}.success_status"] = _one(r["status"] for r in good)
        out[f"{name}.error_status"] = _one(r["status"] for r in failed)
        for fact, answered in PROBE_LANES[by_command(name).provider].facts:
            out[f"{name}.{fact}"] = _one(r[fact] for r in (good if answered else found))
    return out


LOCAL_DEFAULTS: Mapping[str, Any] = {
    "claude.create_state": "JOB_STATE_PENDING",
    "claude.queued_seen": False,
    "claude.queued_before_pending": False,
    "claude.end_state": "JOB_STATE_SUCCEEDED",
    "claude.output_files": ["predictions.jsonl"],
    "claude.output_dir_is_create_time": False,
    "claude.completion_counts": "string",
    "claude.input_uris_accepted": 2,
    "claude.reads_every_input_uri": True,
    "claude.request_echo": "object",
    "claude.success_status": "empty",
    "claude.error_status": "prefix_json",
    "claude.custom_id_echoed": True,
    "claude.response": "object",
    "gemini.create_state": "JOB_STATE_PENDING",
    "gemini.queued_seen": False,
    "gemini.queued_before_pending": False,
    "gemini.end_state": "JOB_STATE_SUCCEEDED",
    "gemini.output_files": ["predictions.jsonl"],
    "gemini.output_dir_is_create_time": False,
    "gemini.completion_counts": "string",
    "gemini.input_uris_accepted": 2,
    "gemini.reads_every_input_uri": True,
    "gemini.request_echo": "object",
    "gemini.success_status": "empty",
    "gemini.error_status": "prefix_json",
    "gemini.labels_echoed": True,
    "gemini.sibling_echoed": True,
}
"""The facts a probe of a local stack with default options shows (tests/checks/test_probe.py)."""


def differences(
    found: Mapping[str, Any], defaults: Mapping[str, Any] = LOCAL_DEFAULTS
) -> list[str]:
    """One line per fact where ``found`` differs from ``defaults``: ``key: service X, local Y``.

    A fact the probe could not see (None) is no difference.
    """
    lines = []
    for key, local in defaults.items():
        seen = found.get(key)
        if seen is not None and seen != local:
            lines.append(f"{key}: service {json.dumps(seen)}, local stack {json.dumps(local)}")
    return lines


_ANSWER = "Name one primary colour."
_LONG = "Count from one to twenty in words."


def probe_parts(rows: bytes) -> list[bytes]:
    """A probe's rows staged as two parts, as ``submit`` stages a large input: the first row,
    then the rest."""
    first, _, rest = rows.partition(b"\n")
    return [first + b"\n", rest]


def probe_rows(name: str, invalid: bool = True) -> bytes:
    """The staged JSONL of one provider's probe rows (without the invalid one: two)."""
    return PROBE_LANES[by_command(name).provider].rows(invalid)


def _claude_rows(invalid: bool) -> bytes:
    from .._requests.lines import claude_line
    from .._values import ClaudeRequest

    def claude(key: str, text: str, max_tokens: int) -> bytes:
        params = {"max_tokens": max_tokens, "messages": [{"role": "user", "content": text}]}
        return claude_line(ClaudeRequest(key=key, params=params)).data

    def refused_by_vertex(line: bytes) -> bytes:
        # max_tokens 0, which submit refuses before staging: only Vertex's answer is wanted.
        row = json.loads(line)
        row["request"]["max_tokens"] = 0
        return json.dumps(row, separators=(",", ":")).encode("utf-8") + b"\n"

    rows = claude("answer", _ANSWER, 64) + claude("truncated", _LONG, 1)
    return rows + refused_by_vertex(claude("invalid", _ANSWER, 1)) if invalid else rows


def _gemini_rows(invalid: bool) -> bytes:
    from google.genai import types as genai_types

    from .._requests.lines import gemini_line
    from .._values import GeminiRequest

    def gemini(key: str, text: str, role: str, limit: int) -> bytes:
        contents = [{"role": role, "parts": [{"text": text}]}]
        config = genai_types.GenerateContentConfig(max_output_tokens=limit)
        return gemini_line(GeminiRequest(key=key, contents=contents, config=config)).data

    rows = gemini("answer", _ANSWER, "user", 64) + gemini("truncated", _LONG, "user", 1)
    return rows + gemini("invalid", _ANSWER, "critic", 64) if invalid else rows


def _embedding_rows(invalid: bool) -> bytes:
    from .._requests.embedding_line import embedding_line
    from .._values import EmbeddingRequest

    rows = embedding_line(EmbeddingRequest("answer", _ANSWER)).data
    rows += embedding_line(EmbeddingRequest("sized", _LONG, dimensions=8)).data
    if not invalid:
        return rows
    # A task type no model knows, which submit stages all the same: only Vertex's answer counts.
    return rows + embedding_line(EmbeddingRequest("invalid", _ANSWER, task_type="NOT_A_TASK")).data


def _embedding_row_facts(row: Mapping[str, Any], request: Any, failed: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"key_echoed": "key" in row}
    if not failed:
        out["response"] = _response_shape(row.get("response"))
    return out


def _chat_rows(invalid: bool) -> bytes:
    from .._requests.lines import chat_line
    from .._values import ChatRequest

    def chat(key: str, text: str, max_tokens: int) -> bytes:
        body = {"max_tokens": max_tokens, "messages": [{"role": "user", "content": text}]}
        return chat_line(ChatRequest(key=key, body=body)).data

    rows = chat("answer", _ANSWER, 64) + chat("truncated", _LONG, 1)
    return rows + chat("invalid", _ANSWER, 64).replace(b'"user"', b'"critic"') if invalid else rows


def _claude_row_facts(row: Mapping[str, Any], request: Any, failed: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"custom_id_echoed": "custom_id" in row}
    if not failed:
        out["response"] = _response_shape(row.get("response"))
    return out


def _gemini_row_facts(row: Mapping[str, Any], request: Any, failed: bool) -> dict[str, Any]:
    labels = isinstance(request, dict) and isinstance(request.get("labels"), dict)
    return {"labels_echoed": labels, "sibling_echoed": "vb_key" in row}


@dataclass(frozen=True, slots=True)
class ProbeLane:
    """What a probe stages and reads differently for one provider."""

    model: str  # the model probed unless --<command>-model says otherwise ("": not probed)
    rows: Callable[[bool], bytes]  # (invalid) -> the staged JSONL of its probe rows
    row_facts: Callable[[Mapping[str, Any], Any, bool], dict[str, Any]]  # (row, request, failed)
    facts: tuple[tuple[str, bool], ...]  # its own row facts, each: whether only answers count


# Each provider's probe, by the provider table's names (tests/test_providers.py holds the two
# tables to the same rows): a new lane adds its row here too.
PROBE_LANES: Final[Mapping[Provider, ProbeLane]] = MappingProxyType(
    {
        "anthropic": ProbeLane(
            model="claude-sonnet-4-5",
            rows=_claude_rows,
            row_facts=_claude_row_facts,
            facts=(("custom_id_echoed", False), ("response", True)),
        ),
        "google": ProbeLane(
            model="gemini-2.5-flash",
            rows=_gemini_rows,
            row_facts=_gemini_row_facts,
            facts=(("labels_echoed", False), ("sibling_echoed", False)),
        ),
        # Probed only when asked (``vertexbatch probe`` names a model for Claude and Gemini).
        "embeddings": ProbeLane(
            model="gemini-embedding-001",
            rows=_embedding_rows,
            row_facts=_embedding_row_facts,
            facts=(("key_echoed", False), ("response", True)),
        ),
        # Not probed yet (no model: PROBE_MODELS leaves it out): the probe measures Claude's and
        # Gemini's jobs; its rows are ready for when an open model's output row is probed.
        "openmaas": ProbeLane(
            model="",
            rows=_chat_rows,
            row_facts=_claude_row_facts,  # an id in custom_id too, and the response's shape
            facts=(("custom_id_echoed", False), ("response", True)),
        ),
    }
)
