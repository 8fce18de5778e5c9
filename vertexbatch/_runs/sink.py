"""A run's BigQuery sink: a dataset only, recorded in the ledger, and its attempts' tables read.

A run with ``dest="bq://PROJECT.DATASET"`` stages each shard with that sink (its manifest says
so, as a submission's does), and every attempt's job, ``RUN.sN`` and each ``RUN.sN.rK``, writes
a table of its own in the dataset, Vertex naming it. A run never takes a table: attempts of one
shard answer the same keys, so one shared table would mix their rows under the same ids, and a
resubmission writes a new table in the dataset anyway (``_job.submit.sink_of_resubmission``).

The ledger records the sink, so ``open_run`` (a scheduler's advancer that holds no state) reads
and advances the run without being told it, and the run started again under its id with
another sink is refused. An attempt's output is where its job wrote: its GCS output directory,
or for a sink job the ``bq://P.D.T`` table Vertex reports (``output_of``); that string is what
a step keeps in ``Attempt.directory`` and the ended record, and ``read_attempt`` reads either.
The online fallback's answers stay in the shard's GCS folder (``online.jsonl``) for both: a
run's results read them first, then the attempts' tables.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from .._bigquery.dest import SCHEME, parse_dest
from .._bigquery.read import BigQueryReader, check_extra
from .._cache.fill import CacheFill
from .._errors import InvalidRequestError
from .._gcs.staging import Staging
from .._job.results import read_results
from .._observe.metrics import SILENT
from .._schemas.check import Schema
from .._values import Job, Result, Status
from .._vertex.jobs import output_table

if TYPE_CHECKING:
    from google.cloud.aiplatform_v1 import BatchPredictionJob as BatchJob

__all__ = ["check_run_dest", "other_sink", "output_of", "read_attempt"]


def check_run_dest(dest: str) -> str:
    """The run's sink (``dest`` already checked by ``check_dest``; "" for GCS): a dataset.

    Raises:
        InvalidRequestError: ``dest`` names a table (``field="dest"``), or the ``bigquery``
            extra a run's results need is missing.
    """
    if not dest:
        return ""
    sink = parse_dest(dest)
    if sink.table:
        raise InvalidRequestError(
            f"a run writes each shard's attempts to tables of their own, so dest must name a "
            f"dataset (bq://PROJECT.DATASET), not the table {dest!r}: use {sink.dataset_uri!r}",
            field="dest",
        )
    check_extra()
    return sink.uri


def _sink(dest: str) -> str:
    return f"dest {dest!r}" if dest else "the GCS output prefix (no dest)"


def other_sink(run_id: str, staged: str, given: str) -> str:
    """Why a run started again under its id with another sink is refused."""
    return (
        f"run {run_id!r} was started writing to {_sink(staged)}, not {_sink(given)}: rejoin it "
        "with the sink it started with, or use a new run id"
    )


def output_of(job: BatchJob) -> str:
    """Where a job wrote its output: the BigQuery table it reports (``bq://P.D.T``), else its
    GCS output directory; "" while it has none."""
    return output_table(job) or str(job.output_info.gcs_output_directory)


def read_attempt(
    staging: Staging,
    bigquery: BigQueryReader | None,
    job: Job,
    status: Status,
    output: str,
    fill: CacheFill | None = None,
    schema: Schema | None = None,
) -> Iterator[Result]:
    """An attempt's results (silently) from its ``output`` (``output_of``): a GCS directory or
    a BigQuery table; ``schema``: a reader's ``schema=`` (``_job.results.read_results``)."""
    if output.startswith(SCHEME):
        return read_results(
            staging, job, status, "", SILENT, fill, table=output, bigquery=bigquery, schema=schema
        )
    return read_results(staging, job, status, output, SILENT, fill, schema=schema)
