"""Batch prices per model: the shipped table built from the model catalogue, overridable (pure).

The figures are online list prices in US dollars per million tokens, as each catalogue row's
sources gave them on the dates they were read (``vertexbatch/_catalogue/models.toml``); Vertex
batch prediction bills them at half (``BATCH_DISCOUNT``). They are for an estimate before
paying, not a bill: regional prices, long-context tiers (over 200,000 input tokens) and contract
discounts are not modelled; the cache rates are carried where a page prints them. Callers with
their own rates pass ``Price`` values (``prices=`` on ``plan_*``; the command uses the table).
Rates a source says hold until a day carry it (``Price.until``): past it, ``lapsed`` says so and
the cost is unknown, never the old figure.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Self

from .._catalogue import BAND_FIELDS, Band, Model, catalogue, model_entry
from .._errors import InvalidRequestError

__all__ = [
    "BATCH_DISCOUNT",
    "MAX_PRICE",
    "PRICES",
    "Price",
    "PriceBand",
    "PriceTable",
    "lapsed",
    "price_of",
    "today_utc",
]

# Vertex AI bills batch prediction at 50% of the online rate, for Claude and Gemini alike.
BATCH_DISCOUNT = 0.5

# The most a price may be, in dollars per million tokens: far past any model's (the dearest
# lists tens of dollars), and small enough that a plan's costs stay finite numbers.
MAX_PRICE = 1_000_000


def _check(what: str, name: str, value: object) -> None:
    # NaN fails both comparisons; an int of any size compares without becoming a float.
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_PRICE:
        raise InvalidRequestError(
            f"{what}: {name} must be the online list price in US dollars per million "
            f"{name.replace('_', ' ')} tokens, a number from 0 to "
            f"{MAX_PRICE:,.0f}, got {value!r:.40}",
            field="prices",
        )


@dataclass(frozen=True, slots=True)
class PriceBand:
    """The online list prices of a request whose prompt is over ``prompt_tokens`` tokens, for
    a model its provider prices in two bands by prompt size (Claude Haiku 5.5: over 100,000):
    such a request is billed wholly at them, input, output and cache tokens alike. Its prompt
    is every input token of the request, cached ones included; a prompt of exactly
    ``prompt_tokens`` is in the lower band (the ``Price`` itself).

    ``input`` and ``output`` both ``None``: the band's rates are not known, and a request over
    the threshold is priced unknown (never at the lower band). A cache rate ``None``: cached
    tokens in this band at its input rate (never the lower band's cache rate).

    Raises:
        InvalidRequestError (``field="prices"``): a threshold that is not a positive whole
            number, only one of ``input`` and ``output``, or a rate that is not a price.
    """

    prompt_tokens: int
    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None

    def __post_init__(self) -> None:
        threshold = self.prompt_tokens
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold <= 0:
            raise InvalidRequestError(
                f"a PriceBand's prompt_tokens is the prompt size it starts above, a whole "
                f"number from 1, got {threshold!r:.40}",
                field="prices",
            )
        if (self.input is None) != (self.output is None):
            raise InvalidRequestError(
                f"PriceBand over {threshold:,} prompt tokens: give input and output both, or "
                "neither (its rates unknown)",
                field="prices",
            )
        if self.input is None and (self.cache_read is not None or self.cache_write is not None):
            raise InvalidRequestError(
                f"PriceBand over {threshold:,} prompt tokens: cache rates without input and output",
                field="prices",
            )
        for name in ("input", "output", "cache_read", "cache_write"):
            value = getattr(self, name)
            if value is not None:
                _check(f"PriceBand over {threshold:,} prompt tokens", name, value)

    @property
    def known(self) -> bool:
        """Whether a page gives the band's rates (else a request in it is priced unknown)."""
        return self.input is not None and self.output is not None


@dataclass(frozen=True, slots=True)
class Price:
    """The online list prices of one model (or family), as the provider's pricing page prints
    them: ``input`` and ``output`` are US dollars per million input and output tokens, the
    online (not batch) rate. A plan's costs are at batch prices, these times ``BATCH_DISCOUNT``
    (half). The command's ``--price MODEL=INPUT,OUTPUT`` takes the same two numbers, then
    ``cache_read=``, ``cache_write=`` and ``above=N:INPUT,OUTPUT`` (``_command.cli_price``).

    ``match`` is a model family: a bare model id (no ``@version``, no publisher path), which
    matches itself and the ids that continue it after a ``-`` (``"claude-sonnet-4"`` matches
    ``claude-sonnet-4@20250514`` and ``claude-sonnet-4-5@20250929``, not ``claude-sonnet-40``
    nor ``claude-3-sonnet``). The most specific (longest) match wins. (The shipped table's
    rows match only their own catalogued model, never a newer neighbour: ``price_of``.)

    ``cache_read`` / ``cache_write``: the online list prices of a cache hit and a cache write
    (Claude's 5-minute write), per million tokens, where known (``None``: not known).

    ``above``: for a model priced in two bands by prompt size, the band of requests whose
    prompt is over its threshold (``PriceBand``); the rates here are then those of prompts up
    to it. ``None``: one rate for every prompt.

    ``until``: the last day these rates are known to hold (a ``datetime.date``: launch rates
    a page gives an end for). A plan made after it, or a spend priced after it (the day the
    job was created), takes the model's price as unknown rather than this figure. ``None``: no
    end known.

    Raises:
        InvalidRequestError (``field="prices"``): no ``match``, a price that is not a number
            of dollars from 0 to ``MAX_PRICE`` (NaN, infinite, negative, absurd), an
            ``above`` that is not a ``PriceBand``, or an ``until`` that is not a date.
    """

    match: str
    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    above: PriceBand | None = None
    until: datetime.date | None = None

    def __post_init__(self) -> None:
        if not self.match or not isinstance(self.match, str):
            raise InvalidRequestError("a Price needs a model id part to match", field="prices")
        for name in ("input", "output", "cache_read", "cache_write"):
            value = getattr(self, name)
            if value is None and name.startswith("cache_"):
                continue
            _check(f"Price {self.match!r}", name, value)
        if self.above is not None and not isinstance(self.above, PriceBand):
            raise InvalidRequestError(
                f"Price {self.match!r}: above must be a vertexbatch.PriceBand, got "
                f"{type(self.above).__name__}",
                field="prices",
            )
        until = self.until  # a datetime is a date's subclass: a day is asked for, not a time
        if until is not None and (
            not isinstance(until, datetime.date) or isinstance(until, datetime.datetime)
        ):
            raise InvalidRequestError(
                f"Price {self.match!r}: until must be a datetime.date, the last day the rates "
                f"hold, got {until!r:.40}",
                field="prices",
            )


class PriceTable(tuple[Price, ...]):
    """The shipped price table: its ``Price`` rows (a tuple), with ``date``, the date of its
    newest source, and ``source``, where its figures come from."""

    date: str
    source: str

    def __new__(cls, rows: Iterable[Price], *, date: str, source: str) -> Self:
        table = super().__new__(cls, rows)
        table.date = date
        table.source = source
        return table


def _row_price(model: Model) -> Price | None:
    """A catalogue row's rates as a ``Price`` matching its id (``None``: no page prices it)."""
    rates = model.rates
    if rates is None:
        return None
    return Price(
        model.id,
        rates.input,
        rates.output,
        rates.cache_read,
        rates.cache_write,
        None if rates.above is None else PriceBand(**_fields(rates.above)),
        rates.until,
    )


def _shipped() -> PriceTable:
    """The catalogue's priced rows as ``Price`` values, dated by their newest source."""
    rows = [model for model in catalogue() if model.rates is not None]
    prices = [price for model in rows if (price := _row_price(model)) is not None]
    newest = max(source.read for model in rows for source in model.sources)
    return PriceTable(
        prices,
        date=newest,
        source=(
            "vertexbatch's model catalogue (vertexbatch/_catalogue/models.toml; `vertexbatch "
            "models` and docs/models.md list it): each model's online list prices with the "
            "pages they were read from and the date, mostly Anthropic's pricing and model pages "
            "(https://platform.claude.com/docs/en/about-claude/pricing) for Claude and Google's "
            "pages and tabulations of them for Gemini; batch at 50% per "
            "https://cloud.google.com/vertex-ai/generative-ai/pricing. Check a figure against the "
            "provider's page before relying on it, and pass your own Price when they differ"
        ),
    )


def _fields(band: Band) -> dict[str, Any]:
    return {name: getattr(band, name) for name in BAND_FIELDS}


# Only the models a source prices: another (a model newer than the catalogue, or a catalogued
# one no page prices) has no price here rather than a neighbour's, and a plan says so.
PRICES = _shipped()


def price_of(model: str, prices: Iterable[Price] = ()) -> Price | None:
    """The price of ``model``: the caller's table first (by family, the longest match), then
    the rates of ``model``'s own catalogue entry only (``PRICES``' row; within
    ``catalogue_of``, the rows in place); ``None`` if unknown. Whether it still holds on a
    given day is ``lapsed``'s to say (a plan and a spend ask)."""
    given = tuple(prices)
    if not all(isinstance(p, Price) for p in given):
        raise InvalidRequestError("prices must be vertexbatch.Price values", field="prices")
    bare = model.rsplit("/", 1)[-1].partition("@")[0]
    found = [p for p in given if bare == p.match or bare.startswith(p.match + "-")]
    if found:
        return max(found, key=lambda p: len(p.match))
    entry = model_entry(model)
    return None if entry is None else _row_price(entry)


def lapsed(price: Price | None, on: datetime.date) -> bool:
    """Whether ``price`` no longer holds on the day ``on`` (past its ``until``): its figure is
    then not used, and the cost is unknown. The callers pass the day (the plan's, UTC)."""
    return price is not None and price.until is not None and on > price.until


def today_utc() -> datetime.date:
    """Today in UTC: the day a plan is made, for the boundaries that make one (the functions
    here and in ``estimate`` take the day as a value and never read the clock)."""
    return datetime.datetime.now(datetime.UTC).date()
