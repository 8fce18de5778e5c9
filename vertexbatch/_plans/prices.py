"""Batch prices per model family: a small dated table with its sources, overridable (pure).

The figures are online list prices in US dollars per million tokens, as the sources below gave
them on the dates below; Vertex batch prediction bills them at half (``BATCH_DISCOUNT``). They
are for an estimate before paying, not a bill: regional prices, long-context tiers (over 200,000
input tokens), prompt-cache rates and contract discounts are not modelled. Callers with their
own rates pass ``Price`` values (``prices=`` on ``plan_*``; the command uses the table).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Self

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
    nor ``claude-3-sonnet``). The most specific (longest) match wins.

    Raises:
        InvalidRequestError (``field="prices"``): no ``match``, or a price that is not a number
            of dollars from 0 to ``MAX_PRICE`` (NaN, infinite, negative, absurd).
    """

    match: str
    input: float
    output: float

    def __post_init__(self) -> None:
        if not self.match or not isinstance(self.match, str):
            raise InvalidRequestError("a Price needs a model id part to match", field="prices")
        for name in ("input", "output"):
            value = getattr(self, name)
            # NaN fails both comparisons; an int of any size compares without becoming a float.
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not (0 <= value <= MAX_PRICE)
            ):
                raise InvalidRequestError(
                    f"Price {self.match!r}: {name} must be the online list price in US dollars "
                    f"per million {name} tokens, a number from 0 to {MAX_PRICE:,.0f}, got "
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


# The date of the newest source (the table was compiled from them on 2026-11-30). The sources
# are secondary tabulations of the providers' list prices: check the pricing pages before relying
# on a figure, and pass your own ``Price`` when they differ.
_DATE = "2026-06"
_SOURCE = (
    "Claude: Anthropic list prices, as tabulated at "
    "https://deploybase.ai/articles/claude-api-pricing "
    "(as of 2026-03-21; Opus 4.5/4.6, Sonnet 4.x, Haiku 4.5); Gemini: Vertex AI list prices as "
    "quoted at https://redresscompliance.com/google-cloud-vertex-ai-gemini-negotiation-download "
    "(2026-06; Gemini 2.5 Pro, Flash Lite) and https://deploybase.ai/articles/"
    "google-vertex-ai-pricing-complete-cost-breakdown (Gemini 2.5 Flash); batch at 50% per "
    "https://cloud.google.com/vertex-ai/generative-ai/pricing; compiled 2026-11-30"
)


# Only the generations the sources price: another generation (Opus 4.1, Gemini 2.0 Flash, a
# model newer than the table) has no price here rather than a neighbour's, and a plan says so.
PRICES = PriceTable(
    (
        Price("claude-opus-4-5", 5.00, 25.00),
        Price("claude-opus-4-6", 5.00, 25.00),
        Price("claude-sonnet-4", 3.00, 15.00),
        Price("claude-haiku-4-5", 1.00, 5.00),
        Price("gemini-2.5-flash-lite", 0.10, 0.40),
        Price("gemini-2.5-flash", 0.30, 2.50),
        Price("gemini-2.5-pro", 1.25, 10.00),
    ),
    date=_DATE,
    source=_SOURCE,
)


def price_of(model: str, prices: Iterable[Price] = ()) -> Price | None:
    """The price of ``model``: the caller's table first, then ``PRICES``; ``None`` if unknown."""
    given = tuple(prices)
    if not all(isinstance(p, Price) for p in given):
        raise InvalidRequestError("prices must be vertexbatch.Price values", field="prices")
    bare = model.rsplit("/", 1)[-1].partition("@")[0]
    for table in (given, PRICES):
        found = [p for p in table if bare == p.match or bare.startswith(p.match + "-")]
        if found:
            return max(found, key=lambda p: len(p.match))
    return None
