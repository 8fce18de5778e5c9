"""One step of a run (``advance`` or ``status``): read every shard's state, plan, act.

A step reads its state at a cost that does not grow with the run's shards:

- Vertex: one listing of the run's live jobs and a ``get`` per job that ended since the previous
  ``advance`` (``_runs.jobs``);
- GCS: one listing of the run's shard folders and one read of its progress cache, then a read
  of each record that changed since the cache was written (``_runs.records``); an attempt
  staged with no job is not read at all until the plan acts on it (then its manifest is read:
  an attempt the answer cache answered whole has ended already, and the step plans again).

What to do is decided by the pure planner in ``_runs.plan``; here the actions are carried out:
create an attempt's job, resubmit what is retryable or missing, answer online past the
deadline, finish shards (their ``done.json``), cancel twins. ``advance`` then writes the
progress cache for the next step.

An attempt's job is created under a creator's token and never while the shard's online claim
is held; a shard is answered online only under that claim, with no token live, once every
attempt's job has ended and its output is read (``vertexbatch._runs.online``, steps 8 and 9):
no key is paid for twice, by a batch job and online, whatever the order of several processes'
steps.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date

from .._cloud import Cloud
from .._errors import InvalidRequestError, job_errors
from .._job.submit import resubmit, submit
from .._observe.traces import note
from .._plans.prices import today_utc
from .._plans.spend import Spend
from .._staged.manifest import MANIFEST, Manifest, run_origin
from .._values import Job
from .._vertex.jobs import status_of
from .done import Done, write_done, write_done_online
from .jobs import Attempt, RunJobs, Twin
from .ledger import Ledger, Shard, attempt_id
from .online import answer_online, creating
from .plan import Plan, ShardView, StepRules, plan_step
from .read import ONLINE, UNSETTLED, ShardReader
from .records import ListedRecords, Records
from .sink import output_of
from .usage import RunSpend

__all__ = ["Open", "RunSummary", "Step", "open_shard"]

logger = logging.getLogger("vertexbatch")

_CANCELLING = "JOB_STATE_CANCELLING"
# How long a step waits for the cancels of jobs past the deadline to take effect.
_CANCEL_WAIT = 2.0


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
        waiting: a run staged by tasks whose ledger is not made yet: the indexes of the tasks
            that have not registered (``keys`` counts those that have; no job exists yet).
        made: the run has its ledger; ``False`` for a run staged by tasks whose ledger no
            ``advance`` has made yet (no job exists, every key is pending): with ``waiting``
            empty, every task has registered and the next ``advance`` checks the keys are
            unique across tasks and makes it.
        spend: what the answers of the finished shards cost (each key's final answer, online
            ones at the tier they were billed at, priced from the shipped catalogue on the day
            each shard's jobs were created: ``_runs.usage``), from their done records:
            ``None`` while no shard is finished. Its ``notes`` say when
            it covers only some shards; its ``dollars`` are ``None`` (unknown, never 0) for
            a model with no price or a shard finished by an earlier version, whose record
            holds no usage (docs/cost.md, "Spend").
    """

    id: str
    done: bool
    keys: int
    outcomes: Mapping[str, int] = field(default_factory=dict)
    live_jobs: int = 0
    created: int = 0
    waiting: tuple[int, ...] = ()
    made: bool = True
    spend: Spend | None = None


@dataclass(frozen=True, slots=True)
class Open:
    """An unfinished shard as a step found it."""

    shard: Shard
    attempts: list[Attempt]
    unsettled: list[str]

    def view(self) -> ShardView:
        latest = self.attempts[-1]
        state = None if latest.status is None else latest.status.state
        return ShardView.of(self.shard.keys, len(self.attempts), state, len(self.unsettled))


def open_shard(reader: ShardReader, shard: Shard, attempts: list[Attempt]) -> Open:
    """An unfinished shard as a step sees it: its attempts and its latest's unsettled keys."""
    latest = attempts[-1]
    unsettled = reader.unsettled(latest) if latest.ended else []
    return Open(shard, attempts, unsettled)


