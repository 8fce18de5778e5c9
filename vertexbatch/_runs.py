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
job, because an attempt is a submission with a derived id and deterministic rows. What a step
does is decided by the pure planner in ``_plan``; this module reads the state and acts.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from opentelemetry.metrics import NoOpMeterProvider

from ._cloud import Cloud
from ._errors import InvalidRequestError
from ._identity import look_up, resubmit, stage, submit
from ._ledger import (
    MAX_ATTEMPTS,
    Ledger,
    Shard,
    attempt_id,
    check_run_id,
    read_done,
    read_ledger,
    write_done,
    write_ledger,
)
from ._lines import StagedLine
from ._manifest import measure, read_manifest, run_origin
from ._models import Job, Provider, Result, Status
from ._online import CONCURRENCY, answer_online
from ._plan import ShardView, StepRules, plan_step
from ._results import iter_results, read_output_file
from ._rules import MAX_INPUT_BYTES
from ._staged import read_key_map
from ._telemetry import Telemetry
from ._vertex import status_of
from ._wait import check_deadline

__all__ = [
    "DEFAULT_LIVE_JOBS",
    "DEFAULT_SHARD_SIZE",
    "KeyResult",
    "Run",
    "RunSummary",
    "Shard",
    "summary_line",
]

logger = logging.getLogger("vertexbatch")

ONLINE = "online.jsonl"
DEFAULT_SHARD_SIZE = 100_000
# Vertex runs at most 4 Claude batch jobs per project at once by default; Gemini's is a guess.
DEFAULT_LIVE_JOBS: Mapping[Provider, int] = {"anthropic": 4, "google": 16}

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
class KeyResult:
    """One key of a run: its latest result, how many attempts held it, its outcome in the run.

    Attributes:
        result: the key's latest result: its online answer, else its latest attempt's.
        attempts: the attempts that held the key: its batch jobs, plus one if it was answered
            online.
        outcome: the key's word among ``RunSummary.outcomes``: ``ok``, ``refused``,
            ``truncated``, ``failed``, ``exhausted`` (retryable or missing, nothing more to
            try), or ``pending`` while its shard is not finished.
    """

    result: Result
    attempts: int
    outcome: str


_UNSETTLED = ("retryable", "missing")


@dataclass(frozen=True, slots=True)
class _Attempt:
    """One attempt of a shard: its job and status, both ``None`` while staged but not created."""

    job: Job | None
    status: Status | None

    @property
    def terminal(self) -> bool:
        return self.status is not None and self.status.terminal


@dataclass(frozen=True, slots=True)
class _Open:
    """An unfinished shard as a step found it."""

    shard: Shard
    attempts: list[_Attempt]
    unsettled: list[str]

    def view(self) -> ShardView:
        latest = self.attempts[-1]
        return ShardView(
            keys=self.shard.keys,
            attempts=len(self.attempts),
            created=latest.job is not None,
            terminal=latest.terminal,
            unsettled=len(self.unsettled),
        )


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
    cloud: Cloud,
    run_id: str,
    provider: Provider,
    model: str,
    lines: Iterable[StagedLine],
    *,
    shard_size: int,
    max_attempts: int,
) -> Run:
    """Stage every shard, write the ledger, and take the first ``advance`` step."""
    check_run_id(run_id)
    if type(shard_size) is not int or shard_size < 1:
        raise InvalidRequestError(
            f"shard_size must be at least 1, got {shard_size}", field="shard_size"
        )
    if type(max_attempts) is not int or not 1 <= max_attempts <= MAX_ATTEMPTS:
        raise InvalidRequestError(
            f"max_attempts must be a whole number from 1 to {MAX_ATTEMPTS}, got {max_attempts!r}",
            field="max_attempts",
        )
    cutter = _Shards(lines, shard_size)  # the first request is checked before any cloud call
    if not cutter.more():
        raise InvalidRequestError(f"no requests for run {run_id!r}", field="requests")
    staging = cloud.staging
    existing = read_ledger(staging, run_id)
    if existing is not None:
        # Rejoining: check the whole run against what is staged before touching anything.
        _check_rejoin(cloud, existing, provider, model, max_attempts, shard_size, cutter)
        ledger = existing
    else:
        origin = run_origin(run_id)
        shards: list[Shard] = []
        while cutter.more():
            shard_id = f"{run_id}.s{len(shards)}"
            try:
                manifest = stage(staging, shard_id, provider, model, cutter.take(), origin)
            except InvalidRequestError as exc:
                staged = read_manifest(staging, shard_id) if exc.field == "id" else None
                if exc.field != "id" or (staged is not None and staged.origin != origin):
                    raise  # a bad line, or the id is someone else's: its own message says so
                # An earlier start of this run staged the shard and stopped before the ledger (a
                # bad line further on, or killed): the shard's id and MD5s would only puzzle.
                raise InvalidRequestError(
                    f"run id {run_id!r} was partly staged before, with other requests, model or "
                    "shard size, by a start that stopped before it finished: use a new run id; "
                    "nothing staged was changed",
                    field="id",
                ) from exc
            shards.append(Shard(shard_id, manifest.rows))
        ledger = Ledger(run_id, provider, model, max_attempts, tuple(shards))
        if not write_ledger(staging, ledger):
            raise _other_run(run_id)
    run = Run(cloud, ledger)
    run.advance()
    return run


