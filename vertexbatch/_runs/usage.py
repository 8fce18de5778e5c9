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

The day the answers are priced on: the record keeps ``"priced_on": "YYYY-MM-DD"``, the latest
day (UTC) any answer the shard paid for is priced on: a batch answer's is the day Vertex created
its attempt's job (``Status.created``), an online answer's the day the shard was recorded as
answered online (the answers were paid for between its claim and that record; the rows keep no
time of their own). A price is known to hold up to its last day (``Price.until``) and no price
carries a first day, so a figure that holds on the latest day holds on every earlier one: the
spend of answers priced each on its own day is that of all of them priced on the latest, known
or unknown alike. A run's spend is therefore priced on the latest of its shards' days
(``RunSpend``); a record without the day (written by an earlier vertexbatch, or one with an
answer whose job's creation time Vertex did not give) is priced on today's date, as spends were
before: today is no earlier than the answers' own day, so the figure is the one their day
gives, or unknown where a price ended in between (never a lapsed price's figure). The run's
canary (``Ledger.canary``), answered before any of its jobs was created, is priced with the
shards, on their day: no earlier than its own, by the same argument. (Were a price to gain a
first day, this would no longer hold: each answer would then be priced on its own day.)

The progress record caches each finished shard's sums beside its counts (``_runs.records``)
as one compact token: ``-`` for a record without usage (written by an earlier version), else
``u`` and ``TIER:ANSWERS,INPUT,OUTPUT[,CACHE_READ[,CACHE_WRITE]]`` joined by ``;``, then its
day as one more token (``encode_day``: ``-`` for none). So a ``status`` prices every finished
shard without reading its record again: what it costs stays one listing and one read when
nothing changed.

Bounded: a tier is what Vertex reported for an answer (lowercased ``trafficType``); a shard
records at most ``MAX_TIERS`` tiers, and a name that is not a short lowercase word, or one past
the first ``MAX_TIERS - 1``, is recorded as ``unknown`` (``TIERS`` gives no share for it, so
the spend is unknown, as it would be by its own name).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable
from dataclasses import replace

from .._plans.bands import banded_tier
from .._plans.prices import Price, price_of, today_utc
from .._plans.spend import Spend, SpendMeter, count_tiers, paid, prompt_tokens
from .._staged.usage import MAX_TIERS, OTHER, TIER_NAME, WIDTH, TierUsage, parse_usage, usage_json
from .._values import Provider, Result

__all__ = [
    "MAX_TIERS",
    "OTHER",
    "RunSpend",
    "ShardUsage",
    "Tally",
    "day_of",
    "decode_day",
    "decode_usage",
    "encode_day",
    "encode_usage",
    "parse_day",
    "parse_usage",
    "usage_json",
]

# tier -> (answers, input, output, cache_read, cache_write): the record's form (``_staged.usage``)
ShardUsage = TierUsage
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)


def day_of(created: datetime.datetime | None) -> datetime.date | None:
    """The day (UTC) of a job's creation time (``Status.created``), ``None`` if Vertex gave
    none."""
    return None if created is None else created.astimezone(datetime.UTC).date()


class Tally:
    """Adds up the usage of one shard's final results, per tier, as they stream; for a model
    the shipped catalogue prices in bands by prompt size (``provider`` and ``model`` given),
    per tier and band. ``day``: the latest day its paid answers are priced on."""

    def __init__(self, provider: Provider | None = None, model: str = "") -> None:
        self._tiers: dict[str, list[int]] = {}
        price = price_of(model) if provider is not None and model else None
        band = None if price is None else price.above
        self._band = None if band is None or provider is None else (provider, band.prompt_tokens)
        self._latest: datetime.date | None = None
        self._undated = False

    @property
    def day(self) -> datetime.date | None:
        """The latest day a paid answer is priced on; ``None`` when one has no day (or none was
        paid for): the record then says no day, and the shard is priced on today's."""
        return None if self._undated else self._latest

    def add(self, result: Result, tier: str, day: datetime.date | None = None) -> None:
        """Count ``result``, billed at ``tier`` and priced on ``day`` (``None``: not known), if
        the shard paid for it."""
        if not paid(result):
            return
        if day is None:
            self._undated = True
        elif self._latest is None or day > self._latest:
            self._latest = day
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


def encode_day(day: datetime.date | None) -> str:
    """The progress record's token for a shard's day (``-``: its record says none)."""
    return "-" if day is None else day.isoformat()


def decode_day(token: str) -> tuple[bool, datetime.date | None]:
    """Whether ``token`` is one ``encode_day`` writes, and the day it holds."""
    if token == "-":
        return True, None
    day = parse_day(token)
    return day is not None, day


def parse_day(value: object) -> datetime.date | None:
    """A record's day, ``YYYY-MM-DD`` (nothing else ISO 8601 allows); ``None`` if it is not
    one."""
    if not isinstance(value, str) or _DAY.fullmatch(value) is None:
        return None
    try:
        return datetime.date.fromisoformat(value)
    except ValueError:
        return None


class RunSpend:
    """The spend of a run's finished shards, from the usage their done records keep, and of
    its canary.

    Priced on the latest day a finished shard's answers are priced on (its record's
    ``priced_on``; ``today`` for a shard whose record says none): see the module docstring.

    Args:
        provider / model: the run's.
        prices: the caller's prices, before the shipped table.
        canary: what the run's canary used (``Ledger.canary``), counted from the first
            finished shard on.
        today: today's date (UTC), the day of a shard whose record says none (the caller
            reads the clock; ``None``: read here).
    """

    def __init__(
        self,
        provider: Provider,
        model: str,
        prices: Iterable[Price] = (),
        canary: TierUsage | None = None,
        today: datetime.date | None = None,
    ) -> None:
        self._run = (provider, model, tuple(prices))
        self._today = today_utc() if today is None else today
        self._usages: list[TierUsage] = [canary or {}]
        self._latest: datetime.date | None = None
        self._shards = 0
        self._unrecorded: list[str] = []
        self._undated: list[str] = []

    def add(
        self, shard_id: str, usage: ShardUsage | None, day: datetime.date | None = None
    ) -> None:
        """Count a finished shard (``usage``: its record's, ``None`` when it holds none; ``day``:
        its record's ``priced_on``, ``None`` when it says none)."""
        self._shards += 1
        if usage is None:
            self._unrecorded.append(shard_id)
            return
        self._usages.append(usage)
        if not any(sums[0] for sums in usage.values()):
            return  # nothing paid: no day to price on
        if day is None:
            self._undated.append(shard_id)
            day = self._today
        if self._latest is None or day > self._latest:
            self._latest = day

    def spend(self, shards: int) -> Spend | None:
        """The spend of the finished shards of a run of ``shards``; ``None`` while no shard is
        finished. Unknown (``dollars`` ``None``) when a finished shard's record holds no usage
        (written by an earlier version), never 0; the notes say which shards it covers."""
        if not self._shards:
            return None
        provider, model, prices = self._run
        meter = SpendMeter(provider, model, prices, priced_on=self._latest or self._today)
        for usage in self._usages:
            count_tiers(meter, usage)
        spend = meter.spend
        notes = list(spend.notes)
        if self._undated:
            first, more = self._undated[0], len(self._undated) - 1
            notes.append(
                f"{first}{f' and {more} more shard(s)' if more else ''}: its record does not say "
                "the day its jobs were created (an earlier vertexbatch wrote it), priced on "
                f"today's date, {self._today.isoformat()} (UTC)"
            )
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
