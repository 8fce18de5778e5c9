"""One job of the store: its record, its states, and its JSON form as the REST service returns
it (string enums, int64 strings, RFC3339 µs timestamps, zero values omitted)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from vertexbatch.emulator._bq_spec import config_json, output_info
from vertexbatch.emulator._faults import Hold, JobFault, LateCancel
from vertexbatch.emulator._filter import JobView
from vertexbatch.emulator._model import rfc3339
from vertexbatch.emulator._options import JobOptions
from vertexbatch.emulator._spec import JobSpec

__all__ = [
    "CANCELLING",
    "PAUSED",
    "PENDING",
    "QUEUED",
    "RUNNING",
    "TERMINAL",
    "JobRecord",
]

QUEUED = "JOB_STATE_QUEUED"
PENDING = "JOB_STATE_PENDING"
RUNNING = "JOB_STATE_RUNNING"
PAUSED = "JOB_STATE_PAUSED"
CANCELLING = "JOB_STATE_CANCELLING"
TERMINAL = frozenset(
    {
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_FAILED",
        "JOB_STATE_CANCELLED",
        "JOB_STATE_EXPIRED",
        "JOB_STATE_PARTIALLY_SUCCEEDED",
    }
)


@dataclass(slots=True)
class JobRecord:
    """One job; mutable fields change only under the store's Condition."""

    seq: int
    job_id: str
    name: str
    location: str
    spec: JobSpec
    create_time: datetime
    created_at: float  # time.monotonic() at creation, for the expiry timer
    options: JobOptions
    hold: Hold | None
    fault: JobFault | None
    list_hidden: int
    late_cancel: LateCancel | None = None
    has_slot: bool = False  # a Claude job in "queue" mode that holds one of the concurrent slots
    state: str = PENDING
    update_time: datetime = field(default_factory=lambda: datetime.now(UTC))
    start_time: datetime | None = None
    end_time: datetime | None = None
    error: tuple[int, str] | None = None
    show_output_info: bool = False
    show_stats: bool = False
    successful: int = 0
    failed: int = 0
    incomplete: int = 0
    cancel_requested: bool = False
    released: bool = False

    @property
    def output_dir(self) -> str:
        """`<outputUriPrefix>/prediction-model-<time>`: createTime moved by the job's
        `output_time_offset` (about 2 s earlier by default, as real Vertex names it)."""
        prefix = self.spec.output_prefix.rstrip("/")
        moment = self.create_time + timedelta(seconds=self.options.output_time_offset)
        return f"{prefix}/prediction-model-{rfc3339(moment)}"

    @property
    def terminal(self) -> bool:
        """Whether the job reached a terminal state."""
        return self.state in TERMINAL

    def view(self) -> JobView:
        """The fields a list filter reads."""
        return JobView(
            display_name=self.spec.display_name,
            state=self.state,
            labels=self.spec.labels,
            create_time=self.create_time,
            update_time=self.update_time,
            model_display_name=self.spec.model_id.split("@", 1)[0],
        )

    def to_json(self) -> dict[str, Any]:
        """The BatchPredictionJob as the REST service returns it."""
        spec = self.spec
        out: dict[str, Any] = {
            "name": self.name,
            "displayName": spec.display_name,
            "model": spec.model,
            "inputConfig": {
                "instancesFormat": spec.instances_format,
                "gcsSource": {"uris": list(spec.input_uris)},
            },
            "outputConfig": {
                "predictionsFormat": spec.predictions_format,
                "gcsDestination": {"outputUriPrefix": spec.output_prefix},
            },
        }
        if spec.instance_config:
            out["instanceConfig"] = dict(spec.instance_config)
        if spec.model_parameters is not None:
            out["modelParameters"] = spec.model_parameters
        out.update(config_json(spec))
        if self.show_output_info and spec.bigquery_destination:
            naming = self.options.bigquery_table_name
            out["outputInfo"] = output_info(
                spec.bigquery_destination, spec.model_id, self.create_time, naming
            )
        elif self.show_output_info:
            out["outputInfo"] = {"gcsOutputDirectory": self.output_dir}
        out["state"] = self.state
        if self.error is not None:
            out["error"] = {"code": self.error[0], "message": self.error[1]}
        if self.show_stats:
            counts = (
                ("successfulCount", self.successful),
                ("failedCount", self.failed),
                ("incompleteCount", self.incomplete),
            )
            out["completionStats"] = {k: str(v) for k, v in counts if v}
        out["createTime"] = rfc3339(self.create_time)
        if self.start_time is not None:
            out["startTime"] = rfc3339(self.start_time)
        if self.end_time is not None:
            out["endTime"] = rfc3339(self.end_time)
        out["updateTime"] = rfc3339(self.update_time)
        if spec.labels:
            out["labels"] = dict(spec.labels)
        if spec.kms_key_name:
            out["encryptionSpec"] = {"kmsKeyName": spec.kms_key_name}
        if spec.service_account:
            out["serviceAccount"] = spec.service_account
        out["modelVersionId"] = "1"
        return out
