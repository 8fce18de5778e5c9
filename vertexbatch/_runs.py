"""Runs: from many requests to every key answered — shards, attempts, and a ledger in GCS.

A run is a set of *shards* (jobs of at most ``shard_size`` rows and 1 GB), each retried as
*attempts* under derived ids, all built on the core's identity protocol. Its only state is in
GCS, under the run's own folder and the shards' folders::

    PREFIX/RUN/run.json            the ledger: provider, model, max attempts, shard ids and sizes
    PREFIX/RUN.s0/...              shard 0, attempt 0 (a normal submission folder)
    PREFIX/RUN.s0.r1/...           shard 0, attempt 1: its retryable and missing keys
    PREFIX/RUN.s0/done.json        shard 0's final outcome counts, once it is finished
    PREFIX/RUN.s0/online.jsonl     shard 0's answers from the online fallback, if it ran
    PREFIX/RUN.s0/online.claim.json  who is answering shard 0 online, and until when

``advance`` is one short, idempotent step: any number of schedulers may call it at once, and a
step killed half-way is finished by the next. Two callers creating the same attempt get the same
job, because an attempt is a submission with a derived id and deterministic rows.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from opentelemetry.metrics import NoOpMeterProvider

from ._errors import InvalidRequestError
from ._identity import (
    look_up,
    measure,
    read_key_map,
    read_manifest,
    read_staged_lines,
    run_origin,
    stage,
    stage_and_submit,
    submit,
)
from ._lines import StagedLine
from ._models import Job, Provider, Result, Status
from ._results import iter_results, read_output_file
from ._rules import MAX_INPUT_BYTES, MAX_ROWS, check_id
from ._staging import Staging
from ._telemetry import Telemetry
from ._vertex import status_of
from ._wait import check_deadline

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["Run", "RunSummary", "create_run", "open_run"]

logger = logging.getLogger("vertexbatch")

LEDGER = "run.json"
DONE = "done.json"
ONLINE = "online.jsonl"
FORMAT = "vertexbatch-run/1"
# Room a run id must leave for shard and attempt suffixes (".s9999.r99") within 63 characters.
_RUN_ID_MAX = 52
DEFAULT_SHARD_SIZE = 100_000
_MAX_ATTEMPTS = 99
# Vertex runs at most 4 Claude batch jobs per project at once by default.
DEFAULT_LIVE_JOBS: dict[Provider, int] = {"anthropic": 4, "google": 16}

Fallback = Literal["online"]

# Steps read results to decide and to count; only ``Run.results`` records what it yields.
_SILENT = Telemetry(NoOpMeterProvider())


@dataclass(frozen=True, slots=True)
class RunSummary:
    """Where a run stands, counted per key.

    Attributes:
        id: the run id.
        done: every shard is finished: each key has its final outcome.
        keys: the number of keys in the run.
        outcomes: keys per final outcome (``ok``, ``refused``, ``truncated``, ``failed``,
            ``exhausted`` — retryable or missing after the last attempt) and ``pending``.
        live_jobs: jobs still running or queued.
        created: jobs this step created (0 for ``status``).
    """

    id: str
    done: bool
    keys: int
    outcomes: Mapping[str, int] = field(default_factory=dict)
    live_jobs: int = 0
    created: int = 0


@dataclass(frozen=True, slots=True)
class _Attempt:
    """One attempt of a shard: its job and status, both ``None`` while staged but not created."""

    job: Job | None
    status: Status | None

    @property
    def terminal(self) -> bool:
        return self.status is not None and self.status.terminal


@dataclass(frozen=True, slots=True)
class Shard:
    id: str
    keys: int


def _attempt_id(shard: Shard, attempt: int) -> str:
    return shard.id if attempt == 0 else f"{shard.id}.r{attempt}"


def _check_run_id(run_id: str) -> str:
    check_id(run_id)
    if len(run_id) > _RUN_ID_MAX:
        raise InvalidRequestError(
            f"run id {run_id!r} is over {_RUN_ID_MAX} characters: a run needs room for shard "
            "and attempt suffixes such as '.s12.r2' within the 63 an id may have",
            field="id",
        )
    return run_id


class _Shards:
    """Cut one stream of lines into shards of at most ``size`` rows and 1 GB."""

    def __init__(self, lines: Iterable[StagedLine], size: int) -> None:
        self._lines = iter(lines)
        self._size = size
        self._next: StagedLine | None = next(self._lines, None)

    def more(self) -> bool:
        return self._next is not None

    def take(self) -> Iterator[StagedLine]:
        rows = size = 0
        while self._next is not None and rows < self._size:
            if rows and size + len(self._next.data) > MAX_INPUT_BYTES:
                return
            line, self._next = self._next, None
            rows += 1
            size += len(line.data)
            yield line
            self._next = next(self._lines, None)


def create_run(
    client: Client,
    run_id: str,
    provider: Provider,
    model: str,
    lines: Iterable[StagedLine],
    *,
    shard_size: int,
    max_attempts: int,
) -> Run:
    """Stage every shard, write the ledger, and take the first ``advance`` step."""
    _check_run_id(run_id)
    if type(shard_size) is not int or shard_size < 1:
        raise InvalidRequestError(
            f"shard_size must be at least 1, got {shard_size}", field="shard_size"
        )
    if type(max_attempts) is not int or not 1 <= max_attempts <= _MAX_ATTEMPTS:
        raise InvalidRequestError(
            f"max_attempts must be a whole number from 1 to {_MAX_ATTEMPTS}, got {max_attempts!r}",
            field="max_attempts",
        )
    cutter = _Shards(lines, shard_size)  # the first request is checked before any cloud call
    if not cutter.more():
        raise InvalidRequestError(f"no requests for run {run_id!r}", field="requests")
    staging = client._staging
    folder = staging.folder(run_id)
    existing = staging.read_json(folder.name(LEDGER))
    if existing is not None:
        # Rejoining: check the whole run against what is staged before touching anything.
        shards = _check_rejoin(staging, run_id, provider, model, max_attempts, existing, cutter)
    else:
        shards = []
        while cutter.more():
            shard_id = f"{run_id}.s{len(shards)}"
            manifest = stage(staging, shard_id, provider, model, cutter.take(), run_origin(run_id))
            shards.append(Shard(shard_id, manifest.rows))
        ledger = _ledger(run_id, provider, model, max_attempts, shards)
        created = staging.create_json(folder.name(LEDGER), ledger)
        if not created and staging.read_json(folder.name(LEDGER)) != ledger:
            raise _other_run(run_id)
    run = Run(client, run_id, provider, model, max_attempts, shards)
    run.advance()
    return run


def _ledger(
    run_id: str, provider: Provider, model: str, max_attempts: int, shards: list[Shard]
) -> dict[str, object]:
    return {
        "format": FORMAT,
        "id": run_id,
        "provider": provider,
        "model": model,
        "max_attempts": max_attempts,
        "shards": [{"id": s.id, "keys": s.keys} for s in shards],
    }


def _other_run(run_id: str) -> InvalidRequestError:
    return InvalidRequestError(
        f"run id {run_id!r} already holds another run (other rows, model or max_attempts): use "
        "a new id; nothing staged was changed",
        field="id",
    )


def _check_rejoin(
    staging: Staging,
    run_id: str,
    provider: Provider,
    model: str,
    max_attempts: int,
    existing: object,
    cutter: _Shards,
) -> list[Shard]:
    """The run's shards if these rows are the staged run's rows; reads only, stages nothing."""
    recorded = _parse_ledger(existing, run_id, staging.folder(run_id).uri(LEDGER))
    if (recorded.provider, recorded.model, recorded.max_attempts) != (
        provider,
        model,
        max_attempts,
    ):
        raise _other_run(run_id)
    for shard in recorded.shards:
        if not cutter.more():
            raise _other_run(run_id)
        given = measure(shard.id, provider, model, cutter.take(), run_origin(run_id))
        staged = read_manifest(staging, shard.id)
        if staged is None or not staged.claims_same(given):
            raise _other_run(run_id)
    if cutter.more():
        raise _other_run(run_id)
    return recorded.shards


_FINAL_OUTCOMES = frozenset({"ok", "refused", "truncated", "failed", "exhausted"})


def _done_outcomes(done: object, shard: Shard, where: str) -> dict[str, int]:
    """A finished shard's outcome counts, checked: the record may have been edited."""
    outcomes = done.get("outcomes") if isinstance(done, dict) else None
    if (
        not isinstance(done, dict)
        or done.get("shard") != shard.id
        or not isinstance(outcomes, dict)
        or not set(outcomes) <= _FINAL_OUTCOMES
        or not all(type(n) is int and n >= 0 for n in outcomes.values())
        or sum(outcomes.values()) != shard.keys
    ):
        raise InvalidRequestError(
            f"{where} is not a vertexbatch shard record (outcome counts of its {shard.keys} "
            "keys): it was damaged or edited",
            field="staging",
        )
    return outcomes


