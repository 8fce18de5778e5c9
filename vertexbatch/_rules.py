"""Validation rules for submission ids, keys, models and job limits (pure; no I/O).

``Limits`` are the sizes work is held to (Vertex's rows and bytes per job, a record read back
whole, an output line), carried by ``Staging`` so that tests can pass small ones.
``FAMILIES`` is the provider table's family column, copied below it for ``check_model``
(``tests/test_providers.py`` holds the copy equal).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ._errors import InvalidRequestError
from ._values import Job, Provider

__all__ = [
    "FAMILIES",
    "LANES",
    "Lane",
    "model_of_job",
    "owner_of",
    "MAX_SECONDS",
    "MIN_SECONDS",
    "is_seconds",
    "OUTPUT_LINE_MAX",
    "RECORD_MAX",
    "DEFAULT_LIMITS",
    "Limits",
    "is_loopback",
    "MAX_INPUT_BYTES",
    "MAX_ROWS",
    "check_id",
    "check_own_id",
    "check_job",
    "check_keys",
    "check_key",
    "check_model",
    "id_label",
    "is_job_name",
]

# Every duration vertexbatch takes, as a number of seconds (a wait's timeout, floor and ceiling,
# a RetryPolicy's pauses, the command's duration options): at most MAX_SECONDS (about 31 years:
# far past any job, TTL or wait, well inside what ``timedelta`` and the clocks' arithmetic
# hold), and one that must be more than 0 at least MIN_SECONDS (a microsecond, the finest
# duration a ``timedelta`` holds: less is 0 once it becomes one).
MAX_SECONDS = 1e9
MIN_SECONDS = 1e-6


def is_seconds(value: object, *, positive: bool = False) -> bool:
    """Whether ``value`` is a number of seconds from 0 (``positive``: from ``MIN_SECONDS``) to
    ``MAX_SECONDS``. NaN, the infinities, a bool and an integer of any size are compared, never
    converted, so none of them can overflow here."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return (MIN_SECONDS if positive else 0) <= value <= MAX_SECONDS


# Vertex refuses more than 200,000 rows or 1 GB of input for one Gemini batch job: the limits
# vertexbatch holds a job of a model to where the catalogue gives none of its own (a Gemini
# embedding job takes 1,000,000 rows: ``_providers.job_limits`` reads the catalogue's).
MAX_ROWS = 200_000
MAX_INPUT_BYTES = 1_000_000_000
# Manifests, records and ledgers are read back whole, so each is held to this (KBs in practice;
# a ledger lists at most a few thousand shards).
RECORD_MAX = 4 * 1024 * 1024
# The longest output line read: a longer one is a per-line error, never held whole.
OUTPUT_LINE_MAX = 128 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Limits:
    """The sizes work is held to: one job's input (Vertex's rows and bytes), a record read back
    whole (a manifest, a ledger) and an output line. ``Staging`` carries them (the defaults:
    Vertex's and vertexbatch's own); tests pass small ones to reach each with small inputs."""

    rows: int = MAX_ROWS
    input_bytes: int = MAX_INPUT_BYTES
    record_bytes: int = RECORD_MAX
    output_line: int = OUTPUT_LINE_MAX


DEFAULT_LIMITS = Limits()


# One id names a GCS folder, a job display name and (with "." spelled "_") a label value; label
# values allow only [a-z0-9_-] and 63 characters, so the id is held to that plus ".".
_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")
ID_RULE = "1-63 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit"

_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]*")
# Each provider's model family: the ``command`` column of ``_providers.PROVIDERS``, which sits
# above this module (tests/test_providers.py holds the two equal).
FAMILIES: dict[Provider, str] = {
    "anthropic": "claude",
    "google": "gemini",
    "embeddings": "embeddings",
    "openmaas": "chat",
}
# A model id that names its publisher (``meta/llama-3.3-70b-instruct-maas``): the managed open
# models' form (Google's open-model batch page writes the body's model so).
_PUBLISHED = re.compile(r"[a-z0-9][a-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._@-]*")


@dataclass(frozen=True, slots=True)
class Lane:
    """Who publishes a provider's models on Vertex and how their ids begin."""

    # the Vertex publisher (``publishers/P/models/M``); None: each model id names its own, as
    # ``publisher/model``, and the lane owns every id of that form
    publisher: str | None
    prefixes: tuple[str, ...]  # how its bare model ids begin; the longest prefix a model has wins


