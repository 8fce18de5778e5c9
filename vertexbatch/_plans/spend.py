"""Spend: what answers cost, from the usage they report, at the tier they were billed at (pure).

A finished job's spend is the sum, over the lines it paid for, of each usage's tokens at the
model's price (``price_of``) times the tier's share of the online list price (``TIERS``):
``batch`` for a batch job's answers, and for a run's online answers the tier each was billed
at (``standard`` until an answer records another). ``SpendMeter`` adds results up as they
stream, so a results pass needs no second read of the output.

What counts: a result with usage that was paid by this submission. An answer from the answer
cache (``Result.cached``) was paid by an earlier job, and a deduplicated key's answer
(``Result.shared``) by its first key's line: neither is counted. A line that failed usually
reports no usage and costs nothing; one that reports usage (a truncation, a refusal) is
counted, as the provider bills it.

Cached input tokens: Claude reports cache reads and writes apart from ``input_tokens``
(``cache_read_input_tokens``, ``cache_creation_input_tokens``), each billed at its own rate;
Anthropic's batch discount applies to all of them. Gemini's ``promptTokenCount`` includes its
``cachedContentTokenCount``: the cached part is billed at the cache rate, which takes precedence
over the batch discount (the two do not stack). A price without a cache rate prices cached
tokens at the input rate, and the spend says so.

A model priced in bands by prompt size (``Price.above``) bills each answer wholly in the band
of its own prompt (``prompt_tokens``: every input token, cached ones included; ``_plans.bands``),
batch share and cache rules as above. A record's sums of many answers are priced by band only
where their names say which (``bands.summed_rates``).

A model with no price, a tier whose share is not known, or an answer in a band whose rates are
not known makes the spend unknown (``Spend.dollars is None``), never 0; so does a price that
holds only until a day before the one the usage is priced on (``SpendMeter``'s ``priced_on``:
the day the job was created where known, else today, UTC).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from .._errors import InvalidRequestError
from .._staged.usage import TierUsage
from .._values import Provider, Result, Usage
from .bands import base_tier, summed_rates
from .prices import BATCH_DISCOUNT, Price, lapsed, price_of, today_utc

__all__ = [
    "CACHE_BILLING",
    "TIERS",
    "TIER_SOURCES",
    "CacheBilling",
    "Spend",
    "SpendMeter",
    "count_tiers",
    "paid",
    "prompt_tokens",
    "spend_of",
    "tier_share",
    "usage_cost",
]

# The share of the online list price each tier bills, ``None`` where no source gives it.
TIERS: Final[Mapping[str, float | None]] = {
    "batch": BATCH_DISCOUNT,
    "standard": 1.0,
    "flex": 0.5,
    "priority": None,
    # Provisioned Throughput is billed by its subscription, not per token; Vertex names other
    # traffic types (ON_DEMAND_OFFPEAK, and newer ones) that no page prices.
    "provisioned": None,
    "offpeak": None,
}
TIER_SOURCES: Final[Mapping[str, str]] = {
    "batch": "batch prediction bills 50% of the online rate: "
    "https://cloud.google.com/vertex-ai/generative-ai/pricing (vertexbatch.PRICES.source)",
    "standard": "Standard PayGo is the online list price",
    "flex": "Flex PayGo offers a 50% discount compared to Standard PayGo: "
    "https://docs.cloud.google.com/vertex-ai/generative-ai/docs/flex-paygo (read 2026-12-07)",
    "priority": "Priority PayGo is charged 'at a higher rate than Standard PayGo', the figure "
    "only on the pricing page: https://docs.cloud.google.com/vertex-ai/generative-ai/docs/"
    "priority-paygo (read 2026-12-07); the Gemini API (not Vertex) says 75% to 100% more: "
    "https://ai.google.dev/gemini-api/docs/optimization (read 2026-12-07). Unknown here",
    "provisioned": "Provisioned Throughput is a subscription, not billed per token: "
    "https://docs.cloud.google.com/vertex-ai/generative-ai/docs/deploy/consumption-options "
    "(read 2026-12-07)",
    "offpeak": "ON_DEMAND_OFFPEAK is a traffic type google-genai 2.34 names (types.TrafficType); "
    "no page we read prices it",
}


@dataclass(frozen=True, slots=True)
class CacheBilling:
    """How a provider's usage counts cached input tokens.

    ``input_holds_cached``: the usage's ``input`` includes its cache reads (Gemini's
    ``promptTokenCount``); otherwise they are apart (Claude's ``input_tokens``).
    ``tier_applies_to_cache``: a tier's share (batch: half) applies to the cache rates too
    (Anthropic); otherwise the batch price of a cached token is its cache rate (Gemini: the
    cache discount takes precedence over the batch discount)."""

    input_holds_cached: bool
    tier_applies_to_cache: bool
    source: str


# One row per provider, held to the provider table (tests/guards/test_provider_switches.py).
CACHE_BILLING: Final[Mapping[Provider, CacheBilling]] = {
    "anthropic": CacheBilling(
        input_holds_cached=False,
        tier_applies_to_cache=True,
        source="Anthropic's batch processing charges 50% of the standard price on all usage, "
        "cache writes and reads included (Anthropic's batch processing page, as quoted at "
        "https://dev.to/neverpaytwice/claude-batch-api-half-price-if-you-can-wait-ecg, read "
        "2026-12-07)",
    ),
    "google": CacheBilling(
        input_holds_cached=True,
        tier_applies_to_cache=False,
        source="Gemini batch: implicit caching is on, and the cache-hit discount takes "
        "precedence over the batch discount (they do not stack): "
        "https://vuink.com/post/nfgeb-puvev-d-dargyvsl-d-dncc/optimizing-gemini-api-calls "
        "(2026-01-30, read 2026-12-07; issue 40 cites the Gemini batch page)",
    ),
    "embeddings": CacheBilling(
        input_holds_cached=True,
        tier_applies_to_cache=False,
        source="Gemini embedding batch is built on Gemini batch inference (https://docs.cloud."
        "google.com/gemini-enterprise-agent-platform/models/embeddings/batch-prediction-genai-"
        "embeddings, read 2026-12-07); the page says nothing of caching, so whether an "
        "embedding reads a cache is unknown, and its usage reports input tokens only",
    ),
    "openmaas": CacheBilling(
        input_holds_cached=True,
        tier_applies_to_cache=True,
        source="open models: OpenAI's usage counts cached tokens within prompt_tokens "
        "(prompt_tokens_details.cached_tokens); Google's open-model batch page "
        "(https://docs.cloud.google.com/vertex-ai/generative-ai/docs/maas/capabilities/"
        "batch-prediction, read 2026-12-07) prices no cache rate nor batch share, so none is "
        "assumed",
    ),
}


def paid(result: Result) -> bool:
    """Whether ``result`` counts in a spend: it reports usage, and this submission paid for it
    (not an answer from the answer cache, ``Result.cached``, nor a deduplicated key's,
    ``Result.shared``, paid by its first key's line)."""
    if result.cached or result.shared:
        return False
    usage = result.usage
    return bool(usage.input or usage.output or usage.cache_read or usage.cache_write)


def tier_share(tier: str) -> float | None:
    """The share of the online list price ``tier`` bills (``None``: not known). A tier is what
    Vertex reported for an answer (``usageMetadata.trafficType``), so one this table lacks makes
    the spend unknown rather than failing the results pass.

    Raises:
        InvalidRequestError: ``tier`` is not a string (``field="tier"``)."""
    if not isinstance(tier, str):
        raise InvalidRequestError(f"a tier is a string, got {tier!r:.40}", field="tier")
    return TIERS.get(tier)


def _cache_rate(price: Price, name: str) -> float | None:
    rate = getattr(price, name, None)  # Price gains cache rates with the catalogue
    return rate if isinstance(rate, int | float) and not isinstance(rate, bool) else None


def prompt_tokens(provider: Provider, usage: Usage) -> int:
    """The prompt size a banded price bills an answer by: every input token of its request,
    cached ones included (Claude's ``input_tokens`` plus its cache reads and writes; Gemini's
    ``promptTokenCount``, which holds its cached tokens)."""
    if CACHE_BILLING[provider].input_holds_cached:
        return usage.input
    return usage.input + usage.cache_read + usage.cache_write


def usage_cost(provider: Provider, usage: Usage, price: Price, tier: str = "batch") -> float | None:
    """US dollars one answer's ``usage`` cost at ``price`` (online list prices) and ``tier``,
    in the band of its prompt (``prompt_tokens``) where the price has bands; ``None`` when the
    tier's share or the band's rates are unknown. Cached tokens at their cache rate (the input
    rate when the price has none)."""
    rates, _ = summed_rates(price, tier, prompt_tokens(provider, usage), 1)
    return None if rates is None else _cost(provider, usage, rates, tier)


def _cost(provider: Provider, usage: Usage, price: Price, tier: str) -> float | None:
    """``usage_cost`` at flat rates ``price`` (one band's)."""
    tier = base_tier(tier)
    share = tier_share(tier)
    if share is None:
        return None
    billing = CACHE_BILLING[provider]
    read_rate = _cache_rate(price, "cache_read")
    write_rate = _cache_rate(price, "cache_write")
    read_rate = price.input if read_rate is None else read_rate
    write_rate = price.input if write_rate is None else write_rate
    plain = usage.input - usage.cache_read if billing.input_holds_cached else usage.input
    cached = usage.cache_read * read_rate + usage.cache_write * write_rate
    if billing.tier_applies_to_cache or tier != "batch":
        cached *= share  # (Gemini batch: the cache rate, not halved again)
    return (max(plain, 0) * price.input + usage.output * price.output) * share / 1e6 + (
        cached / 1e6
    )


@dataclass(frozen=True, slots=True)
class Spend:
    """What a job's (or a run's) answers cost.

    Attributes:
        dollars: US dollars, ``None`` when unknown (no price for the model, or an answer at a
            tier whose share is not known): never 0 for unknown.
        answers: the answers paid for and counted (cached and shared results are not).
        input / output / cache_read / cache_write: their tokens, as ``Usage`` counts them.
        tiers: answers per tier they were billed at (``batch``, ``standard``, ``flex``, ...).
        price: the online list price used (``None``: unknown model, pass ``prices=``).
        notes: what the figure rests on, or why it is unknown, in words.
    """

    dollars: float | None
    answers: int = 0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    tiers: Mapping[str, int] = field(default_factory=dict)
    price: Price | None = None
    notes: tuple[str, ...] = ()

    def __str__(self) -> str:
        """``$0.0123``, or ``unknown`` with its reason."""
        if self.dollars is None:
            return "unknown" + (f" ({self.notes[0]})" if self.notes else "")
        return f"${self.dollars:.4f}"

    def summary(self) -> str:
        """A summary line's words: ``spend $0.0123 at batch prices`` (its tiers), or ``spend
        unknown (no price known for model 'X')``."""
        if self.dollars is None:
            return f"spend unknown ({self.notes[0].partition(':')[0] if self.notes else ''})"
        return f"spend {self} at {', '.join(self.tiers) or 'batch'} prices"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``dollars`` is ``null`` when unknown)."""
        return {
            "dollars": self.dollars,
            "answers": self.answers,
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "tiers": dict(self.tiers),
            "notes": list(self.notes),
        }


class SpendMeter:
    """Adds up the spend of results as they stream (``add`` each, or wrap them in ``counted``);
    ``spend`` is the total so far.

    Args:
        provider / model: the job's (``Job.provider``, ``Job.model``).
        prices: the caller's prices, before the shipped table (as ``plan_*`` takes them).
        priced_on: the day the usage is priced on: the day the job was created (UTC) where
            known; ``None``: today (UTC). A price that holds only until an earlier day
            (``Price.until``) is not used: the spend is unknown, and its notes say why.
    """

    def __init__(
        self,
        provider: Provider,
        model: str,
        prices: Iterable[Price] = (),
        *,
        priced_on: datetime.date | None = None,
    ) -> None:
        if provider not in CACHE_BILLING:
            raise InvalidRequestError(f"unknown provider {provider!r:.40}", field="provider")
        self._provider: Provider = provider
        self._model = model
        found = price_of(model, prices)
        on = today_utc() if priced_on is None else priced_on
        # The price found, unless it holds no longer on that day: then its last day, for notes.
        self._lapsed = found.until if found is not None and lapsed(found, on) else None
        self._on = on
        self._price = None if self._lapsed is not None else found
        self._dollars = 0.0
        self._unknown_tiers: set[str] = set()
        self._unknown_bands: list[str] = []  # why some answers' band could not be priced
        self._tokens = [0, 0, 0, 0]
        self._tiers: dict[str, int] = {}

    def add(self, result: Result, tier: str = "batch") -> None:
        """Count one result, billed at ``tier`` (``batch`` for a batch job's answers)."""
        tier_share(tier)  # a tier that is not a string is refused, whatever the result
        if paid(result):
            self.add_usage(result.usage, tier)

    def add_usage(self, usage: Usage, tier: str = "batch", answers: int = 1) -> None:
        """Count ``answers`` answers billed at ``tier`` whose usages add up to ``usage`` (a run's
        shard records keep such sums, ``_runs.usage``): the same figure as adding each, as an
        answer's cost is linear in its tokens within one band. ``tier`` may name the band the
        sum is of (``batch_over_100000``: ``bands.banded_tier``); a sum of a banded model whose
        answers' band cannot be told makes the spend unknown (``bands.summed_rates``)."""
        base = base_tier(tier)
        share = tier_share(base)
        self._tiers[base] = self._tiers.get(base, 0) + answers
        for index, count in enumerate(
            (usage.input, usage.output, usage.cache_read, usage.cache_write)
        ):
            self._tokens[index] += count
        if share is None:
            self._unknown_tiers.add(base)
        elif self._price is not None:
            prompt = prompt_tokens(self._provider, usage)
            rates, why = summed_rates(self._price, tier, prompt, answers)
            if rates is None:
                self._unknown_bands.append(why)
            else:
                self._dollars += _cost(self._provider, usage, rates, base) or 0.0

    def counted(self, results: Iterable[Result], tier: str = "batch") -> Iterator[Result]:
        """Yield ``results`` unchanged, counting each as it passes."""
        tier_share(tier)
        for result in results:
            self.add(result, tier)
            yield result

    @property
    def spend(self) -> Spend:
        """The spend of the results counted so far."""
        notes: list[str] = []
        dollars: float | None = self._dollars
        if self._lapsed is not None:
            dollars = None
            notes.append(
                f"the price read for model {self._model!r} holds until "
                f"{self._lapsed.isoformat()}, before {self._on.isoformat()} (the day its usage "
                "is priced, UTC): pass prices=[vertexbatch.Price(...)]"
            )
        elif self._price is None:
            dollars = None
            notes.append(
                f"no price known for model {self._model!r}: pass prices=[vertexbatch.Price(...)]"
            )
        if self._unknown_tiers:
            dollars = None
            notes.append(f"no share known for tier(s) {sorted(self._unknown_tiers)}")
        if self._unknown_bands:
            dollars = None
            notes.append(f"unknown for {self._unknown_bands[0]}")
        if self._price is not None:
            share = ", ".join(
                f"{t} {s:.0%}" for t in sorted(self._tiers) if (s := TIERS.get(t)) is not None
            )
            notes.append(
                f"at {share or 'batch 50%'} of ${self._price.input:g} input / "
                f"${self._price.output:g} output per million tokens (list prices matching "
                f"{self._price.match!r})" + _band_note(self._price)
            )
            if self._tokens[2] or self._tokens[3]:
                missing = [
                    name
                    for name in ("cache_read", "cache_write")
                    if _cache_rate(self._price, name) is None
                ]
                if missing:
                    notes.append(f"no {' or '.join(missing)} rate known: at the input rate")
        return Spend(
            dollars=dollars,
            answers=sum(self._tiers.values()),
            input=self._tokens[0],
            output=self._tokens[1],
            cache_read=self._tokens[2],
            cache_write=self._tokens[3],
            tiers=dict(sorted(self._tiers.items())),  # in one order, however they came
            price=self._price,
            notes=tuple(notes),
        )


def _band_note(price: Price) -> str:
    band = price.above
    if band is None:
        return ""
    if band.input is None or band.output is None:
        return f"; prompts over {band.prompt_tokens:,} tokens at rates not known"
    return (
        f"; prompts over {band.prompt_tokens:,} tokens at ${band.input:g} input / "
        f"${band.output:g} output"
    )


def count_tiers(meter: SpendMeter, usage: TierUsage) -> None:
    """Count a record's usage per tier (``_staged.usage``: a run shard's answers, a canary's)
    into ``meter``, as adding each answer at its tier would."""
    for tier, (answers, *tokens) in sorted(usage.items()):
        if answers:
            meter.add_usage(Usage(*tokens), tier, answers)


def spend_of(
    provider: Provider,
    model: str,
    results: Iterable[Result],
    *,
    tier: str = "batch",
    prices: Iterable[Price] = (),
    priced_on: datetime.date | None = None,
) -> Spend:
    """The spend of ``results`` (a finished job's, say) billed at ``tier``, priced on the day
    ``priced_on`` (``SpendMeter``'s)."""
    meter = SpendMeter(provider, model, prices, priced_on=priced_on)
    for result in results:
        meter.add(result, tier)
    return meter.spend
