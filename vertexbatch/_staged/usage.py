"""Usage per tier as a record keeps it: ``{"TIER": [answers, input, output, cache_read,
cache_write], ...}`` (pure).

A run's done record keeps its shard's answers' usage so (``_runs.usage``), and a manifest its
canary's (``Manifest.canary``: the canary's answers, sent online before the rows were staged,
``_submission.canary``). Bounded: at most ``MAX_TIERS`` tiers, each named as a short lowercase
word (``OTHER`` for any other, which no tier table prices), five whole numbers each.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

__all__ = [
    "MAX_TIERS",
    "OTHER",
    "TIER_NAME",
    "WIDTH",
    "TierUsage",
    "parse_usage",
    "summed",
    "usage_json",
]

# tier -> (answers, input, output, cache_read, cache_write)
TierUsage = Mapping[str, tuple[int, int, int, int, int]]
MAX_TIERS: Final = 8
OTHER: Final = "unknown"
TIER_NAME: Final = re.compile(r"[a-z][a-z0-9_]{0,31}")
WIDTH: Final = 5


def usage_json(usage: TierUsage) -> dict[str, list[int]]:
    """A record's ``usage`` field."""
    return {tier: list(sums) for tier, sums in sorted(usage.items())}


def parse_usage(value: object, keys: int) -> dict[str, tuple[int, int, int, int, int]] | None:
    """A record's ``usage`` field, every part checked; ``None`` if it does not hold (at most
    ``MAX_TIERS`` tiers named as ``TIER_NAME`` names them, five whole numbers each, no more
    answers than ``keys``)."""
    if not isinstance(value, dict) or len(value) > MAX_TIERS:
        return None
    usage: dict[str, tuple[int, int, int, int, int]] = {}
    for tier, sums in value.items():
        if (
            not isinstance(tier, str)
            or TIER_NAME.fullmatch(tier) is None
            or not isinstance(sums, list)
            or len(sums) != WIDTH
            or not all(type(n) is int and n >= 0 for n in sums)
        ):
            return None
        usage[tier] = (sums[0], sums[1], sums[2], sums[3], sums[4])
    if sum(sums[0] for sums in usage.values()) > keys:
        return None
    return dict(sorted(usage.items()))


def summed(usages: Iterable[TierUsage]) -> dict[str, tuple[int, int, int, int, int]]:
    """``usages`` added up per tier (a run's tasks' canaries); past ``MAX_TIERS - 1`` tiers the
    others are summed as ``OTHER``, as a shard's tally names them."""
    sums: dict[str, list[int]] = {}
    for usage in usages:
        for tier, counts in sorted(usage.items()):
            if tier not in sums and len(sums) >= MAX_TIERS - 1:
                tier = OTHER
            into = sums.setdefault(tier, [0] * WIDTH)
            for index, count in enumerate(counts):
                into[index] += count
    return {tier: (s[0], s[1], s[2], s[3], s[4]) for tier, s in sorted(sums.items())}
