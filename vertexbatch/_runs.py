"""Runs: from many requests to every key answered — shards, attempts, and a ledger in GCS.

A run is a set of *shards* (jobs of at most ``shard_size`` rows and 1 GB), each retried as
*attempts* under derived ids, all built on the core's identity protocol. Its only state is in
GCS, under the run's own folder and the shards' folders::

    PREFIX/RUN/run.json            the ledger: provider, model, max attempts, shard ids and sizes
    PREFIX/RUN.s0/...              shard 0, attempt 0 (a normal submission folder)
    PREFIX/RUN.s0.r1/...           shard 0, attempt 1: its retryable and missing keys
    PREFIX/RUN.s0/done.json        shard 0's final outcome counts, once it is finished
    PREFIX/RUN.s0/online.jsonl     shard 0's answers from the online fallback, if it ran

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
from ._identity import MANIFEST, Manifest, look_up, read_key_map, stage, submit
from ._lines import StagedLine
from ._models import Job, Provider, Result, Status
from ._results import iter_results, read_output_file
from ._rules import MAX_INPUT_BYTES, check_id
from ._telemetry import Telemetry
from ._vertex import status_of

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
    if shard_size < 1:
        raise InvalidRequestError(
            f"shard_size must be at least 1, got {shard_size}", field="shard_size"
        )
    if not 1 <= max_attempts <= 99:
        raise InvalidRequestError(
            f"max_attempts must be between 1 and 99, got {max_attempts}", field="max_attempts"
        )
    staging = client._staging
    shards: list[Shard] = []
    cutter = _Shards(lines, shard_size)
    if not cutter.more():
        raise InvalidRequestError(f"no requests for run {run_id!r}", field="requests")
    while cutter.more():
        shard_id = f"{run_id}.s{len(shards)}"
        manifest = stage(staging, shard_id, provider, model, cutter.take())
        shards.append(Shard(shard_id, manifest.rows))
    ledger = {
        "format": FORMAT,
        "id": run_id,
        "provider": provider,
        "model": model,
        "max_attempts": max_attempts,
        "shards": [{"id": s.id, "keys": s.keys} for s in shards],
    }
    folder = staging.folder(run_id)
    if not staging.create_json(folder.name(LEDGER), ledger):
        existing = staging.read_json(folder.name(LEDGER))
        if existing != ledger:
            raise InvalidRequestError(
                f"run id {run_id!r} already holds another run (other rows, model or "
                "max_attempts): use a new id; nothing staged was changed",
                field="id",
            )
    run = Run(client, run_id, provider, model, max_attempts, shards)
    run.advance()
    return run


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
    try:
        shards = [Shard(str(s["id"]), int(s["keys"])) for s in ledger["shards"]]
        return Run(
            client, run_id, ledger["provider"], ledger["model"], int(ledger["max_attempts"]), shards
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidRequestError(
            f"{folder.uri(LEDGER)} is not a vertexbatch run ledger", field="id"
        ) from exc


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
        """The shard's staged attempts in order, each with its job and status if it has one."""
        client = self._client
        found: list[_Attempt] = []
        for attempt in range(self.max_attempts):
            staged = look_up(client._vertex, client._staging, _attempt_id(shard, attempt))
            if staged is None:
                break
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
        staging = self._client._staging
        folder = staging.folder(attempt_id)
        manifest = Manifest.from_json(
            staging.read_json(folder.name(MANIFEST)), folder.uri(MANIFEST)
        )
        return submit(
            self._client._vertex, staging, manifest.spec(attempt_id, folder), self._client.retry
        )

    def advance(
        self, *, deadline: datetime | None = None, fallback: Fallback | None = None
    ) -> RunSummary:
        """Take one step: create jobs, resubmit what is retryable or missing, finish shards.

        Safe to call from any number of processes at once, and as often as you like.

        Args:
            deadline: past this moment no new attempt is made; with ``fallback="online"`` the
                shard's outstanding jobs are cancelled and its unsettled keys answered online.
            fallback: ``"online"`` to answer past the deadline through the online APIs.
        """
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
                totals.update(done["outcomes"])
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
                    client.resubmit(job, keys=unsettled, id=_attempt_id(shard, latest + 1))
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
        """Past the deadline: cancel the shard's jobs and answer its unsettled keys online."""
        from ._online import answer_online

        client = self._client
        for attempt in attempts:
            if attempt.job is not None and not attempt.terminal:
                client.cancel(attempt.job)
        settled = {
            r.key for r in self._shard_results(shard) if r.outcome not in ("retryable", "missing")
        }
        online = client._staging.folder(shard.id).name(ONLINE)
        answer_online(client, self._shard_job(shard), settled, online)
        outcomes = self._final_outcomes(shard)
        self._finish(shard, outcomes)
        return outcomes


def summary_line(summary: RunSummary) -> str:
    """One line for logs and the CLI."""
    counts = ", ".join(f"{k} {v}" for k, v in summary.outcomes.items())
    state = "done" if summary.done else f"{summary.live_jobs} live job(s)"
    return f"run {summary.id}: {summary.keys} keys, {state}; {counts}"
