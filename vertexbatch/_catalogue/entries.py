"""The catalogue's rows as values, read from ``models.toml`` (pure: one read of a file shipped
with the package)."""

from __future__ import annotations

import datetime
import difflib
import functools
import tomllib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "BAND_FIELDS",
    "CATALOGUE_FILE",
    "Band",
    "Model",
    "Rates",
    "Source",
    "bare_id",
    "catalogue",
    "catalogue_from",
    "catalogue_of",
    "closest",
    "model_entry",
]

CATALOGUE_FILE = Path(__file__).with_name("models.toml")


@dataclass(frozen=True, slots=True)
class Source:
    """Where a row's facts come from: a page's URL and the date it was read (``YYYY-MM-DD``)."""

    url: str
    read: str


@dataclass(frozen=True, slots=True)
class Band:
    """The rates of a request whose prompt is over ``prompt_tokens`` tokens (every input token
    of the request, cached ones included), where the provider's page prices a model in two
    bands by prompt size: the whole request (input, output, cache reads and writes) is billed
    at them. ``None``: the page gives no such rate; ``input`` and ``output`` both ``None``: a
    page says such requests are billed otherwise but no page we read gives the rates (a
    request over the threshold is then priced unknown, never at the lower band)."""

    prompt_tokens: int
    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None