# Each provider's publisher and model-id prefixes: the ``publisher`` and ``prefixes`` columns of
# ``_providers.PROVIDERS`` (tests/test_providers.py holds the copies equal). Embedding models are
# Google's, and ``gemini-embedding-001`` begins as a Gemini chat model does: the longer prefix
# names its lane (Google's embedding model ids: docs/platform-facts.md, "Embeddings"). The
# managed open models' ids name their publisher (``meta/llama-3.3-70b-instruct-maas``): no
# prefix, the ``publisher/model`` form names the lane (docs/platform-facts.md, "Open models").
LANES: dict[Provider, Lane] = {
    "anthropic": Lane("anthropic", ("claude",)),
    "google": Lane("google", ("gemini",)),
    "embeddings": Lane(
        "google", ("gemini-embedding", "text-embedding", "text-multilingual-embedding")
    ),
    "openmaas": Lane(None, ()),
}


def owner_of(model: str) -> Provider | None:
    """The provider that owns ``model``, or ``None``: a ``publisher/model`` id is the lane's whose
    ids name their publisher; a bare id is the lane's whose longest prefix it begins with
    (case-insensitive)."""
    if "/" in model:
        if not _PUBLISHED.fullmatch(model):
            return None
        return next((p for p, lane in LANES.items() if lane.publisher is None), None)
    lowered = model.lower()
    best: tuple[int, Provider | None] = (0, None)
    for provider, lane in LANES.items():
        for prefix in lane.prefixes:
            if lowered.startswith(prefix) and len(prefix) > best[0]:
                best = (len(prefix), provider)
    return best[1]


def check_id(submission_id: object) -> str:
    """Return the id if it is a valid submission id, else raise ``InvalidRequestError``."""
    if not isinstance(submission_id, str) or not _ID.fullmatch(submission_id):
        raise InvalidRequestError(
            f"submission id {submission_id!r} is invalid: it must be {ID_RULE}", field="id"
        )
    return submission_id


# The ids vertexbatch derives: a resubmission's ``ID.r1``, a run's shard ``RUN.s0`` (and its
# attempts, ``RUN.s0.r1``). Each is claimed by its origin (``_staged.manifest``): one a caller took
# first would make the resubmission or the run that derives it fail as already claimed.
_DERIVED = re.compile(r".+\.[rs][0-9]+")


def check_own_id(submission_id: object) -> str:
    """``check_id`` for an id a caller chooses to submit or run under (``submit_*``,
    ``plan_*``, ``run_*``, the command): the ids vertexbatch derives are refused too.

    Raises:
        InvalidRequestError: the id is invalid, or ends in ``.r<number>`` or ``.s<number>``
            (``field == "id"``).
    """
    checked = check_id(submission_id)
    if _DERIVED.fullmatch(checked):
        letter = checked.rsplit(".", 1)[1][0]
        what = (
            "resubmissions (ID.r1, ID.r2, ...)" if letter == "r" else "a run's shards (RUN.s0, ...)"
        )
        raise InvalidRequestError(
            f"submission id {checked!r} ends in '.{letter}<number>', the form of the ids "
            f"vertexbatch derives for {what}: resubmit a job's keys with client.resubmit(job), "
            "and choose another id for new rows",
            field="id",
        )
    return checked


_ATTEMPT = re.compile(r"(.+)\.r(\d+)")


def next_attempt_id(submission_id: str) -> str:
    """The derived id of a resubmission: ``ID.r1``, then ``ID.r2``, ..."""
    match = _ATTEMPT.fullmatch(submission_id)
    base, n = (match.group(1), int(match.group(2))) if match else (submission_id, 0)
    derived = f"{base}.r{n + 1}"
    if len(derived) > 63:
        raise InvalidRequestError(
            f"the resubmission id of {submission_id!r} would be {derived!r}, over 63 characters: "
            "pass id= explicitly",
            field="id",
        )
    return derived


_JOB_NAME = re.compile(r"projects/[^/\s]+/locations/[^/\s]+/batchPredictionJobs/[0-9]+")


def is_job_name(name: object) -> bool:
    """Whether ``name`` is a Vertex batch prediction job resource name."""
    return isinstance(name, str) and _JOB_NAME.fullmatch(name) is not None


def check_keys(keys: object) -> set[str]:
    """The request keys a caller names (``resubmit``'s ``keys=``), or ``InvalidRequestError``:
    an iterable of strings, never one string (its characters are no keys)."""
    if isinstance(keys, str) or not isinstance(keys, Iterable):
        raise InvalidRequestError(
            "keys must be an iterable of request keys, not one string", field="keys"
        )
    listed = list(keys)
    if not all(isinstance(key, str) for key in listed):
        raise InvalidRequestError("keys must be strings (request keys)", field="keys")
    return set(listed)


def check_job(job: object) -> None:
    """Raise ``InvalidRequestError`` unless ``job`` is a ``Job`` that names a Vertex batch job."""
    if not isinstance(job, Job):
        raise InvalidRequestError(
            f"expected a vertexbatch Job, got {type(job).__name__} (Job.from_dict rebuilds one "
            "from JSON)",
            field="job",
        )
    if not is_job_name(job.name):
        raise InvalidRequestError(
            f"job name {job.name!r} is not a Vertex batch job resource name "
            "(projects/P/locations/L/batchPredictionJobs/N)",
            field="job",
        )