@dataclass(frozen=True, slots=True)
class _Ledger:
    provider: Provider
    model: str
    max_attempts: int
    shards: list[Shard]


def _parse_ledger(ledger: object, run_id: str, where: str) -> _Ledger:
    """A run ledger read from GCS, every field checked: it may have been edited."""

    def bad(why: str) -> InvalidRequestError:
        return InvalidRequestError(
            f"{where} is not a vertexbatch run ledger ({why}): it was damaged or edited",
            field="id",
        )

    if not isinstance(ledger, dict):
        raise bad(f"a JSON {type(ledger).__name__}, not an object")
    if ledger.get("id") != run_id:
        raise bad("its 'id' is not this run's id")
    provider = ledger.get("provider")
    if provider not in ("anthropic", "google"):
        raise bad("'provider' is neither 'anthropic' nor 'google'")
    model = ledger.get("model")
    if not isinstance(model, str) or not model:
        raise bad("'model' is not a model id")
    attempts = ledger.get("max_attempts")
    if type(attempts) is not int or not 1 <= attempts <= _MAX_ATTEMPTS:
        raise bad(f"'max_attempts' is not a whole number from 1 to {_MAX_ATTEMPTS}")
    listed = ledger.get("shards")
    if not isinstance(listed, list) or not listed:
        raise bad("'shards' is not a list of shards")
    shards = []
    for index, entry in enumerate(listed):
        if (
            not isinstance(entry, dict)
            or entry.get("id") != f"{run_id}.s{index}"
            or type(entry.get("keys")) is not int
            or not 1 <= entry["keys"] <= MAX_ROWS
        ):
            raise bad(f"shard {index} is not {{'id': '{run_id}.s{index}', 'keys': 1-{MAX_ROWS}}}")
        shards.append(Shard(entry["id"], entry["keys"]))
    return _Ledger(provider, model, attempts, shards)


