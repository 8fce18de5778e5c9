"""A key map's keys and digests held in arrays, not objects (pure; ``_requests.keymap`` uses them).

A results pass holds its job's key map from its first row to its last: 100,000 keys as a list of
strings and a dict of 128-bit digests took 19.6 MB (24.7 MB while it was built), most of it one
Python object per key, per digest and per index. Here the keys are one UTF-8 buffer and an array
of where each ends, and the digests two arrays of 64-bit halves, indexed by buckets of their first
bits: 5.4 MB (docs/performance.md, "Issue 44 at 100,000"). A lookup compares all 128 bits: two
digests that share their first half (or any other part) still lead to their own keys.
"""

from __future__ import annotations

import operator
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate, count, islice, repeat
from typing import overload

__all__ = ["DigestIndex", "KeyList"]

_HALF = 64
_LOW = (1 << _HALF) - 1
_ENTRY_BITS = 32  # an entry's number in the sorted index's packed sort key


def _encoded(key: str) -> bytes:
    # Lone surrogates as ``parse_key_record`` and ``json.loads`` can give them: kept, not refused.
    return key.encode("utf-8", "surrogatepass")


class KeyList(Sequence[str]):
    """Keys in order, held as one UTF-8 buffer and the offset where each ends."""

    __slots__ = ("_blob", "_ends")

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self._blob = bytearray()
        self._ends = array("Q")
        for key in keys:
            self.append(key)

    def append(self, key: str) -> None:
        self._blob += _encoded(key)
        self._ends.append(len(self._blob))

    def extend_encoded(self, keys: Sequence[bytes]) -> None:
        """Append keys given as their UTF-8 bytes (surrogates passed, as ``append`` writes)."""
        start = len(self._blob)
        self._blob += b"".join(keys)
        self._ends.extend(islice(accumulate(map(len, keys), initial=start), 1, None))

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        ends = self._ends
        if type(index) is int and index > 0:  # a results pass's every row: the short way
            return self._blob[ends[index - 1] : ends[index]].decode("utf-8", "surrogatepass")
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        end = ends[index]  # IndexError past either end, as a list's
        if index < 0:
            index += len(ends)
        start = ends[index - 1] if index else 0
        return self._blob[start:end].decode("utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        blob, start = self._blob, 0
        for end in self._ends:
            yield blob[start:end].decode("utf-8", "surrogatepass")
            start = end

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KeyList):
            return self._ends == other._ends and self._blob == other._blob
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, as a list

    def __repr__(self) -> str:
        return f"KeyList(<{len(self)} keys>)"  # keys may be content: never shown


def _adjacent_equal(values: Sequence[int]) -> bool:
    """Whether two neighbours of ``values`` are equal (in C, no loop in Python)."""
    return any(map(operator.eq, values, islice(values, 1, None)))


