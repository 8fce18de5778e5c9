"""Reading a run's shard: one result per key, from its online answers and its attempts' output.

A step reads a shard's results to count what an ended attempt left unsettled and a finished
shard's outcomes; a results pass reads every shard's. Both come here. Nothing here records
telemetry: superseded attempts are read too, and steps read results only to count.
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace

from .._cache.fill import CacheFill
from .._cloud import Cloud
from .._errors import ExhaustedError, MissingError
from .._job.correlate import read_output_file
from .._schemas.check import Schema
from .._staged.read import read_key_map
from .._values import Job, Provider, Result
from .._vertex.tiers import billed_tier
from .done import Done, counts_online
from .jobs import Attempt
from .ledger import Shard
from .online_rows import read_uris
from .sink import read_attempt
from .usage import Tally, day_of

__all__ = ["BATCH_TIER", "ONLINE", "UNSETTLED", "ShardReader"]

ONLINE = "online.jsonl"
# The tier a batch job's answer was billed at (``_plans.spend.TIERS``); an online answer's is
# the one Vertex says served it, else the run's ``fallback_tier`` (``_vertex.tiers``).
BATCH_TIER = "batch"
UNSETTLED = ("retryable", "missing")
# Why a key of a finished shard has no result: no job of the run ever ran it.
_NEVER_RUN = "no job ran this key: the run's deadline passed before its attempt's job was created"


class ShardReader:
    """Reads the shards of one run."""

    def __init__(
        self, cloud: Cloud, run_id: str, provider: Provider, model: str, tier: str = "standard"
    ) -> None:
        self._cloud = cloud
        self._run = run_id
        self._provider: Provider = provider
        self._model = model
        self._tier = tier  # the run's fallback_tier: what an online answer was asked at

    def job(self, shard: Shard) -> Job:
        """The shard's first attempt as a ``Job`` value, built from its folder (no Vertex call):
        what reading its key map, input and online answers needs."""
        folder = self._cloud.staging.folder(shard.id)
        return Job(
            id=shard.id,
            name=f"{self._run}/{shard.id}",
            provider=self._provider,
            model=self._model,
            input_uri=folder.input_uri,
            output_prefix=folder.output_prefix,
            keys=shard.keys,
        )

    def read(
        self, attempt: Attempt, fill: CacheFill | None = None, schema: Schema | None = None
    ) -> Iterator[Result]:
        """An attempt's results, from the status and output (directory or table) its step found;
        ``schema``: a reader's ``schema=`` (``_job.results.read_results``)."""
        assert attempt.job is not None and attempt.status is not None
        cloud, job, status = self._cloud, attempt.job, attempt.status
        return read_attempt(
            cloud.staging, cloud.bigquery, job, status, attempt.directory, fill, schema
        )

    def unsettled(self, attempt: Attempt) -> list[str]:
        """The keys of an ended attempt that are retryable or missing."""
        return [r.key for r in self.read(attempt) if r.outcome in UNSETTLED]

    def final(
        self,
        shard: Shard,
        attempts: list[Attempt],
        *,
        online: bool | None = None,
        today: datetime.date | None = None,
    ) -> Done:
        """A finished shard's keys per final outcome (retryable and missing: ``exhausted``), the
        usage of its answers per tier they were billed at and the latest day they are priced on
        (``_runs.usage``): what a results pass's ``SpendMeter`` counts of the shard. ``today``:
        the day the record is made (UTC), its online answers' day."""
        counts: Counter[str] = Counter()
        tally = Tally(self._provider, self._model)
        tried = self.tries(shard, attempts, final=True, online=online, online_day=today)
        for result, _, tier, day in tried:
            counts[result.outcome] += 1
            tally.add(result, tier, day)
        return Done(dict(counts), tally.usage(), tally.day)

    def results(
        self,
        shard: Shard,
        attempts: list[Attempt],
        *,
        final: bool = False,
        online: bool | None = None,
    ) -> Iterator[Result]:
        """One result per key of the shard: the online answer, else the latest attempt's."""
        tries = self.tries(shard, attempts, final=final, online=online)
        return (result for result, _, _, _ in tries)

    def tries(
        self,
        shard: Shard,
        attempts: list[Attempt],
        *,
        fill: bool = False,
        final: bool = False,
        online: bool | None = None,
        schema: Schema | None = None,
        online_day: datetime.date | None = None,
    ) -> Iterator[tuple[Result, int, str, datetime.date | None]]:
        """``results`` with the number of attempts that held each key, the tier its result
        was billed at (``BATCH_TIER``; an online answer's, its ``Result.tier``: the tier its
        ``usageMetadata.trafficType`` names, else the run's ``fallback_tier``) and the day it is
        priced on (UTC): a batch answer's, the day its attempt's job was created; an online
        answer's, ``online_day`` (the shard's record's); ``None`` where not known.

        ``fill``: a caller's results pass: each terminal attempt of a ``cache=True`` run fills
        the answer cache with its own ok answers (steps and ``status`` never write to it).
        ``final``: the shard is finished: a key no job answered (the deadline passed before its
        shard's job was created) is ``missing``, so every key has its one result, and a key
        still retryable or missing is ``exhausted`` (``exhausted``: the run tries it no more,
        its last error on ``ExhaustedError.last``). ``online``:
        whether the shard's online answers count; by default, unless its done record was made
        without them (a step finished the shard from its attempts while another answered it
        online and had not yet recorded so), so that results and ``status`` always agree.
        ``schema``: a reader's ``schema=``, refused unless it is the shard's own (checked on its
        first attempt's manifest before anything is read), its class building ``parsed``.
        """
        staging = self._cloud.staging
        first = self.job(shard)
        keys = read_key_map(staging, first, schema)
        made = [a for a in attempts if a.job is not None]
        taken: set[int] = set()
        answers = read_uris(staging, staging.folder(shard.id), ONLINE)  # None: not answered
        if answers and (counts_online(staging, shard) if online is None else online):
            # Answered online: the key was left unsettled by every attempt, so each held it.
            for uri in answers:
                for result in read_output_file(staging, uri, keys, taken, first):
                    # The tier its row records, read again from the same answer.
                    result = replace(result, tier=billed_tier(result.response, self._tier))
                    if final and result.outcome in UNSETTLED:  # the online call's own error
                        result = exhausted(result, len(made) + 1)
                    yield result, len(made) + 1, result.tier, online_day
        seen = {keys.keys[i] for i in taken}
        latest = len(made) - 1
        for index in range(latest, -1, -1):
            attempt = made[index]
            assert attempt.job is not None
            filler = CacheFill(staging, attempt.job) if fill else None
            day = None if attempt.status is None else day_of(attempt.status.created)
            for result in self.read(attempt, filler, schema):
                if result.key not in seen:
                    seen.add(result.key)
                    # Attempt i+1 holds exactly the keys attempt i left unsettled, and a finished
                    # attempt yields each of its keys: a key left unsettled by an earlier attempt
                    # is in the latest one, still running.
                    if result.outcome in UNSETTLED:
                        tries = latest + 1
                        result = exhausted(result, tries) if final else result
                        yield result, tries, BATCH_TIER, day
                    else:
                        yield result, index + 1, BATCH_TIER, day
        if final and len(seen) < len(keys):
            for key in keys.keys:
                if key not in seen:
                    missing = Result(key=key, error=MissingError(_NEVER_RUN, key=key))
                    yield exhausted(missing, len(attempts)), len(attempts), BATCH_TIER, None


def exhausted(result: Result, attempts: int) -> Result:
    """A finished shard's key still retryable or missing: ``exhausted``, its error kept as the
    ``ExhaustedError``'s ``last`` (the rest of the result as it was: a retryable line's usage)."""
    assert result.error is not None
    last = result.error
    error = ExhaustedError(
        f"no attempt is left for this key: its run tried it {attempts} time(s) and its last "
        f"attempt left it {result.outcome} ({type(last).__name__}, on .last)",
        key=result.key,
        last=last,
        attempts=attempts,
    )
    return replace(result, error=error)
