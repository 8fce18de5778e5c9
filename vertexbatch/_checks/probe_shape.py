"""``vertexbatch probe``'s pure half: a job or row reduced to its shape, and the facts it shows.

A shape keeps field names and JSON types and drops every value, except enums (``stop_reason``,
``finishReason``, ``type``, ``role``, ...: short identifiers only) and the prefix of a per-line
``status`` (``"Bad Request: {json}"`` keeps ``Bad Request``). No request or response text
survives: a string under any other key becomes ``"string"``.

``facts`` condenses a probe's jobs and rows into the flat, documented keys that
``LocalStack.from_probe_report`` reads and that docs/local-stack.md maps to the reference's
UNCONFIRMED points; ``LOCAL_DEFAULTS`` is what a default local stack shows (a test pins it by
probing one), and ``differences`` lists where a report departs from it. ``probe_rows`` are the
rows a probe stages (``probe_input``): an answer, a truncation and one Vertex refuses. Each
lane's row facts, and the check of the embeddings and open-model rows against the row the
reader assumes, are ``probe_output``'s.
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
from .._providers import PROVIDERS, by_command
from .._values import Provider
from .probe_input import chat_rows, claude_rows, embedding_rows, gemini_rows
from .probe_output import (
    MAPS,
    chat_row_facts,
    claude_row_facts,
    embedding_row_facts,
    gemini_row_facts,
    json_type,
    output_facts,
)

__all__ = [
    "PROBE_LANES",
    "ProbeLane",
    "probe_parts",
    "probe_rows",
    "LOCAL_DEFAULTS",
    "differences",
    "facts",
    "field_names",
    "lane_models",
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
_OUTPUT_DIR = re.compile(r"prediction-model-(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)$")


def shape(value: Any, key: str = "", *, row: bool = True) -> Any:
    """``value`` with every value replaced by its JSON type, enums and status prefixes kept.

    Objects keep their keys (in order); an array becomes the list of its distinct element
    shapes; an integer ``code`` is kept (an error code, not content). ``row``: ``value`` is
    an output row, whose top-level string ``status`` is shaped by ``status_shape``.
    """
    if isinstance(value, dict):
        if key in MAPS:
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
    return json_type(value)


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
        if isinstance(item, dict) and key not in MAPS:
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
        lane = PROBE_LANES[by_command(name).provider]
        for fact, answered in lane.facts:
            out[f"{name}.{fact}"] = _one(r[fact] for r in (good if answered else found))
        if lane.assumed:
            out.update(output_facts(name, good))
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
    "embeddings.create_state": "JOB_STATE_PENDING",
    "embeddings.end_state": "JOB_STATE_SUCCEEDED",
    "embeddings.output_files": ["predictions.jsonl"],
    "embeddings.input_uris_accepted": 2,
    "embeddings.reads_every_input_uri": True,
    "embeddings.request_echo": "object",
    "embeddings.success_status": "empty",
    "embeddings.error_status": "prefix_json",
    "embeddings.response": "object",
    "embeddings.output_row": "matches",
    "embeddings.missing_fields": [],
    "embeddings.reader_reads": True,
    "embeddings.key_echoed": True,
    "chat.create_state": "JOB_STATE_PENDING",
    "chat.end_state": "JOB_STATE_SUCCEEDED",
    "chat.output_files": ["predictions.jsonl"],
    "chat.input_uris_accepted": 2,
    "chat.reads_every_input_uri": True,
    "chat.request_echo": "absent",  # its echo is the line's own body field
    "chat.success_status": "empty",
    "chat.error_status": None,  # the stack answers the role "critic" in an OpenAI line
    "chat.response": "object",
    "chat.output_row": "matches",
    "chat.missing_fields": [],
    "chat.reader_reads": True,
    "chat.custom_id_echoed": True,
}
"""The facts a probe of a local stack with default options shows (tests/checks/test_probe.py)."""


def differences(
    found: Mapping[str, Any], defaults: Mapping[str, Any] = LOCAL_DEFAULTS
) -> list[str]:
    """One line per fact where ``found`` differs from ``defaults``: ``key: service X, local Y``.

    A fact the probe could not see (None) is no difference. Where a lane's output row differs
    from the one its reader assumes, a last line names the fields its rows had outside the
    echoed request (``X.output_fields ...: service [...]``): names, never values.
    """
    lines = []
    for key, local in defaults.items():
        seen = found.get(key)
        if seen is not None and seen != local:
            lines.append(f"{key}: service {json.dumps(seen)}, local stack {json.dumps(local)}")
    for key, seen in found.items():
        if key.endswith(".output_row") and seen == "differs":
            fields = key.removesuffix("output_row") + "output_fields"
            seen = [f for f in found.get(fields) or () if "." not in f or f.startswith("resp")]
            lines.append(f"{fields} (the row's own and its response's): service {json.dumps(seen)}")
    return lines


def probe_parts(rows: bytes) -> list[bytes]:
    """A probe's rows staged as two parts, as ``submit`` stages a large input: the first row,
    then the rest."""
    first, _, rest = rows.partition(b"\n")
    return [first + b"\n", rest]


def probe_rows(name: str, invalid: bool = True) -> bytes:
    """The staged JSONL of one provider's probe rows (without the invalid one: two)."""
    return PROBE_LANES[by_command(name).provider].rows(invalid)


