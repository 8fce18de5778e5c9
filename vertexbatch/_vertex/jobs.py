"""Vertex job control: create, get, list, cancel through ``aiplatform_v1.JobServiceClient``.

Every call but create goes under the retry policy; create is never retried here, because a
lost create response would make a second job: the identity protocol lists before each attempt.
A job is created with a GCS or a BigQuery ``outputConfig``. ``JobSpec`` is what a job of an id
must look like (its input, output and sink, its controls), against which a listed job is
adopted; ``output_table`` is the table a sink job reports.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from google.api_core import exceptions as api_exceptions

from .._bigquery.dest import parse_dest
from .._errors import InvalidRequestError
from .._retry import RetryPolicy
from .._rules import id_label, model_of_job, publisher_path
from .._values import Job, Provider, Status
from .controls import (
    ID_LABEL,
    MARK_LABEL,
    NO_CONTROLS,
    NONCE_LABEL,
    RESERVED_LABELS,
    RUN_LABEL,
    Controls,
)

if TYPE_CHECKING:
    # aiplatform_v1 takes most of a second to import: its job service alone (``job_service``)
    # is imported where a job is built or read, never by importing this.
    from google.cloud import aiplatform_v1
    from google.cloud.aiplatform_v1 import BatchPredictionJob as BatchJob

__all__ = [
    "ENDED_STATES",
    "GONE_STATE",
    "TERMINAL_STATES",
    "JobSpec",
    "Vertex",
    "controls_of",
    "output_of",
    "output_table",
    "status_of",
]

logger = logging.getLogger("vertexbatch")

# vertexbatch's own labels (``_vertex.controls``): MARK_LABEL marks a job as ours, ID_LABEL carries
# the submission id, NONCE_LABEL one create attempt's fresh value, RUN_LABEL a run's id.

TERMINAL_STATES = frozenset(
    {
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_PARTIALLY_SUCCEEDED",
        "JOB_STATE_FAILED",
        "JOB_STATE_CANCELLED",
        "JOB_STATE_EXPIRED",
        "JOB_STATE_PAUSED",
    }
)
# The states a job never leaves: it will not run again. PAUSED is not one (it can resume).
ENDED_STATES = TERMINAL_STATES - {"JOB_STATE_PAUSED"}
# vertexbatch's word for the state of a recorded job Vertex no longer knows (a run's attempt):
# deleted, which Vertex allows only once a job has ended. Never Vertex's, never sent to it.
GONE_STATE = "JOB_STATE_DELETED"
# The states of a job that may still run: a twin in one of them is cancelled. PAUSED is one,
# although ``status`` calls it terminal (it makes no progress on its own): it can be resumed.
_LIVE_STATES = frozenset(
    {
        "JOB_STATE_PAUSED",
        "JOB_STATE_QUEUED",
        "JOB_STATE_PENDING",
        "JOB_STATE_RUNNING",
        "JOB_STATE_UPDATING",
        "JOB_STATE_UNSPECIFIED",
    }
)


@dataclass(frozen=True, slots=True)
class JobSpec:
    """What a job of a submission id must look like."""

    id: str
    provider: Provider
    model: str
    input_uri: str
    output_prefix: str
    keys: int
    controls: Controls = NO_CONTROLS
    # The BigQuery sink (``bq://P.D[.T]``, checked); "" for the GCS output prefix.
    dest: str = ""
    # Every part of the input, in order (``input_uri`` is the first); () when not known (a
    # run's listing, before any manifest is read): then the first and the folder identify it.
    input_uris: tuple[str, ...] = ()

    @property
    def uris(self) -> list[str]:
        """The input URIs a job of this spec is created with."""
        return list(self.input_uris or (self.input_uri,))

    def matches(self, job: BatchJob) -> bool:
        """Whether a listed job was created for this spec (display name, input, output and
        job controls)."""
        return self.writes_here(job) and controls_of(job) == self.controls

    def writes_here(self, job: BatchJob) -> bool:
        """Whether a job has this spec's display name, input and output (its controls aside)."""
        return (
            job.display_name == self.id
            and reads_input(job, self)
            and output_of(job) == (self.dest or self.output_prefix.rstrip("/"))
        )

    def to_job(self, job: BatchJob) -> Job:
        return Job(
            id=self.id,
            name=job.name,
            provider=self.provider,
            model=model_of_job(job.model, self.model),
            input_uri=self.input_uri,
            output_prefix=self.output_prefix,
            keys=self.keys,
            dest=self.dest,  # as given: the table Vertex names is Status.output_table
        )


