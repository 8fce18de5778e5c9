"""A run's jobs, from one listing: each attempt's job, its state and its twins, for one step.

A step of a run whose jobs carry the run's label (``Ledger.labelled``: every run started since
the label came) lists the run's jobs that have not ended **once** (``Vertex.list_run``: filtered
on the label and on state, every page), then resolves each attempt from that listing and from
records in GCS::

    PREFIX/RUN.s0.r1/job.json     the attempt's job (the identity protocol's record)
    PREFIX/RUN.s0.r1/ended.json   its ended status and output (directory or table), written
                                  create-only by the first ``advance`` that saw it ended

- A recorded job that is listed may still run (PAUSED and CANCELLING included): its state and
  output directory are the listing's.
- One that is not listed has ended (its ended record says how), or was created so recently that
  listing does not show it yet: one ``get`` tells, and an ended one is recorded, so no later step
  asks Vertex about it again.
- One that ``get`` does not find was deleted after it ended, before a step recorded it: the
  attempt has ended all the same (``GONE_STATE``), its output read from what it left in GCS
  and its other keys missing, to be submitted again (``RunJobs._gone``); no other shard is
  touched.
- An attempt with no record whose job is listed was created by a submitter that stopped before
  recording it; the job ``_job.submit.choose`` picks is the attempt's, as ``find`` says.
- Every other listed job of an attempt's id is a *twin* (a lost create answer and list lag, a
  short create outage): the step cancels it, and counts it live until it ends.

So a step costs one listing (one call per 100 live jobs), a ``get`` per recorded job that ended
since the previous ``advance``, and the creates and cancels it makes, whatever the number of
shards. The GCS records are read through ``_runs.records``: in a step, from one listing of the
shard folders and the run's progress cache, so that a record is read only when it changed; an
attempt staged with no job has its manifest read only when the step acts on it (``check``).
A run started before the label (its ledger of the first format) falls back to one list
of each attempt's id, as many calls as its steps made before, and finds twins in them too.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._cache.submission import cached_job, cached_status
from .._errors import InvalidRequestError
from .._gcs.staging import Folder, Staging
from .._job.find import choose, recorded_or_gone
from .._rules import is_job_name
from .._staged.manifest import MANIFEST, RECORD, Manifest, run_origin
from .._values import Job, Provider, Status
from .._vertex.jobs import ENDED_STATES, GONE_STATE, JobSpec, Vertex, state_name, status_of
from .ledger import Shard, attempt_id
from .records import Records
from .sink import output_of

if TYPE_CHECKING:
    from google.cloud.aiplatform_v1 import BatchPredictionJob as BatchJob

__all__ = ["ENDED", "Attempt", "RunJobs", "Twin"]

logger = logging.getLogger("vertexbatch")

ENDED = "ended.json"
_NOT_FOUND = 5  # google.rpc.Code: a deleted job's attempt ends with it (``RunJobs._gone``)
_ENDED_FORMAT = "vertexbatch-ended/1"


@dataclass(frozen=True, slots=True)
class Twin:
    """A listed job of an attempt's id that is not the attempt's job, and its state."""

    name: str
    state: str


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt of a shard as a step found it.

    Attributes:
        job / status: its job and status, both ``None`` while staged but not created.
        directory: the job's output directory, or a BigQuery-sink job's table (``bq://P.D.T``,
            ``_runs.sink.output_of``); ``""`` while it has none.
        recorded: ``job.json`` names the job (``False``: found in the listing only).
        twins: the id's other jobs that may still run: cancelled by ``advance``.
        checked: its manifest was read (``False``: staged, no job found, and not read yet;
            ``RunJobs.check`` reads it before a step acts on the attempt).
    """

    job: Job | None
    status: Status | None
    directory: str = ""
    recorded: bool = True
    twins: tuple[Twin, ...] = ()
    checked: bool = True

    @property
    def ended(self) -> bool:
        """The job will not run again: a PAUSED job has not ended (it may resume); a deleted
        one has (``GONE_STATE``)."""
        state = None if self.status is None else self.status.state
        return state is not None and (state in ENDED_STATES or state == GONE_STATE)


def _job(spec: JobSpec, name: str, model: str = "") -> Job:
    return Job(
        id=spec.id,
        name=name,
        provider=spec.provider,
        model=model or spec.model,
        input_uri=spec.input_uri,
        output_prefix=spec.output_prefix,
        keys=spec.keys,
        dest=spec.dest,
    )


def _directory(job: BatchJob) -> str:
    return output_of(job)  # a sink job's table (``_runs.sink``)