@dataclass(frozen=True, slots=True)
class Rates:
    """Online list prices in US dollars per million tokens, as the provider's page prints them
    (batch bills a share of them: ``_plans.prices``). ``None``: the page gives no such rate.
    ``cache_read``: a cache hit (Gemini: the implicit-cache rate); ``cache_write``: a cache
    write (Claude: the 5-minute write, ``cache_control``'s default ttl). ``above``: the band
    of prompts over a size, where the page prices the model in two (``None``: one flat rate
    for every prompt); the rates here are then those of prompts up to its threshold.
    ``until``: the last day a source says these rates hold (launch rates with an end date);
    after it they are not known, and a plan prices the model unknown (``None``: no end
    given)."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    above: Band | None = None
    until: datetime.date | None = None


@dataclass(frozen=True, slots=True)
class Model:
    """One catalogued model.

    ``id``: the bare Vertex model id (no ``@version``, no publisher path; an open model's is
    ``PUBLISHER/MODEL``); ``publisher``: its Vertex publisher, ``anthropic`` | ``google`` (an
    embedding model's too) | an open model's (``meta``, its id's first part); ``batch``: a page
    we read lists it for batch prediction (``False``: none we read does; unknown, not refused);
    ``locations``: where a page we read says it is served (regions, ``us``/``eu``, ``global``;
    empty: unknown, not "nowhere"); ``rates``: its online list prices, ``None`` if no source
    gives them; ``flex``: a page we read lists it for Flex PayGo; ``sources``: the pages its
    facts were read from; ``name``: its name as its pages print it; ``concurrent_jobs``: the
    default quota of its batch jobs running at once in a project; ``job_rows`` and
    ``job_bytes``: the most requests and input bytes one batch job takes (``None``: not
    documented; each ``None`` is unknown, and vertexbatch holds work to its own defaults,
    ``_rules.Limits``); ``structured_output``: the form ``schema=`` is written in for it
    (``"tool"``: Claude's forced tool; ``"responseSchema"``: Gemini's
    ``generationConfig.responseSchema``; ``""``: unknown)."""

    id: str
    publisher: str
    batch: bool
    locations: frozenset[str]
    rates: Rates | None
    flex: bool
    sources: tuple[Source, ...]
    name: str = ""
    concurrent_jobs: int | None = None
    job_rows: int | None = None
    job_bytes: int | None = None
    structured_output: str = ""

    def matches(self, model: str) -> bool:
        """Whether ``model`` names this row: bare or a publisher path, with or without
        ``@version``, or with Gemini's stable version suffix (``gemini-2.5-flash-001``)."""
        if "/" in self.id:  # an open model's PUBLISHER/MODEL id
            return qualified_id(model) == self.id
        bare = bare_id(model)
        if bare == self.id:
            return True
        suffix = bare.removeprefix(self.id + "-")
        return suffix != bare and len(suffix) == 3 and suffix.isdigit()


def qualified_id(model: str) -> str:
    """``model`` as ``PUBLISHER/MODEL`` without ``@version``: a publisher path
    (``publishers/meta/models/llama-x``) is written so, an id already so is kept."""
    name = model.partition("@")[0]
    head, sep, tail = name.rpartition("/models/")
    return f"{head.rsplit('/', 1)[-1]}/{tail}" if sep else name


def bare_id(model: str) -> str:
    """``model`` without a publisher path and without ``@version``."""
    return model.rsplit("/", 1)[-1].partition("@")[0]


_KEYS = frozenset(
    {
        "id", "name", "publisher", "batch", "locations", "rates", "rates_above", "rates_until",
        "flex", "concurrent_jobs", "job_rows", "job_bytes", "structured_output", "sources",
    }
)  # fmt: skip
STRUCTURED_FORMS = frozenset({"", "tool", "responseSchema"})
# A band's fields: its threshold and the rates a page may give for it.
BAND_FIELDS = ("prompt_tokens", "input", "output", "cache_read", "cache_write")


def _rate(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def _beside_rates(row: dict[str, Any], key: str, file: str, why: str) -> tuple[Any, str]:
    """The row's ``key`` (``None`` without one) and its name in errors; refused, saying
    ``why``, on a row without ``rates``."""
    given = row.get(key)
    name = f"{file}: model {row.get('id')!r}: {key}"
    if given is not None and not row.get("rates"):
        raise ValueError(f"{name} without rates: {why}")
    return given, name


def _band(row: dict[str, Any], file: str) -> Band | None:
    """The row's ``rates_above``, every field checked (``None`` without one)."""
    given, name = _beside_rates(
        row, "rates_above", file, "the band below the threshold is its rates"
    )
    if given is None:
        return None
    if not isinstance(given, dict):
        raise ValueError(f"{name} must be a table {{prompt_tokens = N, input = .., ...}}")
    unknown = set(given) - set(BAND_FIELDS)
    if unknown:
        raise ValueError(f"{name}: unknown fields {sorted(unknown)}, known: {list(BAND_FIELDS)}")
    threshold = given.get("prompt_tokens")
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold <= 0:
        raise ValueError(
            f"{name}: prompt_tokens must be a positive whole number, got {threshold!r}"
        )
    rates = {key: value for key, value in given.items() if key != "prompt_tokens"}
    bad = sorted(key for key, value in rates.items() if not _rate(value))
    if bad:
        raise ValueError(f"{name}: {bad} must be prices in dollars per million tokens, from 0")
    if ("input" in rates) != ("output" in rates):
        raise ValueError(f"{name}: give input and output both, or neither (rates unknown)")
    if "input" not in rates and rates:
        raise ValueError(f"{name}: cache rates without input and output")
    return Band(**given)


def _until(row: dict[str, Any], file: str) -> datetime.date | None:
    """The row's ``rates_until``: a TOML date (``None`` without one)."""
    given, name = _beside_rates(row, "rates_until", file, "it is the last day the rates hold")
    if given is None:
        return None
    # A TOML date-time parses as a datetime, a date's subclass: a day is asked for, not a time.
    if not isinstance(given, datetime.date) or isinstance(given, datetime.datetime):
        raise ValueError(
            f"{name} must be a TOML date, the last day the rates hold (rates_until = "
            f"2026-12-31, unquoted, no time), got {given!r:.40}"
        )
    return given


def _model(row: dict[str, Any], file: str = CATALOGUE_FILE.name) -> Model:
    unknown = set(row) - _KEYS
    if unknown:  # a misspelt key would otherwise drop a fact silently
        raise ValueError(f"{file}: model {row.get('id')!r}: unknown keys {sorted(unknown)}")
    form = row.get("structured_output", "")
    if form not in STRUCTURED_FORMS:
        raise ValueError(
            f"{file}: model {row.get('id')!r}: structured_output {form!r} is not one of "
            f"{sorted(STRUCTURED_FORMS)}"
        )
    rates = row.get("rates")
    above = _band(row, file)
    until = _until(row, file)
    return Model(
        id=row["id"],
        publisher=row["publisher"],
        batch=bool(row.get("batch", False)),
        locations=frozenset(row.get("locations", ())),
        rates=Rates(**rates, above=above, until=until) if rates else None,
        flex=bool(row.get("flex", False)),
        sources=tuple(Source(**source) for source in row.get("sources", ())),
        name=row.get("name", ""),
        concurrent_jobs=row.get("concurrent_jobs"),
        job_rows=row.get("job_rows"),
        job_bytes=row.get("job_bytes"),
        structured_output=form,
    )


@functools.cache
def catalogue_from(path: Path) -> tuple[Model, ...]:
    """Every model of the catalogue file ``path`` (the form of ``models.toml``), in its order;
    parsed once per path.

    Raises:
        ValueError: a row with a key the catalogue does not know, a bad
            ``structured_output``, a bad ``rates_above`` or a ``rates_until`` that is not a
            date, naming the file and the model.
    """
    with path.open("rb") as file:
        data = tomllib.load(file)
    return tuple(_model(row, path.name) for row in data.get("model", ()))


# The rows ``catalogue_of`` put in place for this thread or task; None: ``models.toml``'s.
_ROWS: ContextVar[tuple[Model, ...] | None] = ContextVar("vertexbatch_catalogue", default=None)


def catalogue() -> tuple[Model, ...]:
    """Every catalogued model, in the file's order (``models.toml``, parsed on the first call),
    or the rows a ``catalogue_of`` block holds."""
    rows = _ROWS.get()
    return catalogue_from(CATALOGUE_FILE) if rows is None else rows


@contextmanager
def catalogue_of(rows: Iterable[Model]) -> Iterator[tuple[Model, ...]]:
    """Within the block, in this thread or task, the catalogue is ``rows`` (every reader of the
    catalogue: ``model_entry``, ``closest``, the checks and prices that use them): a test's own
    rows, or a catalogue read with ``catalogue_from``. The rows are a ``ContextVar``'s: an
    asyncio task and ``client.aio``'s calls (run in the caller's context) see them; a thread
    started bare inside the block sees ``models.toml``'s."""
    held = tuple(rows)
    token = _ROWS.set(held)
    try:
        yield held
    finally:
        _ROWS.reset(token)


def model_entry(model: str) -> Model | None:
    """The catalogue's row for ``model`` (``claude-sonnet-4-5@20250929`` finds
    ``claude-sonnet-4-5``), ``None`` if it has none."""
    return next((row for row in catalogue() if row.matches(model)), None)


def closest(model: str) -> str | None:
    """The catalogued id nearest ``model``'s bare id, for a message; ``None`` if none is near."""
    bare = bare_id(model)
    found = difflib.get_close_matches(bare, [row.id for row in catalogue()], n=1, cutoff=0.6)
    return found[0] if found else None
