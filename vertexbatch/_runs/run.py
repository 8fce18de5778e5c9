"""Runs: from many requests to every key answered — shards, attempts, and a ledger in GCS.

A run is a set of *shards* (jobs of at most ``shard_size`` rows and 1 GB), each retried as
*attempts* under derived ids, all built on the core's identity protocol. Its only state is in
GCS, under the run's own folder and the shards' folders::

    PREFIX/RUN/run.json            the ledger: provider, model, max attempts, shard ids and sizes
    PREFIX/RUN/progress.json       a cache of the shards' records, for the next step
    PREFIX/RUN.s0/...              shard 0, attempt 0 (a normal submission folder)
    PREFIX/RUN.s0.r1/...           shard 0, attempt 1: its retryable and missing keys
    PREFIX/RUN.s0/done.json        shard 0's final outcome counts, once it is finished
    PREFIX/RUN.s0.r1/ended.json    attempt 1's job's ended status, once a step saw it ended
    PREFIX/RUN.s0/online.jsonl     shard 0's answers from the online fallback, if it ran
    PREFIX/RUN.s0/online.claim.json  who is answering shard 0 online, and until when

``advance`` is one short, idempotent step: any number of schedulers may call it at once, and a
step killed half-way is finished by the next. Two callers creating the same attempt get the same
job, because an attempt is a submission with a derived id and deterministic rows. What a step
does is decided by the pure planner in ``_runs.plan``; this module reads the state and acts.

A step (``_runs.step``) lists the run's jobs once (``_runs.jobs``) and its shard folders once
(``_runs.records``, with the run's progress cache ``PREFIX/RUN/progress.json``), whatever its
number of shards, cancels the twins of its attempts' jobs it finds there, and counts them live
until they end. Results passes read each shard (``_runs.read``): they read its output anyway.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any, Literal

from .._cloud import Cloud
from .._errors import InvalidRequestError
from .._observe.progress import ProgressCallback, check_progress, meter_of
from .._observe.traces import Tracing, note, traced
from .._providers import PROVIDERS
from .._rules import id_label
from .._schemas.check import Schema
from .._schemas.parsed import reader_schema
from .._values import Provider, Result
from .._vertex.controls import RUN_LABEL
from .._vertex.tiers import check_where
from .._waiting.schedule import check_deadline
from .jobs import RunJobs
from .ledger import Ledger, Shard
from .online import CONCURRENCY
from .plan import StepRules, plan_step
from .read import ShardReader
from .records import Records
from .registry import Waiting, assemble
from .step import RunSummary, Step, open_shard
from .tasks import Task

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "DEFAULT_LIVE_JOBS",
    "DEFAULT_SHARD_SIZE",
    "KeyResult",
    "Run",
    "summary_line",
]

DEFAULT_SHARD_SIZE = 100_000
# Vertex runs at most 4 Claude batch jobs per project at once by default; Gemini's is a guess.
DEFAULT_LIVE_JOBS: Mapping[Provider, int] = {p: row.live_jobs for p, row in PROVIDERS.items()}


@dataclass(frozen=True, slots=True)
class KeyResult:
    """One key of a run: its latest result, how many attempts held it, its outcome in the run.

    Attributes:
        result: the key's latest result: its online answer, else its latest attempt's.
        attempts: the attempts that held the key: its batch jobs, plus one if it was answered
            online.
        outcome: the key's word among ``RunSummary.outcomes``: ``ok``, ``refused``,
            ``truncated``, ``failed``, ``exhausted`` (retryable or missing, nothing more to
            try: ``result.outcome`` says so too), or ``pending`` while its shard is not
            finished.
        tier: the tier its result was billed at (its ``Result.tier``): ``batch``, or for an
            answer of the online fallback the tier Vertex says served it (``standard``,
            ``flex``, ``priority``, ``provisioned``), else the run's ``fallback_tier``; for
            ``SpendMeter.add(result, tier)``.
        priced_on: the day (UTC) its answer is priced on: a batch answer's, the day Vertex
            created its attempt's job; an online answer's, the day its shard was recorded as
            answered online; ``None`` where not known (price it on today's). A run's spend is
            priced on the latest of its answers' days (``SpendMeter(..., priced_on=)``,
            ``_runs.usage``).
    """

    result: Result
    attempts: int
    outcome: str
    tier: str = "batch"
    priced_on: date | None = None


def _tracing_of(run: Run) -> Tracing:
    return run._cloud.tracing


class Run:
    """A run of many requests over shards and attempts; see the module docstring."""

    def __init__(self, cloud: Cloud, ledger: Ledger, *, waiting: bool = False) -> None:
        """``waiting``: a run staged by tasks whose ledger is not made yet (``ledger`` has no
        shards): each step first tries to make it (``_runs.registry``)."""
        # With a CMEK key, every object of the run (records, online answers) is written with it.
        cloud = replace(cloud, staging=cloud.staging.keyed(ledger.controls.kms_key))
        self._cloud = cloud
        self._ledger = ledger
        self._waiting: Waiting | None = None
        self._unmade = waiting
        self.id = ledger.id
        self.provider: Provider = ledger.provider
        self.model = ledger.model
        self.max_attempts = ledger.max_attempts
        self.shards = list(ledger.shards)
        self.dest = ledger.dest  # the BigQuery dataset its jobs write to ("": GCS)
        # The price tier its online fallback asks for (``_vertex.tiers``).
        self.fallback_tier = ledger.fallback_tier
        self._labels = {RUN_LABEL: id_label(self.id)}
        self._reader = ShardReader(cloud, self.id, self.provider, self.model, self.fallback_tier)

    def _made(self, write: bool, check: bool = True) -> bool:
        """Whether the run has its ledger: a tasked run's is made once every task registered
        (written only when ``write``; without ``check``, a ledger not written yet is left to
        the next ``advance`` to check and make: ``status`` writes nothing and merges nothing)."""
        if not self._unmade:
            return True
        found = assemble(self._cloud.staging, self.id, write=write, check=check)
        if isinstance(found, Ledger):
            self._ledger, self.shards, self._waiting = found, list(found.shards), None
            self._unmade = not write
            return True
        # Not made yet: the shards its registered tasks staged, as the ledger will list them.
        self._waiting, self.shards = found, [] if found is None else list(found.shards)
        return False

    def _unmade_summary(self) -> RunSummary:
        waiting = self._waiting
        keys = 0 if waiting is None else waiting.keys
        missing = () if waiting is None else waiting.missing
        return RunSummary(
            self.id, False, keys, {"pending": keys} if keys else {}, waiting=missing, made=False
        )

    def _ready_to_read(self) -> None:
        if not self._made(write=False):
            missing = self._waiting.missing if self._waiting is not None else ()
            raise InvalidRequestError(
                f"run {self.id!r} has no results yet: tasks {list(missing)} have not registered "
                "their requests, so no job exists",
                field="run",
            )

    def __repr__(self) -> str:
        """The run's id, provider and shards; for a run staged by tasks whose ledger is not
        made yet, the shards its registered tasks staged and the tasks still awaited, as the
        last look found them (no look yet: no count)."""
        shown = f"Run(id={self.id!r}, provider={self.provider!r}"
        waiting = self._waiting
        if waiting is not None:
            return f"{shown}, shards={len(self.shards)}, made=False, waiting={waiting.missing})"
        if self._unmade and not self.shards:
            return f"{shown}, made=False)"
        return f"{shown}, shards={len(self.shards)})"

    @property
    def keys(self) -> int:
        return sum(s.keys for s in self.shards)

    def _jobs(self) -> RunJobs:
        """The run's jobs for one results pass (listed once, when first needed), each shard's
        records read from GCS as the pass comes to it."""
        cloud = self._cloud
        return RunJobs(
            cloud.vertex,
            Records(cloud.staging),
            self.id,
            self.provider,
            self.model,
            labelled=self._ledger.labelled,
            record=False,
            dest=self._ledger.dest,
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
                ``vertexbatch._runs.online``).
            fallback: ``"online"`` to answer past the deadline through the online APIs, at
                the run's ``fallback_tier`` (given when it started).
            max_live_jobs: jobs of this run that may be live at once; by default 4 for Claude
                (Vertex's default quota of concurrent Claude batch jobs per project) and 16 for
                Gemini.
            online_concurrency: online calls in flight at once in the fallback (default 8).

        Raises:
            InvalidRequestError: the deadline is not a timezone-aware ``datetime``
                (``field == "deadline"``), the fallback is not ``"online"`` or ``None``
                (``field == "fallback"``), a limit is not a positive whole number, or the
                run's ``fallback_tier`` is not served in this client's location
                (``field == "fallback_tier"``).
        """
        check_deadline(deadline)
        if fallback not in (None, "online"):
            raise InvalidRequestError(
                f"fallback must be 'online' or None, got {fallback!r}", field="fallback"
            )
        if fallback == "online":
            check_where(self._ledger.fallback_tier, self._cloud.location)
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
        if not self._made(write=True):
            return self._unmade_summary()
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
        """Where the run stands, without creating or cancelling anything.

        A run staged by tasks whose ledger no ``advance`` has made yet is summed up from its
        task records alone (``made`` false, every key pending, ``waiting`` the tasks that have
        not registered): once every task has, the next ``advance`` checks the keys and makes
        the ledger, and a look costs a bounded number of GCS requests meanwhile."""
        if not self._made(write=False, check=False):
            return self._unmade_summary()
        return self._step(self._looking(), CONCURRENCY)

    def _looking(self) -> StepRules:
        """The rules of a step that only looks (``status``)."""
        return StepRules(
            act=False, late=False, online=False, max_attempts=self.max_attempts, live_budget=0
        )

    def _step(self, rules: StepRules, concurrency: int) -> RunSummary:
        """One step (``_runs.step``): its state read at a cost that does not grow with shards."""
        return Step(self._cloud, self._ledger, self._reader, self._labels).perform(
            rules, concurrency
        )

    def _share(self, task: Task | None) -> list[Shard]:
        """The shards a reading task takes: every ``task.count``-th of the run's, from its
        index (all of them without a task), so that N readers share every key exactly once."""
        if task is not None and not isinstance(task, Task):
            raise InvalidRequestError(
                f"task must be a vertexbatch.Task, got {type(task).__name__}", field="task"
            )
        self._ready_to_read()
        if task is None:
            return self.shards
        return self.shards[task.index :: task.count]

    def key_results(
        self,
        *,
        task: Task | None = None,
        schema: type[BaseModel] | Mapping[str, Any] | None = None,
    ) -> Iterator[KeyResult]:
        """Like ``results``, each result with its attempts and its outcome in the run.

        The outcomes are those ``status`` counts: a key of a shard that is not finished is
        ``pending`` (whatever its latest result), and a retryable or missing key of a finished
        shard is ``exhausted``, as its result's outcome says (``results``). ``task`` and
        ``schema``: as for ``results``.
        """
        given = reader_schema(schema)
        shards = self._share(task)
        return self._key_results(shards, given)

    def _key_results(self, shards: list[Shard], schema: Schema | None) -> Iterator[KeyResult]:
        for result, tries, final, tier, day in self._tries(shards, schema):
            yield KeyResult(result, tries, result.outcome if final else "pending", tier, day)

    def _tries(
        self, shards: list[Shard], schema: Schema | None
    ) -> Iterator[tuple[Result, int, bool, str, date | None]]:
        """Each key's result (recorded in the metrics), its attempts, and whether its shard is
        finished: recorded so, or one the next step would finish (as ``status`` counts it), so
        that ``results``, ``key_results`` and ``status`` agree: a finished shard's keys still
        retryable or missing are ``exhausted`` (``ShardReader.tries``)."""
        reader = self._reader
        records = Records(self._cloud.staging)
        jobs = self._jobs()
        for shard in shards:
            job = reader.job(shard)
            record = records.done(shard)
            done = record is not None
            attempts = jobs.attempts(shard, self.max_attempts)
            final = done or any(
                action.kind == "finish"
                for action in plan_step(
                    [open_shard(reader, shard, attempts).view()], self._looking()
                ).actions
            )
            day = None if record is None else record.day  # its online answers' day
            tried = reader.tries(
                shard, attempts, fill=True, final=final, schema=schema, online_day=day
            )
            for result, tries, tier, priced_on in tried:
                self._cloud.telemetry.record(result, job)
                yield result, tries, final, tier, priced_on

    def results(
        self,
        *,
        task: Task | None = None,
        schema: type[BaseModel] | Mapping[str, Any] | None = None,
        progress: ProgressCallback | None = None,
    ) -> Iterator[Result]:
        """One result per key across shards and attempts, the latest attempt winning.

        A key of a finished shard (as ``status`` counts it) that is still retryable or missing
        is ``exhausted``: its error an ``ExhaustedError`` (not retryable: the run tries it no
        more) carrying the last attempt's ``LineError`` or ``MissingError`` as ``last``.
        Each yielded result is recorded in the client's metrics once, as ``Client.results`` does.
        ``task``: only this task's share of the run's keys (its shards: every ``task.count``-th,
        from ``task.index``), so that the tasks of a reading job read every key exactly once
        between them. ``progress``: called with a ``vertexbatch.Progress`` (results of the keys).
        ``schema``: the run's own ``schema=`` (its pydantic class, or its JSON schema): with the
        class, ``Result.parsed`` is an instance of it (``Client.results``).

        Raises:
            InvalidRequestError: a run staged by tasks that have not all registered yet
                (``field == "run"``), ``task`` is not a ``Task``, or ``schema`` is not one
                ``schema=`` takes; as the pass begins, before any result, ``schema`` is not the
                schema the run was started with (``field == "schema"``).
        """
        given = reader_schema(schema)
        shards = self._share(task)
        attributes = {"vertexbatch.run.id": self.id, "gen_ai.request.model": self.model}
        total = self.keys if task is None else sum(shard.keys for shard in shards)
        meter = meter_of(check_progress(progress), "results", total_rows=total, counts_bytes=False)
        results = self._results(shards, given)
        if meter is not None:
            results = meter.counted(results, done=True)
        return self._cloud.tracing.passing(results, attributes, "run.results")

    def _results(self, shards: list[Shard], schema: Schema | None) -> Iterator[Result]:
        return (result for result, _, _, _, _ in self._tries(shards, schema))


def summary_line(summary: RunSummary) -> str:
    """One line for logs and the CLI, ending with the spend of the finished shards (all of them
    once the run is done) when one is finished."""
    counts = ", ".join(f"{k} {v}" for k, v in summary.outcomes.items())
    state = "done" if summary.done else f"{summary.live_jobs} live job(s)"
    if summary.waiting:
        state = f"waiting for task(s) {', '.join(map(str, summary.waiting))} to register"
    elif not summary.made:
        state = "every task registered; the next advance checks the keys and makes the ledger"
    line = f"run {summary.id}: {summary.keys} keys, {state}; {counts}"
    if summary.spend is not None:  # the finished shards' (every shard's once done)
        line += f"; {'' if summary.done else 'finished shards: '}{summary.spend.summary()}"
    return line
