"""BigQuery sources and sinks of a create request, and their JSON on the job (pure).

`inputConfig: {instancesFormat: "bigquery", bigquerySource: {inputUri: "bq://P.D.T"}}` and
`outputConfig: {predictionsFormat: "bigquery", bigqueryDestination: {outputUri: "bq://P.D"}}`
(or `bq://P.D.T`, or `bq://P`), as the wire reference (§9b) has them. BigQuery input is not
served on the `global` endpoint (GCS input is). The job reports
`outputInfo.bigqueryOutputDataset` (`bq://P.D`) and `outputInfo.bigqueryOutputTable` (the
table's name alone), as the BatchPredictionJob reference's OutputInfo describes them.

The three forms of `bigqueryDestination.outputUri` (BigQueryDestination, v1 REST reference,
https://docs.cloud.google.com/vertex-ai/docs/reference/rest/v1/BigQueryDestination, read
2026-12-07: "When only the project is specified, the Dataset and Table is created. When the full
table reference is specified, the Dataset must exist and table must not exist."):

- `bq://P`: the job creates a dataset `prediction_<model-display-name>_<job-create-time>`, the
  name made BigQuery-dataset-name compatible (special characters become underscores) and the
  time `YYYY_MM_DDThh_mm_ss_sssZ` (OutputConfig.bigquery_destination, the same reference and
  google-cloud-aiplatform's `BatchPredictionJob.OutputConfig` docstring); a publisher model has
  no display name of its own, so the stack uses the model id as created
  (`gemini-2.5-flash@001` → `gemini_2_5_flash_001`: UNCONFIRMED), and names the table in it as
  for a dataset (`JobOptions.bigquery_table_name`).
- `bq://P.D`: the job creates a table of its own naming in D.
- `bq://P.D.T`: T must not exist; the stack creates it when the job starts and fails the job
  (code 9) if it already exists (the code and words Vertex uses there are UNCONFIRMED).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from vertexbatch.emulator._errors import bad_request

__all__ = [
    "TableRef",
    "bigquery_destination",
    "bigquery_source",
    "config_json",
    "output_dataset",
    "output_info",
    "output_table_name",
    "parse_uri",
]

# BigQuery names: a project id (lowercase letters, digits and dashes, after `domain:` for a
# domain-scoped project), a dataset (letters, digits, underscores), a table (dashes too).
_URI = re.compile(
    r"^bq://((?:[a-z0-9.-]+:)?[a-z0-9][a-z0-9-]*)(?:\.(\w{1,1024})(?:\.([\w-]{1,1024}))?)?$"
)
_NOT_DATASET_NAME = re.compile(r"\W")


@dataclass(frozen=True, slots=True)
class TableRef:
    """`bq://project[.dataset[.table]]`, split (`dataset` "" for a project alone)."""

    project: str
    dataset: str
    table: str | None

    @property
    def dataset_id(self) -> str:
        """`project.dataset`."""
        assert self.dataset
        return f"{self.project}.{self.dataset}"

    @property
    def dataset_uri(self) -> str:
        """`bq://project.dataset`."""
        return f"bq://{self.dataset_id}"

    def table_id(self, table: str | None = None) -> str:
        """`project.dataset.table` (the given table, else this one's)."""
        name = table or self.table
        assert name is not None
        return f"{self.dataset_id}.{name}"


def parse_uri(uri: str) -> TableRef | None:
    """Split a `bq://` URI, None when it is not one."""
    match = _URI.match(uri)
    if match is None:
        return None
    return TableRef(match.group(1), match.group(2) or "", match.group(3))


def bigquery_source(input_config: Any, location: str) -> str | None:
    """The `bq://P.D.T` input URI when the input is BigQuery, None when it is not.

    Raises:
        ApiError: 400 for a BigQuery input that names no table, a format that is not
            "bigquery", or the `global` location.
    """
    if not isinstance(input_config, dict):
        return None
    source = input_config.get("bigquerySource")
    if source is None and input_config.get("instancesFormat") != "bigquery":
        return None
    uri = source.get("inputUri") if isinstance(source, dict) else None
    if not isinstance(uri, str) or not uri:
        raise bad_request("BatchPredictionJob.input_config.bigquery_source.input_uri is required.")
    ref = parse_uri(uri)
    if ref is None or not ref.dataset or ref.table is None:
        raise bad_request(
            f"Invalid BigQuery input URI {uri!r}: expected bq://projectId.bqDatasetId.bqTableId."
        )
    if input_config.get("instancesFormat") != "bigquery":
        raise bad_request('A BigQuery source needs instances_format "bigquery".')
    if location == "global":
        raise bad_request(
            "BigQuery input is not supported in the global location; use a regional location."
        )
    return uri


def bigquery_destination(output_config: Any) -> str | None:
    """The `bq://P.D` or `bq://P.D.T` output URI when the output is BigQuery, else None.

    Raises:
        ApiError: 400 for a BigQuery output that names no dataset or a format that is not
            "bigquery".
    """
    if not isinstance(output_config, dict):
        return None
    destination = output_config.get("bigqueryDestination")
    if destination is None and output_config.get("predictionsFormat") != "bigquery":
        return None
    uri = destination.get("outputUri") if isinstance(destination, dict) else None
    if not isinstance(uri, str) or not uri:
        raise bad_request(
            "BatchPredictionJob.output_config.bigquery_destination.output_uri is required."
        )
    if parse_uri(uri) is None:
        raise bad_request(
            f"Invalid BigQuery output URI {uri!r}: expected bq://projectId, "
            "bq://projectId.bqDatasetId or bq://projectId.bqDatasetId.bqTableId."
        )
    if output_config.get("predictionsFormat") != "bigquery":
        raise bad_request('A BigQuery destination needs predictions_format "bigquery".')
    return uri


def output_dataset(destination: str, model_id: str, create_time: datetime) -> TableRef:
    """The destination with its dataset: the URI's own, or for `bq://P` the one the job creates,
    `prediction_<model>_<create time YYYY_MM_DDThh_mm_ss_sssZ>`."""
    ref = parse_uri(destination)
    assert ref is not None
    if ref.dataset:
        return ref
    model = _NOT_DATASET_NAME.sub("_", model_id)
    moment = create_time.strftime("%Y_%m_%dT%H_%M_%S_") + f"{create_time.microsecond // 1000:03d}Z"
    return TableRef(ref.project, f"prediction_{model}_{moment}", None)


def output_table_name(destination: str, create_time: datetime, naming: str) -> str:
    """The output table's name: the URI's table, else `naming` formatted with the create time."""
    ref = parse_uri(destination)
    assert ref is not None
    if ref.table is not None:
        return ref.table
    return naming.format(create_time=create_time)


def output_info(
    destination: str, model_id: str, create_time: datetime, naming: str
) -> dict[str, str]:
    """The job's `outputInfo` for a BigQuery destination."""
    return {
        "bigqueryOutputDataset": output_dataset(destination, model_id, create_time).dataset_uri,
        "bigqueryOutputTable": output_table_name(destination, create_time, naming),
    }


def config_json(spec: Any) -> dict[str, Any]:
    """The job's `inputConfig` and `outputConfig` fields for the BigQuery sides of a JobSpec."""
    out: dict[str, Any] = {}
    if spec.bigquery_source:
        out["inputConfig"] = {
            "instancesFormat": "bigquery",
            "bigquerySource": {"inputUri": spec.bigquery_source},
        }
    if spec.bigquery_destination:
        out["outputConfig"] = {
            "predictionsFormat": "bigquery",
            "bigqueryDestination": {"outputUri": spec.bigquery_destination},
        }
    return out