class RunJobs:
    """The jobs of one run for one step (or one results pass): listed once, on first need."""

    def __init__(
        self,
        vertex: Vertex,
        records: Records,
        run_id: str,
        provider: Provider,
        model: str,
        *,
        labelled: bool,
        record: bool,
        dest: str = "",
    ) -> None:
        """``records``: how the shards' records are read (``_runs.records``); ``record``: write
        the ended record of a job first seen ended (``advance`` only); ``dest``: the run's
        BigQuery dataset, where every attempt's job writes ("": GCS)."""
        self._vertex = vertex
        self._records = records
        self._staging = records.staging
        self._run = run_id
        self._provider = provider
        self._model = model
        self._labelled = labelled
        self._record = record
        self._listed: dict[str, list[BatchJob]] | None = None
        self._dest = dest

    def _listing(self) -> Mapping[str, list[BatchJob]]:
        """The run's jobs that have not ended, by display name (one listing per step)."""
        if self._listed is None:
            listed: dict[str, list[BatchJob]] = {}
            for job in self._vertex.list_run(self._run):
                listed.setdefault(str(job.display_name), []).append(job)
            self._listed = listed
        return self._listed

    def _spec(self, submission_id: str) -> JobSpec:
        folder = self._staging.folder(submission_id)
        return JobSpec(
            submission_id,
            self._provider,
            self._model,
            folder.input_uri,
            folder.output_prefix,
            0,
            dest=self._dest,
        )

    def leftovers(self, shards: Iterable[Shard], max_attempts: int) -> list[Twin]:
        """Listed jobs of finished shards' attempts: none should still run (a labelled run's
        twins that outlived their shard). A run of the first format lists nothing here."""
        if not self._labelled:
            return []
        listed = self._listing()
        found: list[Twin] = []
        for shard in shards:
            for attempt in range(max_attempts):
                submission_id = attempt_id(shard, attempt)
                spec = self._spec(submission_id)
                for job in listed.get(submission_id, []):
                    if spec.matches(job):
                        found.append(Twin(str(job.name), state_name(job)))
        return found

    def attempts(self, shard: Shard, max_attempts: int) -> list[Attempt]:
        """The shard's staged attempts in order, each with its job, status and twins.

        Raises:
            InvalidRequestError: an attempt's id holds rows this run did not stage (a plain
                submission under ``RUN.s0.r1``, say): never adopted, whatever its rows; or a
                record in its folder is damaged or names a job not created for it.
        """
        found: list[Attempt] = []
        for number in range(max_attempts):
            submission_id = attempt_id(shard, number)
            attempt = self._attempt(shard, number, submission_id)
            if attempt is None:
                break
            found.append(attempt)
            if attempt.job is None:  # a later attempt is staged only once this one has ended
                break
        return found

    def _manifest(self, shard: Shard, number: int, submission_id: str) -> Manifest | None:
        """The attempt's manifest, ``None`` if it is not staged; checked to be this run's."""
        raw = self._records.read(submission_id, MANIFEST)
        if raw is None:
            return None
        manifest = Manifest.from_json(raw, self._staging.folder(submission_id).uri(MANIFEST))
        if manifest.origin != run_origin(self._run):
            raise InvalidRequestError(
                f"id {submission_id!r}, which run {self._run!r} uses for attempt {number} of "
                f"shard {shard.id!r}, holds a submission this run did not stage: the run "
                "cannot go on until that id's folder is removed; nothing was adopted",
                field="id",
            )
        return manifest

    def check(self, shard: Shard, number: int) -> Attempt:
        """An attempt with no job found, its manifest now read: answered whole from the
        answer cache (ended), or still to create.

        Raises:
            InvalidRequestError: as ``attempts``.
        """
        submission_id = attempt_id(shard, number)
        manifest = self._manifest(shard, number, submission_id)
        if manifest is not None and not manifest.rows:
            job = cached_job(manifest.spec(submission_id, self._staging.folder(submission_id)))
            return Attempt(job, cached_status(job))
        return Attempt(None, None)

    def _attempt(self, shard: Shard, number: int, submission_id: str) -> Attempt | None:
        records = self._records
        folder = self._staging.folder(submission_id)
        manifest: Manifest | None = None
        if not records.lazy:
            manifest = self._manifest(shard, number, submission_id)
            if manifest is None:
                return None
        elif not records.listed(submission_id, MANIFEST):
            return None
        made_for = self._spec(submission_id).matches  # display name, input and output
        if self._labelled:
            listed = [j for j in self._listing().get(submission_id, []) if made_for(j)]
            ended = _read_ended(records, folder, submission_id)
        else:
            listed = [j for j in self._vertex.list_for_id(submission_id) if made_for(j)]
            ended = None
        record = records.read(submission_id, RECORD)
        if manifest is None:
            if record is None and ended is None and not listed:
                # Staged, no job found: its manifest is read only if the step acts on it.
                return Attempt(None, None, checked=False)
            manifest = self._manifest(shard, number, submission_id)
            if manifest is None:  # removed since it was listed
                return None
        spec = manifest.spec(submission_id, folder)
        if not manifest.rows:  # every key answered from the answer cache: no job
            job = cached_job(spec)
            return Attempt(job, cached_status(job))
        if ended is not None:
            name, status, directory = ended
            return Attempt(_job(spec, name), status, directory, True, _twins(listed, name))
        if record is None:
            if not listed:
                return Attempt(None, None)
            chosen = choose(listed)
            return Attempt(
                spec.to_job(chosen),
                status_of(chosen),
                _directory(chosen),
                False,
                _twins(listed, str(chosen.name)),
            )
        name = _recorded_name(record, folder.uri(RECORD))
        found = next((j for j in listed if j.name == name), None)
        if found is None:  # ended, or so new that listing does not show it yet: ask once
            found = recorded_or_gone(self._vertex, name, spec, folder.uri(RECORD))
            if found is None:
                return self._gone(spec, name, listed)
            if self._labelled and self._record and state_name(found) in ENDED_STATES:
                _write_ended(self._staging, submission_id, found)
        return Attempt(
            spec.to_job(found), status_of(found), _directory(found), True, _twins(listed, name)
        )

    def _gone(self, spec: JobSpec, name: str, listed: list[BatchJob]) -> Attempt:
        """The attempt of a recorded job Vertex no longer knows: deleted after it ended, before
        a step recorded how. It has ended (``GONE_STATE``, its counts unknown); its output is
        what it left under the attempt's GCS output prefix (every directory there, each key's
        first line winning: a twin's answers are to the same staged rows), and every other key
        is missing, so the next step submits them again. A BigQuery sink's table is named by
        the job alone: with the job gone, its keys are submitted again. Nothing is recorded,
        so each step asks Vertex once more until the shard is finished."""
        logger.warning(
            "run %s: job %s of attempt %s no longer exists (deleted once it ended); reading "
            "what it left in GCS, its other keys are submitted again",
            self._run,
            name,
            spec.id,
        )
        status = Status(
            state=GONE_STATE,
            terminal=True,
            error_code=_NOT_FOUND,
            error_message=f"job {name} was deleted before a step recorded how it ended",
        )
        directory = "" if self._dest else spec.output_prefix
        return Attempt(_job(spec, name), status, directory, True, _twins(listed, name))


