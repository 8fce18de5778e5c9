"""Prices in bands by prompt size: the rates one request is billed at, a plan's cost of its
requests each in its band, and the tier names a record sums a banded model's answers under
(pure).

Some models are priced in two bands by prompt size (Claude Haiku 5.5: up to 100,000 prompt
tokens, and over): a request is billed wholly in the band its own prompt falls in, input,
output and cache tokens alike (``Price.above``, the catalogue's ``rates_above``). Its prompt is
every input token of the request, cached ones included (``prompt_tokens``: Claude's
``input_tokens`` plus its cache reads and writes, Gemini's ``promptTokenCount``, which holds its
cached tokens); a prompt of exactly the threshold is in the lower band ("up to").

A cost is therefore not linear in summed tokens: the sums a record keeps of many answers
(a run shard's, a canary's: ``_staged.usage``) are split by band where they are added up, under
tier names that say so (``banded_tier``: ``batch_upto_100000``, ``batch_over_100000``), and
``summed_rates`` prices a sum only when it can tell its answers' band.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Final

from .prices import Price

__all__ = [
    "banded_tier",
    "band_cost",
    "band_said",
    "base_tier",
    "rates_at",
    "summed_rates",
]

_BANDED: Final = re.compile(
    r"(?P<tier>[a-z][a-z0-9_]*?)_(?P<side>upto|over)_(?P<n>[1-9][0-9]{0,11})"
)


def rates_at(price: Price, prompt_tokens: int) -> Price | None:
    """The rates a request whose prompt is ``prompt_tokens`` tokens is billed at, as one flat
    ``Price``: ``price`` itself up to its band's threshold (or when it has no band), the band's
    rates over it (its cache rates only, never the lower band's); ``None`` when the band's
    rates are not known."""
    band = price.above
    if band is None or prompt_tokens <= band.prompt_tokens:
        return price if band is None else replace(price, above=None)
    if band.input is None or band.output is None:
        return None
    return Price(price.match, band.input, band.output, band.cache_read, band.cache_write)


def band_cost(
    price: Price, requests: Iterable[tuple[int, int]], share: float
) -> tuple[float | None, float | None, int]:
    """A plan's cost of ``requests``, each ``(prompt tokens, output ceiling)`` in its own band,
    at ``share`` of the online list price: ``(low, high, over)``, input only and input plus
    every request writing its whole ceiling, and how many requests are over the band's
    threshold. ``(None, None, over)`` when one is in a band whose rates are not known."""
    low = high = 0.0
    over = 0
    unknown = False
    band = price.above
    for prompt, ceiling in requests:
        if band is not None and prompt > band.prompt_tokens:
            over += 1
        rates = rates_at(price, prompt)
        if rates is None:
            unknown = True
            continue
        cost = prompt * rates.input * share / 1e6
        low += cost
        high += cost + ceiling * rates.output * share / 1e6
    return (None, None, over) if unknown else (low, high, over)


def band_said(price: Price, over: int) -> str:
    """A plan's words on a banded price: the band's rates and how many requests are in it."""
    band = price.above
    if band is None:
        return ""
    rates = (
        f"${band.input:g} input / ${band.output:g} output per million tokens"
        if band.input is not None and band.output is not None
        else "rates no page we read gives (a request in it is priced unknown)"
    )
    return (
        f"priced in bands by prompt size: a request whose prompt is over "
        f"{band.prompt_tokens:,} tokens is billed wholly at {rates}; {over} request(s) here "
        "are over it (by their estimated or counted input tokens)"
    )


def banded_tier(tier: str, threshold: int, prompt_tokens: int) -> str:
    """The name a record sums an answer billed at ``tier`` under, for a model priced in bands
    over ``threshold`` prompt tokens: ``TIER_upto_N`` or ``TIER_over_N``."""
    side = "over" if prompt_tokens > threshold else "upto"
    return f"{tier}_{side}_{threshold}"


def _split(name: str) -> tuple[str, str, int]:
    found = _BANDED.fullmatch(name)
    if found is None:
        return name, "", 0
    return found["tier"], found["side"], int(found["n"])


def base_tier(name: str) -> str:
    """The tier a record's name names (``batch_over_100000``: ``batch``)."""
    return _split(name)[0]


def summed_rates(
    price: Price, name: str, prompt_tokens: int, answers: int
) -> tuple[Price | None, str]:
    """The rates of ``answers`` answers a record sums under ``name`` whose prompts add up to
    ``prompt_tokens``, and ``""`` or why they are unknown.

    Exact when the price has no band, for one answer, when the sum is within the lower band
    (each prompt is at most the sum), and for a sum the name says is of one band that lies
    wholly in one of the price's (``upto_N`` with N at most the threshold, ``over_N`` with N
    at least it). Otherwise (a sum recorded unsplit, or split at another threshold) the
    answers' bands cannot be told: ``None``, and why."""
    band = price.above
    if band is None:
        return price, ""
    _, side, threshold = _split(name)
    if answers <= 1:
        prompt = prompt_tokens
    elif prompt_tokens <= band.prompt_tokens or (
        side == "upto" and threshold <= band.prompt_tokens
    ):
        prompt = 0  # every answer's prompt is within the lower band
    elif side == "over" and threshold >= band.prompt_tokens:
        prompt = band.prompt_tokens + 1  # every answer's prompt is over the threshold
    else:
        prompt = -1
    if prompt >= 0:
        rates = rates_at(price, prompt)
        return (rates, "") if rates is not None else (None, _unpriced(price))
    return None, (
        f"{answers} answers recorded as one sum ({name!r}) whose prompts' bands (over or up to "
        f"{band.prompt_tokens:,} tokens) cannot be told: a results pass (vertexbatch results, "
        "run results) prices each answer"
    )


def _unpriced(price: Price) -> str:
    assert price.above is not None
    return (
        f"answers with prompts over {price.above.prompt_tokens:,} tokens, whose rates no page "
        f"we read gives for {price.match!r}: pass prices=[vertexbatch.Price(..., "
        "above=vertexbatch.PriceBand(...))]"
    )