class DigestIndex:
    """128-bit digests to the index of the first key that carries each: what a
    ``dict[int, int]`` answers, in arrays.

    Entries are kept in the order added (``add``, ``extend``), and indexed by the first bits of
    their first half: the entries sorted by it (``_order``), and where each bucket of those bits
    starts (``_starts``, about one entry a bucket: SHA-256 digests spread evenly). The index is
    rebuilt when a lookup finds entries added since (``extend``: a whole key map at a time) or
    when those added one by one (``add``, held in a small dict meanwhile) outgrow it.
    """

    __slots__ = (
        "_high",
        "_indexed",
        "_loose",
        "_low",
        "_order",
        "_owner",
        "_recent",
        "_shared_high",
        "_shift",
        "_starts",
    )

    def __init__(self) -> None:
        self._high = array("Q")  # each entry's first 64 bits
        self._low = array("Q")  # and its last 64
        self._owner = array("I")  # the key index it leads to
        self._order = array("I")  # entries [0, _indexed) by their first half
        self._starts = array("I", [0, 0])  # where each bucket starts in ``_order``, and its end
        self._shift = _HALF  # a first half's bucket: its first bits (none while empty)
        self._shared_high = False  # whether two indexed entries have one first half
        self._indexed = 0
        self._loose = False  # entries past ``_indexed`` that ``extend`` added
        # Entries past ``_indexed`` added by ``add``: number -> owner (``extend``'s are not).
        self._recent: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._owner)

    def extend(self, digests: Sequence[bytes], owners: Iterable[int]) -> None:
        """Add digests (32 hex digits each) not known to be new: the caller checks ``unique``
        before trusting a lookup."""
        self._high.extend([int(d[:16], 16) for d in digests])
        self._low.extend([int(d[16:], 16) for d in digests])
        self._owner.extend(owners)
        self._loose = True

    def unique(self) -> bool:
        """Whether no digest was added twice (the index brought up to date)."""
        self._index()
        if not self._shared_high:
            return True
        order, high, low = self._order, self._high, self._low
        ordered = array("Q", map(high.__getitem__, order))
        for at in range(1, len(ordered)):
            if ordered[at] == ordered[at - 1] and low[order[at]] == low[order[at - 1]]:
                return False
        return True

    def get(self, number: int) -> int | None:
        """The key index of a 128-bit digest, or ``None``; every bit compared."""
        if self._recent or self._loose:
            found = self._recent.get(number)
            if found is not None:
                return found
            if self._loose:
                self._index()
        high = number >> _HALF
        # A number past 128 bits or below 0 (``int`` reads a sign) lands in some bucket, or
        # past the last, and matches no entry there: every entry is two halves of 64 bits.
        bucket = high >> self._shift
        starts = self._starts
        try:
            at, end = starts[bucket], starts[bucket + 1]
        except IndexError:
            return None
        order, highs = self._order, self._high
        while at < end:
            entry = order[at]
            if highs[entry] == high and self._low[entry] == number & _LOW:
                return self._owner[entry]
            at += 1
        return None

    def add(self, number: int, owner: int) -> int:
        """``dict.setdefault``: the key index of a digest added before, else ``owner``, added."""
        found = self.get(number)
        if found is not None:
            return found
        self._high.append(number >> _HALF)
        self._low.append(number & _LOW)
        self._owner.append(owner)
        self._recent[number] = owner
        if len(self._recent) > max(1024, self._indexed // 2):
            self._index()  # geometric: each entry is sorted O(log n) times, the dict stays small
        return owner

    def items(self) -> list[tuple[int, int]]:
        """(digest, key index) of every entry in the order added (for tests)."""
        return [
            ((h << _HALF) | lo, owner)
            for h, lo, owner in zip(self._high, self._low, self._owner, strict=True)
        ]

    def _index(self) -> None:
        if self._indexed == len(self._owner):
            self._loose = False
            return
        if len(self._owner) >> _ENTRY_BITS:
            raise ValueError(f"more than {1 << _ENTRY_BITS:,} digests")  # pragma: no cover
        # One packed int an entry (first half, entry number): sorted by C, no tuples.
        # (first half, entry) packed in one int, sorted: maps and sorts in C, no tuples.
        packed = sorted(
            map(operator.or_, map(operator.lshift, self._high, repeat(_ENTRY_BITS)), count())
        )
        self._order = array("I", map(operator.and_, packed, repeat((1 << _ENTRY_BITS) - 1)))
        highs = list(map(operator.rshift, packed, repeat(_ENTRY_BITS)))
        self._shared_high = _adjacent_equal(highs)
        del highs
        # 2**bits buckets of the first ``bits`` bits, one or two entries each: where each
        # starts is where the least packed value of its bits would go.
        bits = max(len(packed).bit_length() - 1, 1)
        shift = self._shift = _HALF - bits
        lowest = map(operator.lshift, range((1 << bits) + 1), repeat(_ENTRY_BITS + shift))
        self._starts = array("I", map(bisect_left, repeat(packed), lowest))
        self._indexed = len(self._owner)
        self._loose = False
        self._recent.clear()