def output_of(job: BatchJob) -> str:
    """Where a job writes: its BigQuery sink's URI, else its GCS output prefix."""
    bigquery = str(job.output_config.bigquery_destination.output_uri)
    return bigquery or str(job.output_config.gcs_destination.output_uri_prefix).rstrip("/")


def output_table(job: BatchJob) -> str:
    """``bq://P.D.T`` of the table a BigQuery-sink job writes, once Vertex reports it, else ""."""
    table = str(job.output_info.bigquery_output_table)
    given = str(job.output_config.bigquery_destination.output_uri)
    if not table or not given:
        return ""
    try:
        if "." in table:  # a full name (``P.D.T`` or ``bq://P.D.T``), should Vertex give one
            return parse_dest(f"bq://{table.removeprefix('bq://')}", "outputInfo").uri
        dataset = str(job.output_info.bigquery_output_dataset) or parse_dest(given).dataset_uri
        return parse_dest(f"{dataset}.{table}", "outputInfo").uri
    except InvalidRequestError:  # a name BigQuery would not take: not one to read
        logger.warning("job %s reports an output table that is not a BigQuery name", job.name)
        return ""


def controls_of(job: BatchJob) -> Controls:
    """A job's controls as Vertex holds them: its labels but vertexbatch's own, its CMEK key and
    its service account."""
    labels = tuple(sorted((k, v) for k, v in job.labels.items() if k not in RESERVED_LABELS))
    return Controls(
        labels=labels,
        kms_key=str(job.encryption_spec.kms_key_name),
        service_account=str(job.service_account),
    )


def reads_input(job: BatchJob, spec: JobSpec) -> bool:
    """Whether a job reads this spec's input: exactly its parts when they are known, else parts
    of its folder, the first being ``input_uri`` (an id staged by an older version: only that)."""
    uris = list(job.input_config.gcs_source.uris)
    if spec.input_uris:
        return uris == list(spec.input_uris)
    folder = spec.input_uri.rsplit("/", 1)[0] + "/"
    return bool(uris) and uris[0] == spec.input_uri and all(u.startswith(folder) for u in uris)


def state_name(job: BatchJob) -> str:
    from .._deferred.aiplatform import job_service

    return str(job_service().JobState(job.state).name)


def is_live(job: BatchJob) -> bool:
    """Whether a job may still run (and so must be cancelled if it is a twin)."""
    return state_name(job) in _LIVE_STATES


def succeeded(job: BatchJob) -> bool:
    """Whether a job ended with its rows answered (wholly or partly)."""
    return state_name(job) in ("JOB_STATE_SUCCEEDED", "JOB_STATE_PARTIALLY_SUCCEEDED")


def status_of(job: BatchJob) -> Status:
    """The ``Status`` of a Vertex job."""
    state = state_name(job)
    stats = job.completion_stats
    has_stats = "completion_stats" in job
    return Status(
        state=state,
        terminal=state in TERMINAL_STATES,
        succeeded=int(stats.successful_count) if has_stats else -1,
        failed=int(stats.failed_count) if has_stats else -1,
        incomplete=int(stats.incomplete_count) if has_stats else -1,
        error_code=int(job.error.code) if "error" in job else 0,
        error_message=str(job.error.message) if "error" in job else "",
        created=_plain(job.create_time) if "create_time" in job else None,
        output_table=output_table(job),
    )


def _plain(moment: datetime) -> datetime:
    """A plain aware datetime from proto-plus's nanosecond subclass."""
    return datetime.fromtimestamp(moment.timestamp(), tz=UTC)


def _output_config(spec: JobSpec) -> aiplatform_v1.BatchPredictionJob.OutputConfig:
    """The job's ``outputConfig``: its BigQuery sink, else the id's GCS output prefix."""
    from .._deferred.aiplatform import job_service

    service = job_service()
    config = service.BatchPredictionJob.OutputConfig
    if spec.dest:
        return config(
            predictions_format="bigquery",
            bigquery_destination=service.BigQueryDestination(output_uri=spec.dest),
        )
    return config(
        predictions_format="jsonl",
        gcs_destination=service.GcsDestination(output_uri_prefix=spec.output_prefix),
    )


