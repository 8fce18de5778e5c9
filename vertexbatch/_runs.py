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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from opentelemetry.metrics import NoOpMeterProvider

from ._cached import CacheFill, cached_job, cached_status
from ._cloud import Cloud
from ._errors import InvalidRequestError, MissingError
from ._identity import look_up, resubmit, submit
from ._ledger import (
    Ledger,
    Shard,
    attempt_id,
    counts_online,
    read_done,
    write_done,
    write_done_online,
)
from ._manifest import read_manifest, run_origin
from ._models import Job, Provider, Result, Status
from ._online import CONCURRENCY, answer_online
from ._plan import ShardView, StepRules, plan_step
from ._results import iter_results, read_output_file
from ._staged import read_key_map
from ._telemetry import Telemetry
from ._tracing import Tracing, note, traced
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
# Why a key of a finished shard has no result: no job of the run ever ran it.
_NEVER_RUN = "no job ran this key: the run's deadline passed before its attempt's job was created"


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


def _tracing_of(run: Run) -> Tracing:
    return run._cloud.tracing


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
            if not staged.manifest.rows:  # every key answered from the answer cache
                job = cached_job(staged.spec)
                found.append(_Attempt(job, cached_status(job)))
            elif staged.job is None:
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

    @traced("run.advance", _tracing_of)
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
        note({"vertexbatch.run.id": self.id, "gen_ai.request.model": self.model})
        late = deadline is not None and datetime.now(UTC) >= deadline
        rules = StepRules(
            act=True,
            late=late,
            online=late and fallback == "online",
            max_attempts=self.max_attempts,
            live_budget=budget,
        )
        summary = self._step(rules, online_concurrency)
        note(
            {
                "vertexbatch.run.done": summary.done,
                "vertexbatch.run.live_jobs": summary.live_jobs,
                **{f"vertexbatch.run.keys.{k}": v for k, v in summary.outcomes.items()},
            }
        )
        return summary

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
        note(
            {
                f"vertexbatch.run.actions.{kind}": n
                for kind, n in Counter(a.kind for a in plan.actions).items()
            }
        )
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

    def _final_outcomes(self, shard: Shard, *, online: bool | None = None) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for result in self._shard_results(shard, final=True, online=online):
            outcome = result.outcome
            counts["exhausted" if outcome in ("retryable", "missing") else outcome] += 1
        return dict(counts)

    def _shard_results(
        self, shard: Shard, *, final: bool = False, online: bool | None = None
    ) -> Iterator[Result]:
        """One result per key of the shard: the online answer, else the latest attempt's.

        Records no telemetry: superseded attempts are read too, and steps read results to count.
        """
        attempts = self._attempts(shard)
        tries = self._shard_tries(shard, attempts, final=final, online=online)
        return (result for result, _ in tries)

    def _shard_tries(
        self,
        shard: Shard,
        attempts: list[_Attempt],
        *,
        fill: bool = False,
        final: bool = False,
        online: bool | None = None,
    ) -> Iterator[tuple[Result, int]]:
        """``_shard_results`` with the number of attempts that held each key.

        ``fill``: a caller's results pass: each terminal attempt of a ``cache=True`` run fills
        the answer cache with its own ok answers (steps and ``status`` never write to it).
        ``final``: the shard is finished: a key no job answered (the deadline passed before its
        shard's job was created) is ``missing``, so every key has its one result. ``online``:
        whether the shard's online answers count; by default, unless its done record was made
        without them (a step finished the shard from its attempts while another answered it
        online and had not yet recorded so), so that results and ``status`` always agree.
        """
        cloud = self._cloud
        staging = cloud.staging
        first = self._shard_job(shard)
        keys = read_key_map(staging, first)
        jobs = [a.job for a in attempts if a.job is not None]
        taken: set[int] = set()
        answers = staging.folder(shard.id).uri(ONLINE)
        if staging.exists(answers) and (
            counts_online(staging, shard) if online is None else online
        ):
            # Answered online: the key was left unsettled by every attempt, so each held it.
            for result in read_output_file(staging, answers, keys, taken, first):
                yield result, len(jobs) + 1
        seen = {keys.keys[i] for i in taken}
        latest = len(jobs) - 1
        for index in range(latest, -1, -1):
            job = jobs[index]
            filler = CacheFill(staging, job) if fill else None
            for result in iter_results(cloud.vertex, staging, job, _SILENT, filler):
                if result.key not in seen:
                    seen.add(result.key)
                    # Attempt i+1 holds exactly the keys attempt i left unsettled, and a finished
                    # attempt yields each of its keys: a key left unsettled by an earlier attempt
                    # is in the latest one, still running.
                    settled = result.outcome not in _UNSETTLED
                    yield result, (index if settled else latest) + 1
        if final and len(seen) < len(keys):
            for key in keys.keys:
                if key not in seen:
                    error = MissingError(_NEVER_RUN, key=key)
                    yield Result(key=key, error=error), len(attempts)

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
            for result, tries in self._shard_tries(shard, attempts, fill=True, final=final):
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
        attributes = {"vertexbatch.run.id": self.id, "gen_ai.request.model": self.model}
        return self._cloud.tracing.passing(self._results(), attributes, "run.results")

    def _results(self) -> Iterator[Result]:
        staging = self._cloud.staging
        for shard in self.shards:
            job = self._shard_job(shard)
            final = read_done(staging, shard) is not None
            attempts = self._attempts(shard)
            for result, _ in self._shard_tries(shard, attempts, fill=True, final=final):
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
            results = self._shard_results(shard, online=True)
            return {r.key for r in results if r.outcome not in ("retryable", "missing")}

        folder = cloud.staging.folder(shard.id)
        if not answer_online(cloud, self._shard_job(shard), settled, folder, ONLINE, concurrency):
            # Another process holds the shard's claim and is answering it; a later step finishes.
            return {"pending": shard.keys}
        outcomes = self._final_outcomes(shard, online=True)
        write_done_online(cloud.staging, shard, outcomes)
        logger.info("shard %s finished: %s", shard.id, outcomes)
        return outcomes


def summary_line(summary: RunSummary) -> str:
    """One line for logs and the CLI."""
    counts = ", ".join(f"{k} {v}" for k, v in summary.outcomes.items())
    state = "done" if summary.done else f"{summary.live_jobs} live job(s)"
    return f"run {summary.id}: {summary.keys} keys, {state}; {counts}"