def open_run(client: Client, run_id: str) -> Run:
    """Rebuild a run from its ledger in GCS.

    Raises:
        InvalidRequestError: there is no run under this id (``field == "run"``), or the id is
            invalid or its ledger unreadable (``field == "id"``).
    """
    _check_run_id(run_id)
    folder = client._staging.folder(run_id)
    ledger = client._staging.read_json(folder.name(LEDGER))
    if ledger is None:
        raise InvalidRequestError(
            f"no run under id {run_id!r} (no {folder.uri(LEDGER)})", field="run"
        )
    recorded = _parse_ledger(ledger, run_id, folder.uri(LEDGER))
    return Run(
        client, run_id, recorded.provider, recorded.model, recorded.max_attempts, recorded.shards
    )


class Run:
    """A run of many requests over shards and attempts; see the module docstring."""

    def __init__(
        self,
        client: Client,
        run_id: str,
        provider: Provider,
        model: str,
        max_attempts: int,
        shards: list[Shard],
    ) -> None:
        self._client = client
        self.id = run_id
        self.provider: Provider = provider
        self.model = model
        self.max_attempts = max_attempts
        self.shards = shards

    def __repr__(self) -> str:
        return f"Run(id={self.id!r}, provider={self.provider!r}, shards={len(self.shards)})"

    @property
    def keys(self) -> int:
        return sum(s.keys for s in self.shards)

    def _attempts(self, shard: Shard) -> list[_Attempt]:
        """The shard's staged attempts in order, each with its job and status if it has one.

        Raises:
            InvalidRequestError: an attempt's id holds rows this run did not stage (a plain
                submission under ``RUN.s0.r1``, say): never adopted, whatever its rows.
        """
        client = self._client
        found: list[_Attempt] = []
        for attempt in range(self.max_attempts):
            attempt_id = _attempt_id(shard, attempt)
            staged = look_up(client._vertex, client._staging, attempt_id)
            if staged is None:
                break
            if staged.manifest.origin != run_origin(self.id):
                raise InvalidRequestError(
                    f"id {attempt_id!r}, which run {self.id!r} uses for attempt {attempt} of "
                    f"shard {shard.id!r}, holds a submission this run did not stage: the run "
                    "cannot go on until that id's folder is removed; nothing was adopted",
                    field="id",
                )
            if staged.job is None:
                found.append(_Attempt(None, None))
            else:
                found.append(_Attempt(staged.spec.to_job(staged.job), status_of(staged.job)))
        return found

    def _shard_job(self, shard: Shard) -> Job:
        """The shard's first attempt as a ``Job`` value, built from its folder (no Vertex call):
        what reading its key map, input and online answers needs."""
        folder = self._client._staging.folder(shard.id)
        return Job(
            id=shard.id,
            name=f"{self.id}/{shard.id}",
            provider=self.provider,
            model=self.model,
            input_uri=folder.input_uri,
            output_prefix=folder.output_prefix,
            keys=shard.keys,
        )

    def _create(self, attempt_id: str) -> Job:
        """Create the job of an attempt that was staged but has none (identity protocol)."""
        client = self._client
        manifest = read_manifest(client._staging, attempt_id)
        if manifest is None:
            raise InvalidRequestError(f"attempt {attempt_id!r} is not staged", field="id")
        return submit(client._staging, client._vertex, client.retry, attempt_id, manifest)

    def _resubmit(self, job: Job, keys: list[str], attempt_id: str) -> Job:
        """Stage and submit an attempt of ``keys``, read back from ``job``'s staged input."""
        client = self._client
        lines = read_staged_lines(client._staging, job, set(keys))
        return stage_and_submit(
            client._staging,
            client._vertex,
            client.retry,
            attempt_id,
            job.provider,
            job.model,
            lines,
            run_origin(self.id),
        )

    def advance(
        self, *, deadline: datetime | None = None, fallback: Fallback | None = None
    ) -> RunSummary:
        """Take one step: create jobs, resubmit what is retryable or missing, finish shards.

        Safe to call from any number of processes at once, and as often as you like.

        Args:
            deadline: past this moment (a timezone-aware ``datetime``) no new attempt is made;
                with ``fallback="online"`` the shard's outstanding jobs are cancelled and its
                unsettled keys answered online, each at most once across processes (see
                ``vertexbatch._online``).
            fallback: ``"online"`` to answer past the deadline through the online APIs.

        Raises:
            InvalidRequestError: the deadline is not a timezone-aware ``datetime``
                (``field == "deadline"``), or the fallback is not ``"online"`` or ``None``
                (``field == "fallback"``).
        """
        check_deadline(deadline)
        if fallback not in (None, "online"):
            raise InvalidRequestError(
                f"fallback must be 'online' or None, got {fallback!r}", field="fallback"
            )
        return self._step(act=True, deadline=deadline, fallback=fallback)

    def status(self) -> RunSummary:
        """Where the run stands, without creating or cancelling anything."""
        return self._step(act=False, deadline=None, fallback=None)

    def _step(
        self, *, act: bool, deadline: datetime | None, fallback: Fallback | None
    ) -> RunSummary:
        client = self._client
        staging = client._staging
        online = (
            act and fallback == "online" and deadline is not None and datetime.now(UTC) >= deadline
        )
        late = deadline is not None and datetime.now(UTC) >= deadline
        totals: Counter[str] = Counter()
        created = 0
        # First look at every shard, then act: the live-job budget counts the whole run.
        open_shards: list[tuple[Shard, list[_Attempt]]] = []
        live = 0
        for shard in self.shards:
            done = staging.read_json(staging.folder(shard.id).name(DONE))
            if done is not None:
                totals.update(_done_outcomes(done, shard, staging.folder(shard.id).uri(DONE)))
                continue
            attempts = self._attempts(shard)
            live += attempts[-1].job is not None and not attempts[-1].terminal
            open_shards.append((shard, attempts))
        budget = DEFAULT_LIVE_JOBS[self.provider]
        for shard, attempts in open_shards:
            latest = len(attempts) - 1
            job, terminal = attempts[latest].job, attempts[latest].terminal
            if online and (job is None or not terminal):
                totals.update(self._answer_online(shard, attempts))
                live -= job is not None
                continue
            if job is None:
                if act and not late and live < budget:
                    self._create(_attempt_id(shard, latest))
                    created += 1
                    live += 1
                totals["pending"] += shard.keys
                continue
            if not terminal:
                totals["pending"] += shard.keys
                continue
            unsettled = [
                r.key
                for r in iter_results(client._vertex, staging, job, _SILENT)
                if r.outcome in ("retryable", "missing")
            ]
            if unsettled and online:
                totals.update(self._answer_online(shard, attempts))
                continue
            if unsettled and latest + 1 < self.max_attempts and not late:
                if act and live < budget:
                    self._resubmit(job, unsettled, _attempt_id(shard, latest + 1))
                    created += 1
                    live += 1
                totals["pending"] += shard.keys
                continue
            outcomes = self._final_outcomes(shard)
            if act:
                self._finish(shard, outcomes)
            totals.update(outcomes)
        return RunSummary(
            id=self.id,
            done=not totals.get("pending"),
            keys=self.keys,
            outcomes={k: v for k, v in sorted(totals.items()) if v},
            live_jobs=live,
            created=created,
        )

    def _finish(self, shard: Shard, outcomes: dict[str, int]) -> None:
        staging = self._client._staging
        staging.create_json(
            staging.folder(shard.id).name(DONE), {"shard": shard.id, "outcomes": outcomes}
        )
        logger.info("shard %s finished: %s", shard.id, outcomes)

    def _final_outcomes(self, shard: Shard) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for result in self._shard_results(shard):
            outcome = result.outcome
            counts["exhausted" if outcome in ("retryable", "missing") else outcome] += 1
        return dict(counts)

    def _shard_results(self, shard: Shard) -> Iterator[Result]:
        """One result per key of the shard: the online answer, else the latest attempt's.

        Records no telemetry: superseded attempts are read too, and steps read results to count.
        """
        client = self._client
        staging = client._staging
        first = self._shard_job(shard)
        keys = read_key_map(staging, first)
        taken: set[int] = set()
        online = staging.folder(shard.id).uri(ONLINE)
        if staging.exists(online):
            yield from read_output_file(staging, online, keys, taken, first)
        seen = {keys.keys[i] for i in taken}
        for job in reversed([a.job for a in self._attempts(shard) if a.job is not None]):
            for result in iter_results(client._vertex, staging, job, _SILENT):
                if result.key not in seen:
                    seen.add(result.key)
                    yield result

    def results(self) -> Iterator[Result]:
        """One result per key across shards and attempts, the latest attempt winning.

        Each yielded result is recorded in the client's metrics once, as ``Client.results`` does.
        """
        for shard in self.shards:
            job = self._shard_job(shard)
            for result in self._shard_results(shard):
                self._client._telemetry.record(result, job)
                yield result

    def _answer_online(self, shard: Shard, attempts: list[_Attempt]) -> dict[str, int]:
        """Past the deadline: cancel the shard's jobs and answer its unsettled keys online.

        Each key is answered online at most once across processes: the shard is claimed in GCS
        first (``vertexbatch._online``); while another process holds the claim, the shard is
        reported pending and nothing is called.
        """
        from ._online import answer_online

        client = self._client
        for attempt in attempts:
            if attempt.job is not None and not attempt.terminal:
                client.cancel(attempt.job)

        def settled() -> set[str]:
            results = self._shard_results(shard)
            return {r.key for r in results if r.outcome not in ("retryable", "missing")}

        folder = client._staging.folder(shard.id)
        if not answer_online(client, self._shard_job(shard), settled, folder, ONLINE):
            # Another process holds the shard's claim and is answering it; a later step finishes.
            return {"pending": shard.keys}
        outcomes = self._final_outcomes(shard)
        self._finish(shard, outcomes)
        return outcomes


def summary_line(summary: RunSummary) -> str:
    """One line for logs and the CLI."""
    counts = ", ".join(f"{k} {v}" for k, v in summary.outcomes.items())
    state = "done" if summary.done else f"{summary.live_jobs} live job(s)"
    return f"run {summary.id}: {summary.keys} keys, {state}; {counts}"