class Step:
    """One step of one run; ``perform`` it once."""

    def __init__(
        self,
        cloud: Cloud,
        ledger: Ledger,
        reader: ShardReader,
        labels: Mapping[str, str],
    ) -> None:
        self._cloud = cloud
        self._ledger = ledger
        self._reader = reader
        self._labels = dict(labels)
        self._records: Records = ListedRecords(cloud.staging, ledger.id, ledger.span)

    def perform(self, rules: StepRules, concurrency: int) -> RunSummary:
        """Read every shard, plan, then act: the live-job budget counts the whole run."""
        ledger = self._ledger
        cloud = self._cloud
        reader = self._reader
        records = self._records
        totals: Counter[str] = Counter()
        today = today_utc()  # the day a record made now prices online answers on
        spent = RunSpend(ledger.provider, ledger.model, canary=ledger.canary, today=today)
        unfinished: list[Open] = []
        finished: list[Shard] = []
        jobs = RunJobs(
            cloud.vertex,
            records,
            ledger.id,
            ledger.provider,
            ledger.model,
            labelled=ledger.labelled,
            record=rules.act,
            dest=ledger.dest,
        )
        for shard in ledger.shards:
            done = records.done(shard)
            if done is not None:
                totals.update(done.outcomes)
                spent.add(shard.id, done.usage, done.day)
                finished.append(shard)
                continue
            attempts = jobs.attempts(shard, ledger.max_attempts)
            unfinished.append(open_shard(reader, shard, attempts))
        plan = self._plan(unfinished, rules, jobs)
        totals["pending"] += plan.pending
        twins = self._twins(unfinished, jobs.leftovers(finished, ledger.max_attempts), rules.act)
        note(
            {
                f"vertexbatch.run.actions.{kind}": n
                for kind, n in Counter(a.kind for a in plan.actions).items()
            }
        )
        live = plan.live + twins
        created = plan.created
        online = [a.shard for a in plan.actions if a.kind == "online"]
        # The jobs the plan counts live for shards answered online, until seen ended.
        views = {i: unfinished[i].view() for i in online}
        counted = {i: int(v.created and not v.terminal) for i, v in views.items()}
        self._cancel_late([unfinished[i] for i in online])
        for action in plan.actions:
            state = unfinished[action.shard]
            shard = state.shard
            if action.kind == "create":
                if self._create(shard, attempt_id(shard, action.attempt)) is None:
                    created, live = created - 1, live - 1  # answered online meanwhile
            elif action.kind == "resubmit":
                job = state.attempts[-1].job
                assert job is not None  # the planner resubmits only from a finished job
                made = self._resubmit(shard, job, state.unsettled, action.attempt)
                if made is None:
                    created, live = created - 1, live - 1
            elif action.kind == "online":
                answered, running = self._answer_online(shard, state.attempts, concurrency, today)
                if answered is None:
                    totals["pending"] += shard.keys
                else:
                    totals.update(answered.outcomes)
                    spent.add(shard.id, answered.usage, answered.day)
                live += running - counted[action.shard]
            else:
                finish = reader.final(shard, state.attempts, today=today)
                if rules.act:
                    write_done(cloud.staging, shard, finish)
                    logger.info("shard %s finished: %s", shard.id, dict(finish.outcomes))
                totals.update(finish.outcomes)
                spent.add(shard.id, finish.usage, finish.day)
        if rules.act:
            records.save()
        return RunSummary(
            id=ledger.id,
            done=not totals.get("pending"),
            keys=sum(s.keys for s in ledger.shards),
            outcomes={k: v for k, v in sorted(totals.items()) if v},
            live_jobs=live,
            created=created,
            spend=spent.spend(len(ledger.shards)),
        )

    def _plan(self, unfinished: list[Open], rules: StepRules, jobs: RunJobs) -> Plan:
        """Plan the step; an attempt with no job that the plan acts on has its manifest read
        first, and one the answer cache answered whole (it has ended) makes the step plan
        again, as if it had been read from the start."""
        while True:
            plan = plan_step([shard.view() for shard in unfinished], rules)
            unread = [a.shard for a in plan.actions if not unfinished[a.shard].attempts[-1].checked]
            if not unread:
                return plan
            for index in unread:
                state = unfinished[index]
                number = len(state.attempts) - 1
                checked = jobs.check(state.shard, number)
                attempts = [*state.attempts[:-1], checked]
                unfinished[index] = open_shard(self._reader, state.shard, attempts)

    def _twins(self, unfinished: list[Open], leftovers: list[Twin], act: bool) -> int:
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
                    self._create(shard.shard, attempt.job.id)
        for twin in doomed:
            if act and twin.state != _CANCELLING:  # on its way already
                self._cancel_twin(twin)
        return count

    def _cancel_twin(self, twin: Twin) -> None:
        """Cancel a twin; one that keeps failing is logged, and the next step cancels it."""
        run = self._ledger.id
        logger.info("run %s: cancelling job %s, a twin of an attempt's job", run, twin.name)
        try:
            self._cloud.vertex.cancel(twin.name)
        except Exception as exc:
            logger.warning(
                "run %s: could not cancel twin job %s (%s); the next step cancels it",
                run,
                twin.name,
                type(exc).__name__,
            )

    def _create(self, shard: Shard, submission_id: str) -> Job | None:
        """Create the job of an attempt that was staged but has none (identity protocol), under
        a creator's token (``online.creating``); ``None``: not created, as another process holds
        the shard's online claim or answered keys of it online."""
        cloud = self._cloud
        raw = self._records.read(submission_id, MANIFEST)
        if raw is None:
            raise InvalidRequestError(f"attempt {submission_id!r} is not staged", field="id")
        manifest = Manifest.from_json(raw, cloud.staging.folder(submission_id).uri(MANIFEST))
        with creating(cloud.staging, cloud.staging.folder(shard.id), ONLINE) as free:
            if not free:
                return None
            return submit(
                cloud.staging, cloud.vertex, cloud.retry, submission_id, manifest, self._labels
            )

    def _resubmit(self, shard: Shard, job: Job, keys: list[str], attempt: int) -> Job | None:
        """Stage and submit an attempt of ``keys``, read back from ``job``'s staged input, under
        a creator's token (``None``: not made, as ``_create``)."""
        cloud = self._cloud
        origin = run_origin(self._ledger.id)
        with creating(cloud.staging, cloud.staging.folder(shard.id), ONLINE) as free:
            if not free:
                return None
            return resubmit(
                cloud.staging,
                cloud.vertex,
                cloud.retry,
                job,
                set(keys),
                attempt_id(shard, attempt),
                origin,
                self._labels,
            )

    def _cancel_late(self, shards: list[Open]) -> None:
        """Cancel the live jobs of shards to answer online, and wait a little for the cancels
        to take effect (a PENDING job's does within a poll); each shard's attempts are then
        as Vertex says (a job still CANCELLING keeps its shard pending: ``_answer_online``).

        Every job that has not ended is cancelled, a PAUSED one included (it could resume and
        answer the keys again, paid twice).
        """
        live = [(s, a) for s in shards for a in s.attempts if a.job is not None and not a.ended]
        for _, attempt in live:
            assert attempt.job is not None and attempt.status is not None
            if attempt.status.state != _CANCELLING:  # on its way already
                self._cloud.vertex.cancel(attempt.job.name)
        ends = time.monotonic() + _CANCEL_WAIT
        pause = 0.05
        while live:
            still = []
            for state, attempt in live:
                now = self._refreshed(attempt)
                state.attempts[state.attempts.index(attempt)] = now
                if not now.ended:
                    still.append((state, now))
            live = still
            if not live or time.monotonic() + pause > ends:
                return
            time.sleep(pause)
            pause = min(2 * pause, 0.5)

    def _answer_online(
        self, shard: Shard, attempts: list[Attempt], concurrency: int, today: date
    ) -> tuple[Done | None, int]:
        """Past the deadline, the shard's jobs cancelled (``_cancel_late``): once all have
        ended, answer online the keys none of them settled. Returns the shard's record
        (``None``: not finished, its keys pending) and its jobs still live.

        A job still CANCELLING keeps the shard pending (a cancel that lands late may end it
        SUCCEEDED, answering keys). Each key is answered online at most once across processes,
        and only once every attempt's job of its shard has ended and its output is read: the
        shard is claimed in GCS first, then its attempts are read afresh
        (``vertexbatch._runs.online``, steps 8 and 9); while another process holds the claim or
        creates a job of the shard, or a job is live, the shard is reported pending and nothing
        is called.
        """
        cloud = self._cloud
        reader = self._reader
        running = sum(a.job is not None and not a.ended for a in attempts)  # _cancel_late's
        if running:
            return None, running

        fresh: list[Attempt] = []

        def settled() -> set[str] | None:
            nonlocal running
            # Under the claim: an attempt created since the step read the shard shows now.
            fresh.extend(self._fresh(shard))
            live = [a for a in fresh if a.job is not None and not a.ended]
            for attempt in live:
                assert attempt.job is not None and attempt.status is not None
                if attempt.status.state != _CANCELLING:
                    cloud.vertex.cancel(attempt.job.name)
            if live:
                running = len(live)
                return None
            results = reader.results(shard, fresh, online=True)
            return {r.key for r in results if r.outcome not in UNSETTLED}

        folder = cloud.staging.folder(shard.id)
        tier = self._ledger.fallback_tier
        if not answer_online(cloud, reader.job(shard), settled, folder, ONLINE, concurrency, tier):
            # Another process holds the shard's claim, or a job of it is live: a later step
            # finishes it.
            return None, running
        finish = reader.final(shard, fresh or attempts, online=True, today=today)
        write_done_online(cloud.staging, shard, finish)
        logger.info("shard %s finished: %s", shard.id, dict(finish.outcomes))
        return finish, 0

    def _fresh(self, shard: Shard) -> list[Attempt]:
        """The shard's attempts as GCS and Vertex say now: its records read, its ids' jobs
        listed (one list and at most one get per attempt)."""
        ledger = self._ledger
        cloud = self._cloud
        jobs = RunJobs(
            cloud.vertex,
            Records(cloud.staging),
            ledger.id,
            ledger.provider,
            ledger.model,
            labelled=False,  # a list per attempt's id, not one of the whole run
            record=False,
            dest=ledger.dest,
        )
        return jobs.attempts(shard, ledger.max_attempts)

    def _refreshed(self, attempt: Attempt) -> Attempt:
        """The attempt with its job's status and output directory as Vertex says now."""
        assert attempt.job is not None
        with job_errors(attempt.job.name):
            job = self._cloud.vertex.get(attempt.job.name)
        output = output_of(job)
        return Attempt(attempt.job, status_of(job), output, attempt.recorded, attempt.twins)