def id_label(submission_id: str) -> str:
    """The job label value that carries an id (labels do not allow '.')."""
    return submission_id.replace(".", "_")


def check_key(key: Any, seen: set[str]) -> str:
    """Return the key if it is a non-empty string not in ``seen``; add it to ``seen``."""
    if not isinstance(key, str):
        raise InvalidRequestError(
            f"request key must be a string, got {type(key).__name__}", field="key"
        )
    if not key:
        raise InvalidRequestError("request key must not be empty", field="key")
    if not key.isascii():
        try:
            key.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidRequestError(
                "request key must be text UTF-8 can carry: it holds a lone surrogate",
                field="key",
            ) from None
    if key in seen:
        raise InvalidRequestError(
            f"request key {key!r} appears twice: keys must be unique within a job", field="key"
        )
    seen.add(key)
    return key


def check_model(model: object, provider: Provider) -> str:
    """Return the model id; raise if it has a path, a publisher prefix or the wrong family.

    A lane whose models name their publisher (``LANES``' ``publisher`` is ``None``: the managed
    open models) takes exactly ``PUBLISHER/MODEL``, any family; the others a bare id of theirs.
    """
    if not isinstance(model, str) or not model:
        raise InvalidRequestError(f"model must be a non-empty string, got {model!r}", field="model")
    if LANES[provider].publisher is None:
        if not _PUBLISHED.fullmatch(model):
            raise InvalidRequestError(
                f"model {model!r} must be PUBLISHER/MODEL, the managed open model's id with its "
                "Vertex publisher, such as 'meta/llama-3.3-70b-instruct-maas' (no "
                "'publishers/...' path)",
                field="model",
            )
        publisher, bare = model.split("/", 1)
        if any(lane.publisher == publisher for lane in LANES.values()):
            # Anthropic's and Google's models take their own lanes' request shapes: an OpenAI
            # line for one would fail on every row, hours after the submit.
            owner = owner_of(bare)
            lane = f"submit_{FAMILIES[owner]}({bare!r}, ...)" if owner else "its own lane"
            raise InvalidRequestError(
                f"model {model!r} is one of {publisher}'s models, which have lanes of their own "
                f"(this one, the managed open models, sends OpenAI lines): submit it with {lane}",
                field="model",
            )
        return model
    if "/" in model:
        raise InvalidRequestError(
            f"model {model!r} must be a bare Vertex model id such as 'claude-sonnet-4-5' or "
            "'gemini-2.5-flash', without 'publishers/...' or a resource path: vertexbatch adds "
            "the publisher itself",
            field="model",
        )
    if not _MODEL.fullmatch(model):
        raise InvalidRequestError(
            f"model {model!r} is not a Vertex model id (letters, digits, '.', '_', '-', '@')",
            field="model",
        )
    family = FAMILIES[provider]
    owner = owner_of(model)
    if owner is not None and owner != provider:
        raise InvalidRequestError(
            f"model {model!r} is a {FAMILIES[owner].title()} model: submit it with "
            f"submit_{FAMILIES[owner]}, not submit_{family}",
            field="model",
        )
    if owner is None or not model.startswith(LANES[provider].prefixes):
        # Batch lines are Messages requests (Claude), GenerateContent requests (Gemini) or
        # embedding requests: any other model would make Vertex refuse the job, hours later
        # for some failures.
        begins = " or ".join(f"'{prefix}-'" for prefix in LANES[provider].prefixes)
        raise InvalidRequestError(
            f"model {model!r} is not a {family.title()} model id (they start with "
            f"{begins}): submit_{family} takes {family.title()} models only",
            field="model",
        )
    return model


def publisher_path(model: str, provider: Provider) -> str:
    """The Vertex publisher path of a model id of ``provider``: a bare id under its lane's
    publisher, or a ``publisher/model`` id (a managed open model's), which names its own."""
    publisher = LANES[provider].publisher
    if publisher is None:
        publisher, _, model = model.partition("/")
    return f"publishers/{publisher}/models/{model}"


def model_of_job(vertex_model: str, given: str) -> str:
    """A job's model as the caller gave it (``given``) when Vertex's model field names the same
    model, a ``PUBLISHER/MODEL`` id kept whole; else the bare id Vertex names."""
    bare = bare_model(vertex_model)
    if not bare or given == bare or given.endswith("/" + bare):
        return given
    return bare


def bare_model(vertex_model: str) -> str:
    """The bare model id of a Vertex model field (``…/publishers/P/models/M`` → ``M``)."""
    return vertex_model.rsplit("/models/", 1)[-1]


def is_loopback(endpoint: str) -> bool:
    """Whether an endpoint URL names this machine (127.0.0.0/8, ``::1`` or ``localhost``)."""
    host = urlsplit(endpoint).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
