"""The catalogue's rows as values, read from ``models.toml`` (pure: one read of a file shipped
with the package)."""

from __future__ import annotations

import difflib
import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CATALOGUE_FILE",
    "Model",
    "Rates",
    "Source",
    "bare_id",
    "catalogue",
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
class Rates:
    """Online list prices in US dollars per million tokens, as the provider's page prints them
    (batch bills a share of them: ``_plans.prices``). ``None``: the page gives no such rate.
    ``cache_read``: a cache hit (Gemini: the implicit-cache rate); ``cache_write``: a cache
    write (Claude: the 5-minute write, ``cache_control``'s default ttl)."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


@dataclass(frozen=True, slots=True)
class Model:
    """One catalogued model.

    ``id``: the bare Vertex model id (no ``@version``, no publisher path; an open model's is
    ``PUBLISHER/MODEL``); ``publisher``: the provider table's key, ``anthropic`` | ``google`` |
    ``openmaas`` (open models); ``batch``: a page we read lists it for
    batch prediction (``False``: none we read does; unknown, not refused); ``locations``: where
    a page we read says it is served (regions, ``us``/``eu``, ``global``; empty: unknown, not
    "nowhere"); ``rates``: its online list prices, ``None`` if no source gives them; ``flex``: a
    page we read lists it for Flex PayGo; ``sources``: the pages its facts were read from;
    ``name``: its name as its pages print it; ``concurrent_jobs``: the default quota of its
    batch jobs running at once in a project (``None``: not documented)."""

    id: str
    publisher: str
    batch: bool
    locations: frozenset[str]
    rates: Rates | None
    flex: bool
    sources: tuple[Source, ...]
    name: str = ""
    concurrent_jobs: int | None = None

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
    {"id", "name", "publisher", "batch", "locations", "rates", "flex", "concurrent_jobs", "sources"}
)


def _model(row: dict[str, Any]) -> Model:
    unknown = set(row) - _KEYS
    if unknown:  # a misspelt key would otherwise drop a fact silently
        raise ValueError(
            f"{CATALOGUE_FILE.name}: model {row.get('id')!r}: unknown keys {sorted(unknown)}"
        )
    rates = row.get("rates")
    return Model(
        id=row["id"],
        publisher=row["publisher"],
        batch=bool(row.get("batch", False)),
        locations=frozenset(row.get("locations", ())),
        rates=Rates(**rates) if rates else None,
        flex=bool(row.get("flex", False)),
        sources=tuple(Source(**source) for source in row.get("sources", ())),
        name=row.get("name", ""),
        concurrent_jobs=row.get("concurrent_jobs"),
    )


@functools.cache
def catalogue() -> tuple[Model, ...]:
    """Every catalogued model, in the file's order (parsed on the first call)."""
    with CATALOGUE_FILE.open("rb") as file:
        data = tomllib.load(file)
    return tuple(_model(row) for row in data.get("model", ()))


def model_entry(model: str) -> Model | None:
    """The catalogue's row for ``model`` (``claude-sonnet-4-5@20250929`` finds
    ``claude-sonnet-4-5``), ``None`` if it has none."""
    return next((row for row in catalogue() if row.matches(model)), None)


def closest(model: str) -> str | None:
    """The catalogued id nearest ``model``'s bare id, for a message; ``None`` if none is near."""
    bare = bare_id(model)
    found = difflib.get_close_matches(bare, [row.id for row in catalogue()], n=1, cutoff=0.6)
    return found[0] if found else None
