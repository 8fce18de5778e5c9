"""Batch prices per model: the shipped table built from the model catalogue, overridable (pure).

The figures are online list prices in US dollars per million tokens, as each catalogue row's
sources gave them on the dates they were read (``vertexbatch/_catalogue/models.toml``); Vertex
batch prediction bills them at half (``BATCH_DISCOUNT``). They are for an estimate before
paying, not a bill: regional prices, long-context tiers (over 200,000 input tokens) and contract
discounts are not modelled; the cache rates are carried where a page prints them. Callers with
their own rates pass ``Price`` values (``prices=`` on ``plan_*``; the command uses the table).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Self

from .._catalogue import catalogue, model_entry
from .._errors import InvalidRequestError

__all__ = [
    "BATCH_DISCOUNT",
    "MAX_PRICE",
    "PRICES",
    "Price",
    "PriceTable",
    "price_of",
]

# Vertex AI bills batch prediction at 50% of the online rate, for Claude and Gemini alike.
BATCH_DISCOUNT = 0.5

# The most a price may be, in dollars per million tokens: far past any model's (the dearest
# lists tens of dollars), and small enough that a plan's costs stay finite numbers.
MAX_PRICE = 1_000_000


@dataclass(frozen=True, slots=True)
class Price:
    """The online list prices of one model (or family), as the provider's pricing page prints
    them: ``input`` and ``output`` are US dollars per million input and output tokens, the
    online (not batch) rate. A plan's costs are at batch prices, these times ``BATCH_DISCOUNT``
    (half). The command's ``--price MODEL=INPUT,OUTPUT`` takes the same two numbers.

    ``match`` is a model family: a bare model id (no ``@version``, no publisher path), which
    matches itself and the ids that continue it after a ``-`` (``"claude-sonnet-4"`` matches
    ``claude-sonnet-4@20250514`` and ``claude-sonnet-4-5@20250929``, not ``claude-sonnet-40``
    nor ``claude-3-sonnet``). The most specific (longest) match wins. (The shipped table's
    rows match only their own catalogued model, never a newer neighbour: ``price_of``.)

    ``cache_read`` / ``cache_write``: the online list prices of a cache hit and a cache write
    (Claude's 5-minute write), per million tokens, where known (``None``: not known).

    Raises:
        InvalidRequestError (``field="prices"``): no ``match``, or a price that is not a number
            of dollars from 0 to ``MAX_PRICE`` (NaN, infinite, negative, absurd).
    """

    match: str
    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None

    def __post_init__(self) -> None:
        if not self.match or not isinstance(self.match, str):
            raise InvalidRequestError("a Price needs a model id part to match", field="prices")
        for name in ("input", "output", "cache_read", "cache_write"):
            value = getattr(self, name)
            if value is None and name.startswith("cache_"):
                continue
            # NaN fails both comparisons; an int of any size compares without becoming a float.
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not (0 <= value <= MAX_PRICE)
            ):
                raise InvalidRequestError(
                    f"Price {self.match!r}: {name} must be the online list price in US dollars "
                    f"per million {name.replace('_', ' ')} tokens, a number from 0 to "
                    f"{MAX_PRICE:,.0f}, got "
                    f"{value!r:.40}",
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


def _shipped() -> PriceTable:
    """The catalogue's priced rows as ``Price`` values, dated by their newest source."""
    rows = [(model, model.rates) for model in catalogue() if model.rates is not None]
    prices = [
        Price(model.id, rates.input, rates.output, rates.cache_read, rates.cache_write)
        for model, rates in rows
    ]
    newest = max(source.read for model, _ in rows for source in model.sources)
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


# Only the models a source prices: another (a model newer than the catalogue, or a catalogued
# one no page prices) has no price here rather than a neighbour's, and a plan says so.
PRICES = _shipped()


def price_of(model: str, prices: Iterable[Price] = ()) -> Price | None:
    """The price of ``model``: the caller's table first (by family, the longest match), then
    ``PRICES`` (the row of ``model``'s own catalogue entry only); ``None`` if unknown."""
    given = tuple(prices)
    if not all(isinstance(p, Price) for p in given):
        raise InvalidRequestError("prices must be vertexbatch.Price values", field="prices")
    bare = model.rsplit("/", 1)[-1].partition("@")[0]
    found = [p for p in given if bare == p.match or bare.startswith(p.match + "-")]
    if found:
        return max(found, key=lambda p: len(p.match))
    entry = model_entry(model)
    return next((p for p in PRICES if entry is not None and p.match == entry.id), None)
