"""The keywords of a submission, written once, and the frozen options built from them.

Every entry point (``submit_*``, ``plan_*``, ``run_*`` and their ``client.aio`` twins) takes
``**options: Unpack[...]`` of one of these ``TypedDict``s; ``SubmitOptions.of`` checks the
names (a ``TypedDict`` is not checked at run time) and builds the one value the operations of
``_operations`` are handed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from .._bigquery.dest import check_dest
from .._bigquery.read import check_extra
from .._errors import InvalidRequestError
from .._observe.progress import ProgressCallback, check_progress
from .._plans.budget import check_budget
from .._plans.prices import Price
from .._schemas.check import Schema, schema_of
from .._vertex.controls import Controls, check_controls
from .canary import check_canary

if TYPE_CHECKING:
    from pydantic import BaseModel

    from .._runs.tasks import Task

__all__ = ["PlanKeywords", "RunKeywords", "SubmitKeywords", "SubmitOptions", "checked"]


class SubmitKeywords(TypedDict, total=False):
    """The keywords every submission takes (``submit_*``, ``plan_*``, ``run_*`` and their
    ``client.aio`` twins), written once: the methods take ``**options: Unpack[...]`` of this.

    ``dedupe`` (default ``False``): equal requests staged and paid once. ``cache`` (``False``):
    the answer cache asked first, its entries younger than ``cache_ttl`` (``None``: any age).
    ``schema`` (``None``): a pydantic model class or a JSON schema (a dict) every answer must
    follow, written into each request in its provider's form; ``Result.parsed`` holds the
    validated answer, and one that breaks it is a ``SchemaError`` (docs/structured-outputs.md).

    Job controls (docs/operations.md, "Job controls"), checked against Vertex's rules before any
    cloud call and part of the id's identity: ``labels`` (``None``), the job's own labels beside
    vertexbatch's; ``kms_key`` (``None``), a Cloud KMS key in the client's location that
    encrypts the job and everything vertexbatch writes for it; ``service_account`` (``None``),
    the account the job runs as.

    ``dest`` (``None``: the id's GCS folder): a BigQuery sink, ``bq://PROJECT.DATASET`` (Vertex
    names a table per job) or ``bq://PROJECT.DATASET.TABLE``, checked against BigQuery's naming
    rules before any cloud call and part of the id's identity; ``results`` reads the output table
    through the Storage Read API (the ``bigquery`` extra; docs/bigquery.md). A run takes a
    dataset only: each shard's job writes its own table.

    ``progress`` (``None``): a callable given a ``vertexbatch.Progress`` as the requests are
    read and staged (a plan: read), at most ten times a second, then with ``done=True``; never
    part of the id's identity (docs/operations.md, "Progress").

    ``check_fields`` (``True``): a request with a field the installed SDK's request types do
    not name (a misspelt parameter) is an ``InvalidRequestError`` before any cloud call, as the
    provider would refuse its line; ``False`` stages such fields, for a parameter the provider
    takes that the installed SDK does not model yet (docs/guarantees.md, "Request fields").

    ``budget`` (``None``): US dollars; a submission (a run: all its shards) whose plan's upper
    bound (``Plan.cost_high``, estimated locally) passes it is refused before anything is
    staged, and so is one whose model has no price (docs/cost.md, "Budget"). ``prices``
    (``()``): the caller's online list prices (``vertexbatch.Price``), before the shipped
    table, for a plan's and a budget's figures. Neither is part of the id's identity.

    ``canary`` (``0``: none): the first N of the requests, in the order given, are sent to the
    model online (Standard PayGo) before anything is staged; one the model refuses for good
    (400, 404: a failure no retry mends) refuses the submission, naming its key, and a
    transient failure is a ``vertexbatch.CanaryWarning``. An id that already holds a
    submission or run sends none. More than the requests given is refused. A plan shows the
    canary's requests and their online cost, and a ``budget`` holds it too. Not part of the
    id's identity (docs/cost.md, "Canary").
    """

    dedupe: bool
    cache: bool
    cache_ttl: timedelta | None
    schema: type[BaseModel] | Mapping[str, Any] | None
    labels: Mapping[str, str] | None
    kms_key: str | None
    service_account: str | None
    dest: str | None
    progress: ProgressCallback | None
    check_fields: bool
    budget: float | None
    prices: Iterable[Price]
    canary: int


class PlanKeywords(SubmitKeywords, total=False):
    """A plan's keywords: a submission's, and ``count_tokens`` (``False``), ``shard_size``
    (``None``: a single job; a number: a run cut in shards of that many keys), ``task``
    (``None``; a ``vertexbatch.Task``: the requests are that task's part of a run) and
    ``fallback_tier`` (``None``: not asked; with ``shard_size``, the run's tier, checked as
    ``run_*`` checks it before any cloud call, and against the run the id holds)."""

    count_tokens: bool
    shard_size: int | None
    task: Task | None
    fallback_tier: Literal["standard", "flex", "priority"] | None


class RunKeywords(SubmitKeywords, total=False):
    """A run's keywords: a submission's, and ``shard_size`` (``DEFAULT_SHARD_SIZE``, 100,000),
    ``max_attempts`` (3), ``task`` (``None``: the run is staged by this process alone; a
    ``vertexbatch.Task``: this process stages that task's part of a run staged by many,
    docs/runs.md "Runs across tasks") and ``fallback_tier`` (``"standard"``; ``"flex"`` or
    ``"priority"``: the price tier the online fallback asks Vertex for past a deadline, checked
    against the model and the client's location before any cloud call and kept in the run's
    ledger; docs/runs.md "Answering the rest online")."""

    shard_size: int
    max_attempts: int
    task: Task | None
    fallback_tier: Literal["standard", "flex", "priority"]


def checked(method: str, given: Mapping[str, object], kind: type) -> Mapping[str, Any]:
    """``given`` if ``kind`` names each of its keywords, else the ``TypeError`` Python raises
    for an unexpected keyword (a ``TypedDict`` is not checked at run time)."""
    known = kind.__optional_keys__  # type: ignore[attr-defined]
    for name in given:
        if name not in known:
            raise TypeError(f"{method}() got an unexpected keyword argument {name!r}")
    return given


@dataclass(frozen=True, slots=True)
class SubmitOptions:
    """The options of one submission (a submit, a plan, a run), built once by the entry point
    that takes them as keywords and handed down whole.

    ``dedupe``: equal requests staged and paid once. ``cache``: the answer cache asked first,
    its entries younger than ``cache_ttl`` (``None``: any age). ``schema``: the answer schema,
    checked as the options are built. The rest are checked where they are used, in the order
    a submission checks its arguments. ``dest``: the BigQuery sink, checked ("": GCS).
    ``progress``: the progress callback, checked; not compared (no part of what is staged).
    """

    dedupe: bool = False
    cache: bool = False
    cache_ttl: timedelta | None = None
    schema: Schema | None = None
    # The job controls as given; ``controls`` checks them.
    labels: Mapping[str, str] | None = None
    kms_key: str | None = None
    service_account: str | None = None
    # The BigQuery sink, checked: "" for the GCS output prefix.
    dest: str = ""
    progress: ProgressCallback | None = field(default=None, compare=False)
    # Refuse a request with a field the installed SDK's request types do not name.
    check_fields: bool = True
    # US dollars a plan may cost (checked), and the caller's prices: no part of the identity.
    budget: float | None = field(default=None, compare=False)
    prices: tuple[Price, ...] = field(default=(), compare=False)
    # The requests sent online first (``_submission.canary``): no part of the identity.
    canary: int = field(default=0, compare=False)

    def controls(self, location: str) -> Controls:
        """The job controls, checked for a job in ``location``."""
        return check_controls(self.labels, self.kms_key, self.service_account, location=location)

    @classmethod
    def of(
        cls, method: str, given: Mapping[str, Any], kind: type = SubmitKeywords
    ) -> SubmitOptions:
        """The options among a method's keywords (``kind`` names what it takes)."""
        given = checked(method, given, kind)
        dest = check_dest(given.get("dest"))
        if dest:
            check_extra()  # its results could not be read: say so before anything is paid
        return cls(
            dedupe=given.get("dedupe", False),
            cache=given.get("cache", False),
            cache_ttl=given.get("cache_ttl"),
            schema=schema_of(given.get("schema")),
            labels=given.get("labels"),
            kms_key=given.get("kms_key"),
            service_account=given.get("service_account"),
            dest=dest,
            progress=check_progress(given.get("progress")),
            check_fields=_flag("check_fields", given.get("check_fields", True)),
            budget=check_budget(given.get("budget")),
            prices=_prices(given.get("prices", ())),
            canary=check_canary(given.get("canary", 0)),
        )


def _prices(given: object) -> tuple[Price, ...]:
    """The caller's prices: an iterable of ``Price`` values."""
    if isinstance(given, str | bytes | Price) or not isinstance(given, Iterable):
        raise InvalidRequestError("prices must be vertexbatch.Price values", field="prices")
    prices = tuple(given)
    if not all(isinstance(p, Price) for p in prices):
        raise InvalidRequestError("prices must be vertexbatch.Price values", field="prices")
    return prices


def _flag(name: str, value: object) -> bool:
    """A keyword that must be True or False."""
    if type(value) is not bool:
        raise InvalidRequestError(f"{name} must be True or False, got {value!r}", field=name)
    return value
