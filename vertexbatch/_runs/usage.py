"""What a finished shard's answers used, per tier they were billed at, and a run's spend from it
(pure).

A step that finishes a shard reads every key's result anyway (to count its outcomes), so it
adds up the usage of the answers the shard paid for as it goes and keeps the sums in the
shard's done record (``_runs.done``)::

    "usage": {"batch": [answers, input, output, cache_read, cache_write],
              "standard": [...]}

An answer counts as ``SpendMeter`` counts it (``_plans.spend.paid``: usage reported, not a
cached or shared result), each key's final result only, at the tier ``ShardReader.tries``
gives it: exactly what a results pass's meter adds (``vertexbatch run results``). The sums
price as the answers do, an answer's cost being linear in its tokens within one price band.
For a model priced in bands by prompt size (``Price.above``: Claude Haiku 5.5), each answer is
summed under its tier and band, ``batch_upto_100000`` / ``batch_over_100000``
(``_plans.bands.banded_tier``), so the sums price by band; a reader that does not know such a
name (an earlier vertexbatch) finds no share for it and says the spend is unknown.

The progress record caches each finished shard's sums beside its counts (``_runs.records``)
as one compact token: ``-`` for a record without usage (written by an earlier version), else
``u`` and ``TIER:ANSWERS,INPUT,OUTPUT[,CACHE_READ[,CACHE_WRITE]]`` joined by ``;``. So a
``status`` prices every finished shard without reading its record again: what it costs stays
one listing and one read when nothing changed.

Bounded: a tier is what Vertex reported for an answer (lowercased ``trafficType``); a shard
records at most ``MAX_TIERS`` tiers, and a name that is not a short lowercase word, or one past
the first ``MAX_TIERS - 1``, is recorded as ``unknown`` (``TIERS`` gives no share for it, so
the spend is unknown, as it would be by its own name).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from .._plans.bands import banded_tier
from .._plans.prices import Price, price_of
from .._plans.spend import Spend, SpendMeter, count_tiers, paid, prompt_tokens
from .._staged.usage import MAX_TIERS, OTHER, TIER_NAME, WIDTH, TierUsage, parse_usage, usage_json
from .._values import Provider, Result

__all__ = [
    "MAX_TIERS",
    "OTHER",
    "RunSpend",
    "ShardUsage",
    "Tally",
    "decode_usage",
    "encode_usage",
    "parse_usage",
    "usage_json",
]

# tier -> (answers, input, output, cache_read, cache_write): the record's form (``_staged.usage``)
ShardUsage = TierUsage


class Tally:
    """Adds up the usage of one shard's final results, per tier, as they stream; for a model
    the shipped catalogue prices in bands by prompt size (``provider`` and ``model`` given),
    per tier and band."""

    def __init__(self, provider: Provider | None = None, model: str = "") -> None:
        self._tiers: dict[str, list[int]] = {}
        price = price_of(model) if provider is not None and model else None
        band = None if price is None else price.above
        self._band = None if band is None or provider is None else (provider, band.prompt_tokens)

    def add(self, result: Result, tier: str) -> None:
        """Count ``result``, billed at ``tier``, if the shard paid for it."""
        if not paid(result):
            return
        if self._band is not None and TIER_NAME.fullmatch(tier) is not None:
            provider, threshold = self._band
            tier = banded_tier(tier, threshold, prompt_tokens(provider, result.usage))
        tiers = self._tiers
        if tier not in tiers and (TIER_NAME.fullmatch(tier) is None or len(tiers) >= MAX_TIERS - 1):
            tier = OTHER
        usage = result.usage
        sums = tiers.setdefault(tier, [0] * WIDTH)
        for index, count in enumerate(
            (1, usage.input, usage.output, usage.cache_read, usage.cache_write)
        ):
            sums[index] += count

    def usage(self) -> dict[str, tuple[int, int, int, int, int]]:
        """The sums so far, per tier."""
        return {tier: (s[0], s[1], s[2], s[3], s[4]) for tier, s in sorted(self._tiers.items())}


def encode_usage(usage: ShardUsage | None) -> str:
    """The progress record's token for a shard's usage (``-``: its record holds none)."""
    if usage is None:
        return "-"
    parts = []
    for tier, sums in sorted(usage.items()):
        kept = list(sums)
        while len(kept) > 3 and not kept[-1]:  # cache tokens only when there are some
            kept.pop()
        parts.append(f"{tier}:{','.join(map(str, kept))}")
    return "u" + ";".join(parts)


def decode_usage(token: str, keys: int) -> tuple[bool, ShardUsage | None]:
    """Whether ``token`` is one ``encode_usage`` writes, and the usage it holds (``None``: the
    record holds none); not one (``False``): read the done record instead."""
    if token == "-":
        return True, None
    if not token.startswith("u"):
        return False, None
    value: dict[str, list[int]] = {}
    for part in token[1:].split(";") if len(token) > 1 else ():
        tier, colon, numbers = part.partition(":")
        counts = numbers.split(",")
        if not colon or tier in value or not 3 <= len(counts) <= WIDTH:
            return False, None
        if not all(c.isascii() and c.isdigit() and len(c) <= 20 for c in counts):
            return False, None
        value[tier] = [int(c) for c in counts] + [0] * (WIDTH - len(counts))
    parsed = parse_usage(value, keys)
    return parsed is not None, parsed


class RunSpend:
    """The spend of a run's finished shards, from the usage their done records keep, and of
    its canary.

    Args:
        provider / model: the run's.
        prices: the caller's prices, before the shipped table.
        canary: what the run's canary used (``Ledger.canary``), counted from the first
            finished shard on.
    """

    def __init__(
        self,
        provider: Provider,
        model: str,
        prices: Iterable[Price] = (),
        canary: TierUsage | None = None,
    ) -> None:
        self._meter = SpendMeter(provider, model, prices)
        count_tiers(self._meter, canary or {})
        self._shards = 0
        self._unrecorded: list[str] = []

    def add(self, shard_id: str, usage: ShardUsage | None) -> None:
        """Count a finished shard (``usage``: its record's, ``None`` when it holds none)."""
        self._shards += 1
        if usage is None:
            self._unrecorded.append(shard_id)
            return
        count_tiers(self._meter, usage)

    def spend(self, shards: int) -> Spend | None:
        """The spend of the finished shards of a run of ``shards``; ``None`` while no shard is
        finished. Unknown (``dollars`` ``None``) when a finished shard's record holds no usage
        (written by an earlier version), never 0; the notes say which shards it covers."""
        if not self._shards:
            return None
        spend = self._meter.spend
        notes = list(spend.notes)
        if self._shards < shards:
            notes.append(
                f"the {self._shards} finished shard(s) of {shards}: the others' answers count "
                "once their shards finish (a results pass counts them now)"
            )
        if self._unrecorded:
            first = self._unrecorded[0]
            more = len(self._unrecorded) - 1
            notes.insert(
                0,
                f"{first}{f' and {more} more shard(s)' if more else ''} finished under an earlier "
                "vertexbatch, whose done record holds no usage: 'vertexbatch run results' "
                "(run.key_results with a SpendMeter) counts the spend",
            )
            return replace(spend, dollars=None, notes=tuple(notes))
        return replace(spend, notes=tuple(notes))
