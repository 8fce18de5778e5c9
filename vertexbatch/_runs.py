"""Runs: from many requests to every key answered — shards, attempts, and a ledger in GCS.

A run is a set of *shards* (jobs of at most ``shard_size`` rows and 1 GB), each retried as
*attempts* under derived ids, all built on the core's identity protocol. Its only state is in
GCS, under the run's own folder and the shards' folders::

    PREFIX/RUN/run.json            the ledger: provider, model, max attempts, shard ids and sizes
    PREFIX/RUN.s0/...              shard 0, attempt 0 (a normal submission folder)
    PREFIX/RUN.s0.r1/...           shard 0, attempt 1: its retryable and missing keys
    PREFIX/RUN.s0/done.json        shard 0's final outcome counts, once it is finished
    PREFIX/RUN.s0.r1/ended.json    attempt 1's job's ended status, once a step saw it ended
    PREFIX/RUN.s0/online.jsonl     shard 0's answers from the online fallback, if it ran
    PREFIX/RUN.s0/online.claim.json  who is answering shard 0 online, and until when

``advance`` is one short, idempotent step: any number of schedulers may call it at once, and a
step killed half-way is finished by the next. Two callers creating the same attempt get the same
job, because an attempt is a submission with a derived id and deterministic rows. What a step
does is decided by the pure planner in ``_plan``; this module reads the state and acts.

A step lists the run's jobs once (``_run_jobs``), whatever its number of shards, cancels the
twins of its attempts' jobs it finds there, and counts them live until they end.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from ._cached import CacheFill
from ._cloud import Cloud
from ._errors import InvalidRequestError, MissingError, job_errors
from ._identity import resubmit, submit
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
from ._models import Job, Provider, Result
from ._online import CONCURRENCY, answer_online
from ._plan import ShardView, StepRules, plan_step
from ._results import read_output_file, read_results
from ._rules import id_label
from ._run_jobs import Attempt, RunJobs, Twin
from ._staged import read_key_map
from ._telemetry import SILENT
from ._tracing import Tracing, note, traced
from ._vertex import RUN_LABEL, status_of
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


@dataclass(frozen=True, slots=True)
class RunSummary:
    """Where a run stands, counted per key.

    Attributes:
        id: the run id.
        done: every shard is finished: each key has its final outcome.
        keys: the number of keys in the run.
        outcomes: keys per final outcome (``ok``, ``refused``, ``truncated``, ``failed``,
            ``exhausted`` — retryable or missing after the last attempt) and ``pending``.
        live_jobs: jobs of the run that have not ended: running, queued, paused (a PAUSED job
            may resume), being cancelled, and twins (jobs of an attempt's id other than the
            attempt's own, left by a lost create answer, say: ``advance`` cancels them, and
            they count until they end).
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
_CANCELLING = "JOB_STATE_CANCELLING"
# Why a key of a finished shard has no result: no job of the run ever ran it.
_NEVER_RUN = "no job ran this key: the run's deadline passed before its attempt's job was created"


