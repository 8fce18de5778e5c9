"""A key map's keys and digests held in arrays, not objects (pure; ``_requests.keymap`` uses them).

A results pass holds its job's key map from its first row to its last: 100,000 keys as a list of
strings and a dict of 128-bit digests took 19.6 MB (24.7 MB while it was built), most of it one
Python object per key, per digest and per index. Here the keys are one UTF-8 buffer and an array
of where each ends, and the digests two arrays of 64-bit halves, found through a table of entry
numbers placed by their first bits: 4.7 MB (docs/performance.md, "Issue 44 at 100,000"). A
lookup compares all 128 bits: two digests that share their first half (or any other part) still
lead to their own keys.
"""

from __future__ import annotations

import operator
import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate, islice, repeat
from typing import overload

__all__ = ["DigestIndex", "KeyList", "first_words", "hex_words"]

_HALF = 64
_LOW = (1 << _HALF) - 1
_ENTRY_BITS = 32  # an entry's number in the sorted index's packed sort key


def hex_words(text: bytes) -> array[int]:
    """Numbers of 16 hex digits each, joined (``b"00ff..."``), as 64-bit words, in order: what
    ``int(word, 16)`` gives each, read in C.

    Raises:
        ValueError: ``text`` is not hex digits, or not a whole number of 16-digit words.
    """
    if len(text) % 16:
        raise ValueError("hex words are 16 digits each")
    words = array("Q", bytes.fromhex(text.decode("ascii")))
    if sys.byteorder == "little":
        words.byteswap()  # fromhex reads the digits big-endian
    return words


def first_words(texts: list[bytes]) -> array[int]:
    """The first 16 hex digits of each text (32 hex digits, or ``b""`` for 0) as 64-bit words:
    ``hex_words`` of them joined when none is empty."""
    if all(texts):
        return hex_words(b"".join(texts))[::2]
    return array("Q", [int(text[:16], 16) if text else 0 for text in texts])


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


class DigestIndex:
    """128-bit digests to the index of the first key that carries each: what a
    ``dict[int, int]`` answers, in arrays.

    Entries are kept in the order added (``add``, ``extend``) and found through an open-addressing
    table of entry numbers, at most half full, placed by the first bits of a digest (SHA-256
    digests spread evenly) and probed linearly. The table is rebuilt when a lookup finds entries
    added since (``extend``: a whole key map at a time) or when those added one by one (``add``,
    held in a small dict meanwhile) outgrow it.
    """

    __slots__ = (
        "_high",
        "_indexed",
        "_loose",
        "_low",
        "_mask",
        "_owner",
        "_recent",
        "_shift",
        "_table",
    )

    def __init__(self) -> None:
        self._high = array("Q")  # each entry's first 64 bits
        self._low = array("Q")  # and its last 64
        self._owner = array("I")  # the key index it leads to
        self._table = array("I", [0])  # entry + 1 of entries [0, _indexed), 0 where empty
        self._mask = 0
        self._shift = _HALF  # a digest's first slot: the first bits of its first half
        self._indexed = 0
        self._loose = False  # entries past ``_indexed`` that ``extend`` added
        # Entries past ``_indexed`` added by ``add``: number -> owner (``extend``'s are not).
        self._recent: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._owner)

    def extend_words(self, words: array[int], owners: Iterable[int]) -> None:
        """Add digests not known to be new (the caller checks ``unique`` before trusting a
        lookup) as 64-bit words, each digest's first then its last: ``hex_words`` of their
        hex joined, read in C, not one ``int`` a digest."""
        self._high.extend(words[::2])
        self._low.extend(words[1::2])
        self._owner.extend(owners)
        self._loose = True

    def unique(self) -> bool:
        """Whether no digest was added twice."""
        high = self._high
        return len(set(high)) == len(high) or len(set(zip(high, self._low, strict=True))) == len(
            high
        )

    def get(self, number: int) -> int | None:
        """The key index of a 128-bit digest, or ``None``; every bit compared."""
        if self._recent or self._loose:
            found = self._recent.get(number)
            if found is not None:
                return found
            if self._loose:
                self._index()
        if number < 0:
            return None  # ``int`` reads a sign too
        high = number >> _HALF
        slot = high >> self._shift
        table = self._table
        try:
            entry = table[slot]
        except IndexError:  # past 128 bits
            return None
        highs = self._high
        while entry:
            entry -= 1
            if highs[entry] == high and self._low[entry] == number & _LOW:
                return self._owner[entry]
            slot = (slot + 1) & self._mask
            entry = table[slot]
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
            self._index()  # geometric: each entry is placed O(log n) times, the dict stays small
        return owner

    def items(self) -> list[tuple[int, int]]:
        """(digest, key index) of every entry in the order added (for tests)."""
        return [
            ((h << _HALF) | lo, owner)
            for h, lo, owner in zip(self._high, self._low, self._owner, strict=True)
        ]

    def _index(self) -> None:
        entries = len(self._owner)
        if entries >> _ENTRY_BITS:
            raise ValueError(f"more than {1 << _ENTRY_BITS:,} digests")  # pragma: no cover
        bits = max((2 * entries).bit_length(), 1)  # at most half full
        table = array("I", bytes(4 << bits))
        mask = self._mask = (1 << bits) - 1
        shift = self._shift = _HALF - bits
        for entry, slot in enumerate(map(operator.rshift, self._high, repeat(shift)), start=1):
            while table[slot]:
                slot = (slot + 1) & mask
            table[slot] = entry
        self._table = table
        self._indexed = entries
        self._loose = False
        self._recent.clear()