_PROVIDER_NAMES: Mapping[Provider, str] = {"anthropic": "Claude", "google": "Gemini"}


def _other_run(run_id: str, what: str = "") -> InvalidRequestError:
    """The run-level error of a rejoin that does not match; ``what`` says what differs."""
    why = what or f"run id {run_id!r} already holds another run (other requests): use a new id"
    return InvalidRequestError(f"{why}; nothing staged was changed", field="id")


def _other_cut(ledger: Ledger, shard_size: int) -> InvalidRequestError:
    shards = ledger.shards
    staged = f"in shards of {shards[0].keys} rows" if len(shards) > 1 else "in one shard"
    return _other_run(
        ledger.id,
        f"run {ledger.id!r} was staged {staged}; a shard size of {shard_size} cuts these "
        "requests differently: rejoin it with the shard size it started with, or use a new run id",
    )


def _check_rejoin(
    cloud: Cloud,
    ledger: Ledger,
    provider: Provider,
    model: str,
    max_attempts: int,
    shard_size: int,
    cutter: _Shards,
) -> None:
    """Raise unless these rows are the staged run's rows; reads only, stages nothing.

    The error says what differs: the provider, the model, the attempts, how the requests are
    cut into shards, or the requests themselves.
    """
    run = ledger.id
    if ledger.provider != provider:
        names = _PROVIDER_NAMES
        raise _other_run(
            run,
            f"run {run!r} was staged with {names[ledger.provider]} requests, not "
            f"{names[provider]} ones: use a new run id",
        )
    if ledger.model != model:
        raise _other_run(
            run,
            f"run {run!r} was staged for model {ledger.model!r}, not {model!r}: use a new run id",
        )
    if ledger.max_attempts != max_attempts:
        raise _other_run(
            run,
            f"run {run!r} was staged with at most {ledger.max_attempts} attempts per key, not "
            f"{max_attempts}: rejoin it with {ledger.max_attempts}, or use a new run id",
        )
    last = len(ledger.shards) - 1
    for index, shard in enumerate(ledger.shards):
        if not cutter.more():
            raise _other_run(run)
        given = measure(shard.id, provider, model, cutter.take(), run_origin(run))
        staged = read_manifest(cloud.staging, shard.id)
        if staged is not None and staged.claims_same(given):
            continue
        # More rows than a full staged shard, or a full new shard smaller than the staged one:
        # the same requests cut at another size.
        if (given.rows > shard.keys and index < last) or (
            given.rows < shard.keys and given.rows == shard_size
        ):
            raise _other_cut(ledger, shard_size)
        raise _other_run(run)
    if cutter.more():
        raise _other_run(run)


def open_run(cloud: Cloud, run_id: str) -> Run:
    """Rebuild a run from its ledger in GCS.

    Raises:
        InvalidRequestError: there is no run under this id (``field == "run"``), or the id is
            invalid or its ledger unreadable (``field == "id"``).
    """
    check_run_id(run_id)
    ledger = read_ledger(cloud.staging, run_id)
    if ledger is None:
        uri = cloud.staging.folder(run_id).uri("run.json")
        raise InvalidRequestError(f"no run under id {run_id!r} (no {uri})", field="run")
    return Run(cloud, ledger)