@dataclass(frozen=True, slots=True)
class ProbeLane:
    """What a probe stages and reads differently for one provider."""

    model: str  # the model probed unless --<command>-model says otherwise ("": not probed)
    rows: Callable[[bool], bytes]  # (invalid) -> the staged JSONL of its probe rows
    row_facts: Callable[[Mapping[str, Any], Any, bool], dict[str, Any]]  # (row, request, failed)
    facts: tuple[tuple[str, bool], ...]  # its own row facts, each: whether only answers count
    # Whether its answered rows are checked against the row the reader assumes (a lane whose
    # output row no Google page shows: ``probe_output``).
    assumed: bool = False
    optional: bool = False  # probed only when asked (``vertexbatch probe --lane``)


# Each provider's probe, by the provider table's names (tests/test_providers.py holds the two
# tables to the same rows): a new lane adds its row here too.
PROBE_LANES: Final[Mapping[Provider, ProbeLane]] = MappingProxyType(
    {
        "anthropic": ProbeLane(
            model="claude-sonnet-4-5",
            rows=claude_rows,
            row_facts=claude_row_facts,
            facts=(("custom_id_echoed", False), ("response", True)),
        ),
        "google": ProbeLane(
            model="gemini-2.5-flash",
            rows=gemini_rows,
            row_facts=gemini_row_facts,
            facts=(("labels_echoed", False), ("sibling_echoed", False)),
        ),
        "embeddings": ProbeLane(
            model="gemini-embedding-001",
            rows=embedding_rows,
            row_facts=embedding_row_facts,
            facts=(("key_echoed", False), ("response", True)),
            assumed=True,
            optional=True,
        ),
        # Llama 3.3 70B: on Google's list of open models in batch (docs/platform-facts.md).
        "openmaas": ProbeLane(
            model="meta/llama-3.3-70b-instruct-maas",
            rows=chat_rows,
            row_facts=chat_row_facts,
            facts=(("custom_id_echoed", False), ("response", True)),
            assumed=True,
            optional=True,
        ),
    }
)


def lane_models(*, optional: bool) -> dict[str, str]:
    """The probe models of the lanes probed always (``optional=False``: Claude, Gemini) or only
    when asked (``vertexbatch probe --lane``), by the command's name of each lane."""
    return {
        row.command: PROBE_LANES[provider].model
        for provider, row in PROVIDERS.items()
        if PROBE_LANES[provider].optional is optional
    }
