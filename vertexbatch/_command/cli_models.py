"""``vertexbatch models``: the model catalogue, listed; and the command's way of showing the
warning a submission gives for a model outside it. Registered by ``cli``; reads no cloud."""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Iterator
from typing import Any

import click

from .._catalogue import BAND_FIELDS, Band, Model, Rates, UncataloguedModelWarning, catalogue
from .._providers import PROVIDERS, of_model
from .._submission.canary import CanaryWarning

__all__ = ["catalogue_warnings", "job_cells", "model_record", "models", "price_cells"]


def model_record(model: Model) -> dict[str, Any]:
    """One catalogued model as JSON-ready data (what ``--json`` prints, one object a line)."""
    rates = model.rates
    return {
        "id": model.id,
        "name": model.name,
        "publisher": model.publisher,
        "batch": model.batch,
        "locations": sorted(model.locations),
        "rates": None
        if rates is None
        else {
            "input": rates.input,
            "output": rates.output,
            "cache_read": rates.cache_read,
            "cache_write": rates.cache_write,
            "above": None
            if rates.above is None
            else {name: getattr(rates.above, name) for name in BAND_FIELDS},
            "until": None if rates.until is None else rates.until.isoformat(),
        },
        "flex": model.flex,
        "concurrent_jobs": model.concurrent_jobs,
        "job_rows": model.job_rows,
        "job_bytes": model.job_bytes,
        "structured_output": model.structured_output or None,
        "sources": [{"url": s.url, "read": s.read} for s in model.sources],
    }


def price_cells(model: Model) -> str:
    """Its online list prices per million tokens in words: ``$4 in / $20 out / $0.2 cache read /
    $5 cache write``; a banded model's both bands (``prompts up to 100,000 tokens: ...; over:
    ...``); ``unknown`` when no source prices it. Rates a source says hold until a day end
    with it: ``..., until 2026-12-31`` (after it a plan prices the model unknown)."""
    rates = model.rates
    if rates is None:
        return "unknown"
    cells = _cells(rates)
    band = rates.above
    if band is not None:
        over = "unknown" if band.input is None else _cells(band)
        cells = f"prompts up to {band.prompt_tokens:,} tokens: {cells}; over: {over}"
    return cells if rates.until is None else f"{cells}, until {rates.until.isoformat()}"


def _cells(rates: Rates | Band) -> str:
    cells = [f"${rates.input:g} in", f"${rates.output:g} out"]
    if rates.cache_read is not None:
        cells.append(f"${rates.cache_read:g} cache read")
    if rates.cache_write is not None:
        cells.append(f"${rates.cache_write:g} cache write")
    return " / ".join(cells)


def job_cells(model: Model) -> str:
    """One batch job's limits in words: ``200,000 rows / 1 GB / 4 at once``, each part
    ``unknown`` where no source gives it (``unknown`` alone when none does)."""
    rows = f"{model.job_rows:,} rows" if model.job_rows is not None else "rows unknown"
    size = f"{model.job_bytes / 1e9:g} GB" if model.job_bytes is not None else "bytes unknown"
    jobs = model.concurrent_jobs
    at_once = f"{jobs} at once" if jobs is not None else "at once unknown"
    if (model.job_rows, model.job_bytes, jobs) == (None, None, None):
        return "unknown"
    return f"{rows} / {size} / {at_once}"


def _line(model: Model) -> str:
    where = ",".join(sorted(model.locations)) or "unknown"
    return (
        f"{model.id:<24} {model.publisher:<9} batch={'yes' if model.batch else 'unlisted':<8} "
        f"flex={'yes' if model.flex else 'no':<3} locations={where:<15} "
        f"schema={model.structured_output or 'unknown':<14} {price_cells(model)}"
    )


def _names(model: Model) -> tuple[str, ...]:
    """What ``--publisher`` finds ``model`` by: its Vertex publisher and its lane's name in the
    provider table (``embeddings`` for Google's embedding models, ``openmaas`` for open ones)."""
    row = of_model(model.id)
    return (model.publisher,) if row is None else (model.publisher, row.provider)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object a model, with sources.")
@click.option("--publisher", type=click.Choice(sorted(PROVIDERS)), default=None, help="Only these.")
def models(as_json: bool, publisher: str | None) -> None:
    """List the models vertexbatch knows: id, publisher, batch, Flex, locations, the form
    schema= takes for it, prices (--json adds one job's limits: rows, bytes, jobs at once).

    Prices are online list prices in US dollars per million tokens (batch bills half); each
    fact comes from the pages --json names, read on the dates it gives. batch=unlisted: no page
    read lists the model for batch (it is submitted all the same); locations=unknown: no page
    read gives them. Reads no cloud.
    """
    rows = [m for m in catalogue() if publisher is None or publisher in _names(m)]
    for model in rows:
        click.echo(json.dumps(model_record(model)) if as_json else _line(model))
    if not as_json:
        click.echo(
            f"{len(rows)} models; prices: online list, US$ per million tokens (batch bills "
            "half); --json gives each fact's source and date",
            err=True,
        )


@contextlib.contextmanager
def catalogue_warnings() -> Iterator[None]:
    """While a command runs: each ``UncataloguedModelWarning`` (and ``CanaryWarning``) is one
    stderr line, ``vertexbatch: warning: ...``, every time (other warnings go where they went)."""
    with warnings.catch_warnings():  # restores the filters and showwarning afterwards
        warnings.simplefilter("always", UncataloguedModelWarning)
        warnings.simplefilter("always", CanaryWarning)
        shown = warnings.showwarning

        def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
            if issubclass(category, UncataloguedModelWarning | CanaryWarning):
                click.echo(f"vertexbatch: warning: {message}", err=True)
            else:
                shown(message, category, *args, **kwargs)

        warnings.showwarning = show
        yield