class Vertex:
    """The job-control calls vertexbatch makes, on one project and location."""

    def __init__(
        self,
        client: aiplatform_v1.JobServiceClient,
        project: str,
        location: str,
        policy: RetryPolicy,
    ) -> None:
        self._client = client
        self.endpoint: str = str(client.api_endpoint)
        self.location = location
        self.parent = f"projects/{project}/locations/{location}"
        self._policy = policy
        self._timeout = policy.timeout  # per call: a stalled call ends, and is retried

    def create(
        self, spec: JobSpec, labels: Mapping[str, str] | None = None, nonce: str | None = None
    ) -> BatchJob:
        """Create the job once; no retry (see the module docstring).

        ``nonce`` (a label value, fresh for each attempt) goes on the job as ``NONCE_LABEL``.
        """
        from .._deferred.aiplatform import job_service

        service = job_service()
        job = service.BatchPredictionJob(
            display_name=spec.id,
            model=publisher_path(spec.model, spec.provider),
            input_config=service.BatchPredictionJob.InputConfig(
                instances_format="jsonl",
                gcs_source=service.GcsSource(uris=spec.uris),
            ),
            output_config=_output_config(spec),
            labels={
                **spec.controls.label_map(),
                MARK_LABEL: "1",
                ID_LABEL: id_label(spec.id),
                **(labels or {}),
                **({NONCE_LABEL: nonce} if nonce is not None else {}),
            },
        )
        if spec.controls.kms_key:
            job.encryption_spec = service.EncryptionSpec(kms_key_name=spec.controls.kms_key)
        if spec.controls.service_account:
            job.service_account = spec.controls.service_account
        created: BatchJob = self._client.create_batch_prediction_job(
            parent=self.parent, batch_prediction_job=job, retry=None, timeout=self._timeout
        )
        return created

    def get(self, name: str) -> BatchJob:
        """Read a job; ``NotFound`` propagates."""
        job: BatchJob = self._policy.call(
            f"get {name}",
            lambda: self._client.get_batch_prediction_job(
                name=name, retry=None, timeout=self._timeout
            ),
        )
        return job

    def list_for_id(self, submission_id: str, *, once: bool = False) -> list[BatchJob]:
        """Every job with the id's display name and label, all pages, in listed order.

        ``once``: one attempt, for a caller whose own retry policy makes the next (retries
        nested in retries would make attempts squared).
        """
        query = f'display_name="{submission_id}" AND labels.{ID_LABEL}="{id_label(submission_id)}"'

        def listing() -> list[BatchJob]:
            pager = self._client.list_batch_prediction_jobs(
                request={"parent": self.parent, "filter": query, "page_size": 100},
                retry=None,
                timeout=self._timeout,
            )
            return [j for j in pager if j.display_name == submission_id]

        if once:
            return listing()
        return self._policy.call(f"list jobs of {submission_id}", listing)

    def list_run(self, run_id: str) -> list[BatchJob]:
        """Every job of the run that has not ended (PAUSED and CANCELLING included), all pages.

        Filtered on the run's label and on state, so the pages are bounded by the run's live
        jobs, not by every job it ever made.
        """
        ended = " AND ".join(f'state!="{state}"' for state in sorted(ENDED_STATES))
        query = f'labels.{RUN_LABEL}="{id_label(run_id)}" AND {ended}'

        def listing() -> list[BatchJob]:
            pager = self._client.list_batch_prediction_jobs(
                request={"parent": self.parent, "filter": query, "page_size": 100},
                retry=None,
                timeout=self._timeout,
            )
            return list(pager)

        return self._policy.call(f"list jobs of run {run_id}", listing)

    def list_one(self) -> str | None:
        """List the location's jobs, one page of one job: whether listing is allowed at all.

        Returns the listed job's resource name (it carries the project number), if any.
        """

        def listing() -> str | None:
            page = self._client.list_batch_prediction_jobs(
                request={"parent": self.parent, "page_size": 1}, retry=None, timeout=self._timeout
            )
            return next((str(job.name) for job in page.batch_prediction_jobs), None)

        return self._policy.call("list jobs", listing)

    def cancel(self, name: str) -> None:
        """Ask Vertex to cancel; a job that has ended is not an error (a PAUSED one may resume:
        a refused cancel of it is raised)."""

        def cancel() -> None:
            self._client.cancel_batch_prediction_job(name=name, retry=None, timeout=self._timeout)

        try:
            self._policy.call(f"cancel {name}", cancel)
        except (api_exceptions.FailedPrecondition, api_exceptions.BadRequest):
            # Vertex answers 400 FAILED_PRECONDITION for a finished job; over REST only the HTTP
            # code survives, so ask the job itself whether that is why.
            if state_name(self.get(name)) not in ENDED_STATES:
                raise
            logger.info("job %s was already finished; nothing to cancel", name)