@dataclass(frozen=True, slots=True)
class _Open:
    """An unfinished shard as a step found it."""

    shard: Shard
    attempts: list[Attempt]
    unsettled: list[str]

    def view(self) -> ShardView:
        latest = self.attempts[-1]
        state = None if latest.status is None else latest.status.state
        return ShardView.of(self.shard.keys, len(self.attempts), state, len(self.unsettled))


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
        self._labelled = ledger.labelled
        self._labels = {RUN_LABEL: id_label(self.id)}

    def __repr__(self) -> str:
        return f"Run(id={self.id!r}, provider={self.provider!r}, shards={len(self.shards)})"

    @property
    def keys(self) -> int:
        return sum(s.keys for s in self.shards)

    def _jobs(self, *, record: bool = False) -> RunJobs:
        """The run's jobs for one step or results pass (listed once, when first needed)."""
        cloud = self._cloud
        return RunJobs(
            cloud.vertex,
            cloud.staging,
            self.id,
            self.provider,
            self.model,
            labelled=self._labelled,
            record=record,
        )

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

    def _open(self, shard: Shard, attempts: list[Attempt]) -> _Open:
        """An unfinished shard as a step sees it: its attempts and its latest's unsettled keys."""
        latest = attempts[-1]
        unsettled = self._unsettled(latest) if latest.ended else []
        return _Open(shard, attempts, unsettled)

    def _step(self, rules: StepRules, concurrency: int) -> RunSummary:
        """Read every shard, plan, then act: the live-job budget counts the whole run.

        The run's jobs are listed once (``_run_jobs``): no Vertex call per shard.
        """
        totals: Counter[str] = Counter()
        unfinished: list[_Open] = []
        finished: list[Shard] = []
        jobs = self._jobs(record=rules.act)
        for shard in self.shards:
            done = read_done(self._cloud.staging, shard)
            if done is not None:
                totals.update(done)
                finished.append(shard)
                continue
            unfinished.append(self._open(shard, jobs.attempts(shard, self.max_attempts)))
        plan = plan_step([shard.view() for shard in unfinished], rules)
        totals["pending"] += plan.pending
        twins = self._twins(unfinished, jobs.leftovers(finished, self.max_attempts), rules.act)
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
                outcomes = self._final_outcomes(shard, state.attempts)
                if rules.act:
                    write_done(self._cloud.staging, shard, outcomes)
                    logger.info("shard %s finished: %s", shard.id, outcomes)
                totals.update(outcomes)
        return RunSummary(
            id=self.id,
            done=not totals.get("pending"),
            keys=self.keys,
            outcomes={k: v for k, v in sorted(totals.items()) if v},
            live_jobs=plan.live + twins,
            created=plan.created,
        )

    def _twins(self, unfinished: list[_Open], leftovers: list[Twin], act: bool) -> int:
        """Count the attempts' twins (and jobs left running by finished shards); cancel them
        when acting, as a submit of the attempt's id would. Returns how many there are.

        An attempt whose job was created but never recorded (its submitter stopped in
        between) is submitted again: the identity protocol records the job ``find`` names and
        cancels the rest.
        """
        count = len(leftovers)
        doomed = list(leftovers)
        for shard in unfinished:
            for attempt in shard.attempts:
                count += len(attempt.twins)
                if not act or not attempt.twins:
                    continue
                if attempt.recorded:
                    doomed.extend(attempt.twins)
                elif attempt.job is not None:
                    self._create(attempt.job.id)
        for twin in doomed:
            if act and twin.state != _CANCELLING:  # on its way already
                self._cancel_twin(twin)
        return count

    def _cancel_twin(self, twin: Twin) -> None:
        """Cancel a twin; one that keeps failing is logged, and the next step cancels it."""
        logger.info("run %s: cancelling job %s, a twin of an attempt's job", self.id, twin.name)
        try:
            self._cloud.vertex.cancel(twin.name)
        except Exception as exc:
            logger.warning(
                "run %s: could not cancel twin job %s (%s); the next step cancels it",
                self.id,
                twin.name,
                type(exc).__name__,
            )

    def _unsettled(self, attempt: Attempt) -> list[str]:
        """The keys of an ended attempt that are retryable or missing."""
        return [r.key for r in self._read(attempt) if r.outcome in _UNSETTLED]

    def _read(self, attempt: Attempt, fill: CacheFill | None = None) -> Iterator[Result]:
        """An attempt's results, from the status and output directory its step found."""
        assert attempt.job is not None and attempt.status is not None
        staging = self._cloud.staging
        return read_results(staging, attempt.job, attempt.status, attempt.directory, SILENT, fill)

    def _create(self, submission_id: str) -> Job:
        """Create the job of an attempt that was staged but has none (identity protocol)."""
        cloud = self._cloud
        manifest = read_manifest(cloud.staging, submission_id)
        if manifest is None:
            raise InvalidRequestError(f"attempt {submission_id!r} is not staged", field="id")
        return submit(
            cloud.staging, cloud.vertex, cloud.retry, submission_id, manifest, self._labels
        )

    def _resubmit(self, job: Job, keys: list[str], submission_id: str) -> Job:
        """Stage and submit an attempt of ``keys``, read back from ``job``'s staged input."""
        cloud = self._cloud
        origin = run_origin(self.id)
        return resubmit(
            cloud.staging,
            cloud.vertex,
            cloud.retry,
            job,
            set(keys),
            submission_id,
            origin,
            self._labels,
        )

    def _final_outcomes(
        self, shard: Shard, attempts: list[Attempt], *, online: bool | None = None
    ) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for result in self._shard_results(shard, attempts, final=True, online=online):
            outcome = result.outcome
            counts["exhausted" if outcome in _UNSETTLED else outcome] += 1
        return dict(counts)

    def _shard_results(
        self,
        shard: Shard,
        attempts: list[Attempt],
        *,
        final: bool = False,
        online: bool | None = None,
    ) -> Iterator[Result]:
        """One result per key of the shard: the online answer, else the latest attempt's.

        Records no telemetry: superseded attempts are read too, and steps read results to count.
        """
        tries = self._shard_tries(shard, attempts, final=final, online=online)
        return (result for result, _ in tries)

    def _shard_tries(
        self,
        shard: Shard,
        attempts: list[Attempt],
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
        staging = self._cloud.staging
        first = self._shard_job(shard)
        keys = read_key_map(staging, first)
        made = [a for a in attempts if a.job is not None]
        taken: set[int] = set()
        answers = staging.folder(shard.id).uri(ONLINE)
        if staging.exists(answers) and (
            counts_online(staging, shard) if online is None else online
        ):
            # Answered online: the key was left unsettled by every attempt, so each held it.
            for result in read_output_file(staging, answers, keys, taken, first):
                yield result, len(made) + 1
        seen = {keys.keys[i] for i in taken}
        latest = len(made) - 1
        for index in range(latest, -1, -1):
            attempt = made[index]
            assert attempt.job is not None
            filler = CacheFill(staging, attempt.job) if fill else None
            for result in self._read(attempt, filler):
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
        jobs = self._jobs()
        for shard in self.shards:
            job = self._shard_job(shard)
            attempts = jobs.attempts(shard, self.max_attempts)
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
        jobs = self._jobs()
        for shard in self.shards:
            job = self._shard_job(shard)
            final = read_done(staging, shard) is not None
            attempts = jobs.attempts(shard, self.max_attempts)
            for result, _ in self._shard_tries(shard, attempts, fill=True, final=final):
                self._cloud.telemetry.record(result, job)
                yield result

    def _answer_online(
        self, shard: Shard, attempts: list[Attempt], concurrency: int
    ) -> dict[str, int]:
        """Past the deadline: cancel the shard's jobs and answer its unsettled keys online.

        Every job that has not ended is cancelled first, a PAUSED one included (it could
        resume and answer the keys again, paid twice). Each key is answered online at most
        once across processes: the shard is claimed in GCS first (``vertexbatch._online``);
        while another process holds the claim, the shard is reported pending and nothing is
        called.
        """
        cloud = self._cloud
        cancelled = [a for a in attempts if a.job is not None and not a.ended]
        for attempt in cancelled:
            assert attempt.job is not None and attempt.status is not None
            if attempt.status.state != _CANCELLING:  # on its way already
                cloud.vertex.cancel(attempt.job.name)

        fresh: list[Attempt] = []

        def refreshed() -> list[Attempt]:
            # A job cancelled here may have written rows since it was listed: one get each.
            if not fresh:
                fresh.extend(self._refreshed(a) if a in cancelled else a for a in attempts)
            return fresh

        def settled() -> set[str]:
            results = self._shard_results(shard, refreshed(), online=True)
            return {r.key for r in results if r.outcome not in _UNSETTLED}

        folder = cloud.staging.folder(shard.id)
        if not answer_online(cloud, self._shard_job(shard), settled, folder, ONLINE, concurrency):
            # Another process holds the shard's claim and is answering it; a later step finishes.
            return {"pending": shard.keys}
        outcomes = self._final_outcomes(shard, refreshed(), online=True)
        write_done_online(cloud.staging, shard, outcomes)
        logger.info("shard %s finished: %s", shard.id, outcomes)
        return outcomes

    def _refreshed(self, attempt: Attempt) -> Attempt:
        """The attempt with its job's status and output directory as Vertex says now."""
        assert attempt.job is not None
        with job_errors(attempt.job.name):
            job = self._cloud.vertex.get(attempt.job.name)
        directory = str(job.output_info.gcs_output_directory)
        return Attempt(attempt.job, status_of(job), directory, attempt.recorded, attempt.twins)


def summary_line(summary: RunSummary) -> str:
    """One line for logs and the CLI."""
    counts = ", ".join(f"{k} {v}" for k, v in summary.outcomes.items())
    state = "done" if summary.done else f"{summary.live_jobs} live job(s)"
    return f"run {summary.id}: {summary.keys} keys, {state}; {counts}"