def _twins(listed: list[BatchJob], chosen: str) -> tuple[Twin, ...]:
    # CANCELLING counts: the job has not ended, and may yet end SUCCEEDED and be paid.
    return tuple(
        Twin(str(j.name), state)
        for j in listed
        if j.name != chosen and (state := state_name(j)) not in ENDED_STATES
    )


def _recorded_name(record: Any, where: str) -> str:
    name = record.get("name") if isinstance(record, dict) else None
    if not isinstance(name, str) or not is_job_name(name):
        raise InvalidRequestError(
            f"{where} is not a vertexbatch job record (no job resource name in it): it was "
            "damaged or edited; delete it to let the next submit record the id's job again",
            field="staging",
        )
    return name


def _write_ended(staging: Staging, submission_id: str, job: BatchJob) -> None:
    """Record an ended job's status and output directory, create-only (they never change)."""
    status = status_of(job)
    record = {
        "format": _ENDED_FORMAT,
        "name": str(job.name),
        "state": status.state,
        "succeeded": status.succeeded,
        "failed": status.failed,
        "incomplete": status.incomplete,
        "error_code": status.error_code,
        "error_message": status.error_message,
        "created": status.created.isoformat() if status.created is not None else "",
        "directory": _directory(job),
    }
    staging.create_json(staging.folder(submission_id).name(ENDED), record)


def _read_ended(
    records: Records, folder: Folder, submission_id: str
) -> tuple[str, Status, str] | None:
    """The attempt's ended job, status and output directory, ``None`` while none is recorded."""
    from datetime import datetime

    data = records.read(submission_id, ENDED)
    if data is None:
        return None
    ints = ("succeeded", "failed", "incomplete", "error_code")
    strings = ("name", "state", "error_message", "created", "directory")
    if (
        not isinstance(data, dict)
        or data.get("format") != _ENDED_FORMAT
        or not all(type(data.get(k)) is int for k in ints)
        or not all(isinstance(data.get(k), str) for k in strings)
        or not is_job_name(data["name"])
        or data["state"] not in ENDED_STATES
    ):
        raise InvalidRequestError(
            f"{folder.uri(ENDED)} is not a vertexbatch record of an ended job: it was damaged "
            "or edited; delete it to have the next step ask Vertex again",
            field="staging",
        )
    try:
        created = datetime.fromisoformat(data["created"]) if data["created"] else None
    except ValueError as exc:
        raise InvalidRequestError(
            f"{folder.uri(ENDED)} holds a creation time that is not ISO 8601: it was damaged "
            "or edited; delete it to have the next step ask Vertex again",
            field="staging",
        ) from exc
    status = Status(
        state=data["state"],
        terminal=True,
        succeeded=data["succeeded"],
        failed=data["failed"],
        incomplete=data["incomplete"],
        error_code=data["error_code"],
        error_message=data["error_message"],
        created=created,
        # A sink job's "directory" is its table (``_runs.sink``), as status_of would say it.
        output_table=data["directory"] if data["directory"].startswith("bq://") else "",
    )
    return data["name"], status, data["directory"]