class Run:
    """A run of many requests over shards and attempts; see the module docstring."""

    def __init__(self, cloud: Cloud, ledger: Ledger) -> None:
        self._cloud = cloud
        self.id = ledger.id
        self.provider: Provider = ledger.provider
        self.model = ledger.model
        self.max_attempts = ledger.max_attempts
        self.shards = list(ledger.shards)

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
        cloud = self._cloud
        found: list[_Attempt] = []
        for attempt in range(self.max_attempts):
            submission_id = attempt_id(shard, attempt)
            staged = look_up(cloud.vertex, cloud.staging, submission_id)
            if staged is None:
                break
            if staged.manifest.origin != run_origin(self.id):
                raise InvalidRequestError(
                    f"id {submission_id!r}, which run {self.id!r} uses for attempt {attempt} of "
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
        folder = self._cloud.staging.folder(shard.id)
        return Job(
            id=shard.id,
            name=f"{self.id}/{shard.id}",
            provider=self.provider,
            model=self.model,
            input_uri=folder.input_uri,
            output_prefix=folder.output_prefix,
            keys=shard.keys,
        )

    def advance(
        self,
        *,
        deadline: datetime | None = None,
        fallback: Literal["online"] | None = None,
        max_live_jobs: int | None = None,
        online_concurrency: int = CONCURRENCY,
    ) -> RunSummary:
        """Take one step: create jobs, resubmit what is retryable or missing, finish shards.

        Safe to call from any number of processes at once, and as often as you like.

        Args:
            deadline: past this moment (a timezone-aware ``datetime``) no new attempt is made;
                with ``fallback="online"`` the shard's outstanding jobs are cancelled and its
                unsettled keys answered online, each at most once across processes (see
                ``vertexbatch._online``).
            fallback: ``"online"`` to answer past the deadline through the online APIs.
            max_live_jobs: jobs of this run that may be live at once; by default 4 for Claude
                (Vertex's default quota of concurrent Claude batch jobs per project) and 16 for
                Gemini.
            online_concurrency: online calls in flight at once in the fallback (default 8).

        Raises:
            InvalidRequestError: the deadline is not a timezone-aware ``datetime``
                (``field == "deadline"``), the fallback is not ``"online"`` or ``None``
                (``field == "fallback"``), or a limit is not a positive whole number.
        """
        check_deadline(deadline)
        if fallback not in (None, "online"):
            raise InvalidRequestError(
                f"fallback must be 'online' or None, got {fallback!r}", field="fallback"
            )
        budget = DEFAULT_LIVE_JOBS[self.provider] if max_live_jobs is None else max_live_jobs
        for name, value in (("max_live_jobs", budget), ("online_concurrency", online_concurrency)):
            if type(value) is not int or value < 1:
                raise InvalidRequestError(
                    f"{name} must be a whole number of at least 1, got {value!r}", field=name
                )
        late = deadline is not None and datetime.now(UTC) >= deadline
        rules = StepRules(
            act=True,
            late=late,
            online=late and fallback == "online",
            max_attempts=self.max_attempts,
            live_budget=budget,
        )
        return self._step(rules, online_concurrency)

    def status(self) -> RunSummary:
        """Where the run stands, without creating or cancelling anything."""
        return self._step(self._looking(), CONCURRENCY)

    def _looking(self) -> StepRules:
        """The rules of a step that only looks (``status``)."""
        return StepRules(
            act=False, late=False, online=False, max_attempts=self.max_attempts, live_budget=0
        )

    def _open(self, shard: Shard, attempts: list[_Attempt]) -> _Open:
        """An unfinished shard as a step sees it: its attempts and its latest's unsettled keys."""
        latest = attempts[-1]
        unsettled = self._unsettled(latest.job) if latest.terminal and latest.job else []
        return _Open(shard, attempts, unsettled)

    def _step(self, rules: StepRules, concurrency: int) -> RunSummary:
        """Read every shard, plan, then act: the live-job budget counts the whole run."""
        totals: Counter[str] = Counter()
        unfinished: list[_Open] = []
        for shard in self.shards:
            done = read_done(self._cloud.staging, shard)
            if done is not None:
                totals.update(done)
                continue
            unfinished.append(self._open(shard, self._attempts(shard)))
        plan = plan_step([shard.view() for shard in unfinished], rules)
        totals["pending"] += plan.pending
        for action in plan.actions:
            state = unfinished[action.shard]
            shard = state.shard
            if action.kind == "create":
                self._create(attempt_id(shard, action.attempt))
            elif action.kind == "resubmit":
                job = state.attempts[-1].job
                assert job is not None  # the planner resubmits only from a finished job
                self._resubmit(job, state.unsettled, attempt_id(shard, action.attempt))
            elif action.kind == "online":
                totals.update(self._answer_online(shard, state.attempts, concurrency))
            else:
                outcomes = self._final_outcomes(shard)
                if rules.act:
                    write_done(self._cloud.staging, shard, outcomes)
                    logger.info("shard %s finished: %s", shard.id, outcomes)
                totals.update(outcomes)
        return RunSummary(
            id=self.id,
            done=not totals.get("pending"),
            keys=self.keys,
            outcomes={k: v for k, v in sorted(totals.items()) if v},
            live_jobs=plan.live,
            created=plan.created,
        )

    def _unsettled(self, job: Job) -> list[str]:
        """The keys of a finished attempt that are retryable or missing."""
        cloud = self._cloud
        return [
            r.key
            for r in iter_results(cloud.vertex, cloud.staging, job, _SILENT)
            if r.outcome in ("retryable", "missing")
        ]

    def _create(self, submission_id: str) -> Job:
        """Create the job of an attempt that was staged but has none (identity protocol)."""
        cloud = self._cloud
        manifest = read_manifest(cloud.staging, submission_id)
        if manifest is None:
            raise InvalidRequestError(f"attempt {submission_id!r} is not staged", field="id")
        return submit(cloud.staging, cloud.vertex, cloud.retry, submission_id, manifest)

    def _resubmit(self, job: Job, keys: list[str], submission_id: str) -> Job:
        """Stage and submit an attempt of ``keys``, read back from ``job``'s staged input."""
        cloud = self._cloud
        origin = run_origin(self.id)
        return resubmit(
            cloud.staging, cloud.vertex, cloud.retry, job, set(keys), submission_id, origin
        )

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
        return (result for result, _ in self._shard_tries(shard, self._attempts(shard)))

    def _shard_tries(self, shard: Shard, attempts: list[_Attempt]) -> Iterator[tuple[Result, int]]:
        """``_shard_results`` with the number of attempts that held each key."""
        cloud = self._cloud
        staging = cloud.staging
        first = self._shard_job(shard)
        keys = read_key_map(staging, first)
        jobs = [a.job for a in attempts if a.job is not None]
        taken: set[int] = set()
        online = staging.folder(shard.id).uri(ONLINE)
        if staging.exists(online):
            # Answered online: the key was left unsettled by every attempt, so each held it.
            for result in read_output_file(staging, online, keys, taken, first):
                yield result, len(jobs) + 1
        seen = {keys.keys[i] for i in taken}
        latest = len(jobs) - 1
        for index in range(latest, -1, -1):
            for result in iter_results(cloud.vertex, staging, jobs[index], _SILENT):
                if result.key not in seen:
                    seen.add(result.key)
                    # Attempt i+1 holds exactly the keys attempt i left unsettled, and a finished
                    # attempt yields each of its keys: a key left unsettled by an earlier attempt
                    # is in the latest one, still running.
                    settled = result.outcome not in _UNSETTLED
                    yield result, (index if settled else latest) + 1

    def key_results(self) -> Iterator[KeyResult]:
        """Like ``results``, each result with its attempts and its outcome in the run.

        The outcomes are those ``status`` counts: a key of a shard that is not finished is
        ``pending`` (whatever its latest result), and a retryable or missing key of a finished
        shard is ``exhausted``.
        """
        staging = self._cloud.staging
        for shard in self.shards:
            job = self._shard_job(shard)
            attempts = self._attempts(shard)
            final = read_done(staging, shard) is not None or any(
                action.kind == "finish"
                for action in plan_step(
                    [self._open(shard, attempts).view()], self._looking()
                ).actions
            )
            for result, tries in self._shard_tries(shard, attempts):
                self._cloud.telemetry.record(result, job)
                if not final:
                    outcome = "pending"
                elif result.outcome in _UNSETTLED:
                    outcome = "exhausted"
                else:
                    outcome = result.outcome
                yield KeyResult(result, tries, outcome)

    def results(self) -> Iterator[Result]:
        """One result per key across shards and attempts, the latest attempt winning.

        Each yielded result is recorded in the client's metrics once, as ``Client.results`` does.
        """
        for shard in self.shards:
            job = self._shard_job(shard)
            for result in self._shard_results(shard):
                self._cloud.telemetry.record(result, job)
                yield result

    def _answer_online(
        self, shard: Shard, attempts: list[_Attempt], concurrency: int
    ) -> dict[str, int]:
        """Past the deadline: cancel the shard's jobs and answer its unsettled keys online.

        Each key is answered online at most once across processes: the shard is claimed in GCS
        first (``vertexbatch._online``); while another process holds the claim, the shard is
        reported pending and nothing is called.
        """
        cloud = self._cloud
        for attempt in attempts:
            if attempt.job is not None and not attempt.terminal:
                cloud.vertex.cancel(attempt.job.name)

        def settled() -> set[str]:
            results = self._shard_results(shard)
            return {r.key for r in results if r.outcome not in ("retryable", "missing")}

        folder = cloud.staging.folder(shard.id)
        if not answer_online(cloud, self._shard_job(shard), settled, folder, ONLINE, concurrency):
            # Another process holds the shard's claim and is answering it; a later step finishes.
            return {"pending": shard.keys}
        outcomes = self._final_outcomes(shard)
        write_done(cloud.staging, shard, outcomes)
        logger.info("shard %s finished: %s", shard.id, outcomes)
        return outcomes


def summary_line(summary: RunSummary) -> str:
    """One line for logs and the CLI."""
    counts = ", ".join(f"{k} {v}" for k, v in summary.outcomes.items())
    state = "done" if summary.done else f"{summary.live_jobs} live job(s)"
    return f"run {summary.id}: {summary.keys} keys, {state}; {counts}"
