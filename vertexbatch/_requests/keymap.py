"""Correlation: the key map that leads a job's output rows back to its keys (pure).

``KeyMap`` holds one job's keys in submission order and finds the key of an output row by the
digests each key and its request travel under (``_requests.digests``): the key's id, else the
canonical digest of the echoed request.

With ``dedupe=True`` several keys share one staged line: their key records carry the digest of
the line's first key, and ``KeyMap.shared`` leads an answered line to the other keys it answers.
With ``cache=True`` a key answered from the answer cache has no line at all: its record carries
``cache_digest(key)`` (``c`` + the hex of its key digest), which no output row can name.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Container, Iterable, Mapping, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any

from .._json import load_json
from .digests import canonical_digest
from .key_index import DigestIndex, KeyList, first_words, hex_words

if TYPE_CHECKING:
    from .._schemas.check import Schema

__all__ = [
    "EMBEDDING_KEY_FIELD",
    "KEY_FIELD",
    "KeyMap",
    "parse_key_record",
]

# The label (Gemini ``request.labels``) and sibling field that carry a key's digest.
KEY_FIELD = "vb_key"
# The id field of an embedding row: Google's embedding batch rows name their id ``key``
# (``_requests.embedding_line``); its value is the key's digest, as ``custom_id``'s is.
EMBEDDING_KEY_FIELD = "key"
_DIGEST = re.compile(rb"[kc][0-9a-f]{32}")


# Key records read at a time: a batch of plain ones (every one, usually) goes through one regex.
_RECORDS_BATCH = 1024


class KeyMap:
    """The keys of one job in submission order, and the digests that lead back to them.

    Held compactly (keys in one buffer, digests in arrays: ``_requests.key_index``; the canonical
    index built only when a row has no id), because a Cloud Function reading 200,000 results has
    little memory to spare.
    """

    __slots__ = (
        "_by_cache",
        "_by_canonical",
        "_canonical",
        "_digests",
        "_primary",
        "_shared",
        "cached",
        "fills_cache",
        "keys",
        "schema",
    )

    # A digest as the value of an id field in the line's own JSON (``custom_id``, the ``vb_key``
    # sibling or label): a digest quoted inside a string has its quotes escaped and never matches.
    _ID_IN_LINE = re.compile(
        rb'"(?:custom_id|%b|%b)"\s*:\s*"(k[0-9a-f]{32})"'
        % (KEY_FIELD.encode(), EMBEDDING_KEY_FIELD.encode())
    )

    def __init__(self) -> None:
        self.keys = KeyList()  # in submission order
        self._digests = DigestIndex()  # each line's digest (128 bits) -> its first key's index
        self._canonical = array("Q")
        self._by_canonical: dict[int, list[int]] | None = None
        # Deduplicated keys only (usually none): a line's first key -> the others it answers,
        # and each of those -> that first key.
        self._shared: dict[int, list[int]] = {}
        self._primary: dict[int, int] = {}
        self.cached = 0  # keys answered from the answer cache
        self._by_cache: dict[int, int] = {}
        # Set by whoever read the manifest: the job's ok answers go to the answer cache.
        self.fills_cache = False
        # Set by whoever read the manifest: the answer schema answers are checked against.
        self.schema: Schema | None = None

    def add(self, key: str, digest: str, canonical: str) -> None:
        """Add one key (in submission order); a digest seen before shares that key's line."""
        index = len(self.keys)
        if digest[0] == "c":
            self.cached += 1
            self._by_cache[_number(digest)] = index
            self.keys.append(key)
            self._canonical.append(0)  # never matched by an echoed request
            self._by_canonical = None
            return
        first = self._digests.add(_number(digest), index)
        if first != index:
            self._shared.setdefault(first, []).append(index)
            self._primary[index] = first
        self.keys.append(key)
        self._canonical.append(int(canonical[:16], 16) if canonical else 0)
        self._by_canonical = None

    @classmethod
    def from_records(cls, lines: Iterable[bytes], *, batch: int = _RECORDS_BATCH) -> KeyMap:
        """Build a key map from the staged key-map lines (``[key, digest, canonical]``), read
        ``batch`` lines at a time.

        Raises:
            ValueError: a line is not a key record, or a key appears twice (the message names
                the line by number, never its content).
        """
        records = iter(lines)
        return cls.from_blocks(iter(lambda: list(islice(records, batch)), []), batch=batch)

    @classmethod
    def from_blocks(
        cls, blocks: Iterable[Sequence[bytes]], *, batch: int = _RECORDS_BATCH
    ) -> KeyMap:
        """``from_records`` of lines given in blocks of any size (a range's, as read: no line
        passes through a generator of its own), still read ``batch`` lines at a time."""
        km = cls()
        number = 0
        # Up to 200,000 records are read before the first result: a batch of plain records
        # (every one, usually) is read by one regex, only a batch with another record in it
        # line by line. Repeats across plain batches are looked for once, at their end: if
        # there is one, their records are added again one by one, as ``add`` has them.
        hashes = array("q")  # each plain key's hash, for that check
        seen: set[str] | None = None  # the keys, once a batch is not plain
        for lines in blocks:
            for start in range(0, len(lines), batch):
                block = lines[start : start + batch]
                if seen is None and km._add_plain(block, hashes):
                    number += len(block)
                    continue
                if seen is None:
                    km, seen = (km, set(km.keys)) if km._plain_unique(hashes) else km._replayed()
                    hashes = array("q")
                km._add_checked(block, seen, number)
                number += len(block)
        if seen is None and not km._plain_unique(hashes):
            km = km._replayed()[0]
        return km

    def _add_plain(self, batch: Sequence[bytes], hashes: array[int]) -> bool:
        """Add a batch of plain records (a key with a line of its own) as ``add`` would, keys and
        digests new (``_plain_unique`` checks later); ``False``, nothing added, if a line is not
        one (damaged, an escape, a cached key) or the batch is not what ``json.loads`` reads."""
        joined = b"\n".join(batch)
        try:
            joined.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return False
        records = _PLAIN_RECORDS.findall(joined)
        # One match a line, each line whole (a line with a newline in it is not a record).
        if len(records) != len(batch) or joined.count(b"\n") != len(batch) - 1:
            return False
        digests, canonical = b"".join([d for _, d, _ in records]), [c for _, _, c in records]
        if digests.translate(None, _HEX) or b"".join(canonical).translate(None, _HEX):
            return False  # the regex takes any 32 bytes there: only lowercase hex is plain
        keys = [key for key, _, _ in records]
        start = len(self.keys)
        self.keys.extend_encoded(keys)  # the UTF-8 bytes, as decoded above: the same keys
        hashes.extend(map(hash, keys))
        self._digests.extend_words(hex_words(digests), range(start, start + len(keys)))
        self._canonical.extend(first_words(canonical))
        self._by_canonical = None
        return True

    def _plain_unique(self, hashes: array[int]) -> bool:
        """Whether plain batches' keys (``hashes``: a collision says no too) and digests differ."""
        return len(set(hashes)) == len(hashes) and self._digests.unique()

    def _replayed(self) -> tuple[KeyMap, set[str]]:
        """Plain batches' records added one by one (a key twice is named by its line, a digest
        twice shares its line), and the keys."""
        km, seen = KeyMap(), set()
        entries = zip(self.keys, self._digests.items(), self._canonical, strict=True)
        for number, (key, (digest, _), canonical) in enumerate(entries, start=1):
            if key in seen:
                raise ValueError(f"line {number}: a key appears twice")
            seen.add(key)
            km.add(key, f"k{digest:032x}", f"{canonical:016x}" if canonical else "")
        return km, seen

    def _add_checked(self, batch: Iterable[bytes], seen: set[str], number: int) -> None:
        """Add records one by one, each parsed and checked (``parse_key_record``)."""
        for number, raw in enumerate(batch, start=number + 1):  # noqa: B020 - the line's number
            try:
                key, digest, canonical_text = parse_key_record(raw)
            except ValueError as exc:
                raise ValueError(f"line {number}: {exc}") from None
            if key in seen:
                raise ValueError(f"line {number}: a key appears twice")
            seen.add(key)
            self.add(key, digest, canonical_text)

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def lines(self) -> int:
        """How many staged lines the keys travel on (fewer than keys with ``dedupe=True``)."""
        return len(self.keys) - len(self._primary) - self.cached

    @property
    def sharing(self) -> bool:
        """Whether any line answers several keys (``dedupe=True`` found repeated requests)."""
        return bool(self._shared)

    def primary(self, index: int) -> int:
        """The index of the first key of the line ``index`` travels on (itself, usually)."""
        return self._primary.get(index, index)

    def shared(self, index: int) -> list[int]:
        """The other keys answered by the line of key ``index`` (a line's first key)."""
        return self._shared.get(index, [])

    def cached_keys(self) -> list[str]:
        """The keys answered from the answer cache (no input line of their own)."""
        return [self.keys[index] for index in self._by_cache.values()]

    def cached_index(self, digest: str) -> int | None:
        """The index of the key a cached answer's ``cache_digest`` names, or ``None``."""
        if len(digest) != 33 or digest[0] != "c":
            return None
        try:
            return self._by_cache.get(_number(digest))
        except ValueError:
            return None

    def _digest_index(self, digest: str) -> int | None:
        if len(digest) != 33 or digest[0] != "k":
            return None
        try:
            return self._digests.get(_number(digest))
        except ValueError:
            return None

    def find_digest(self, raw: bytes) -> int | None:
        """The index of the key named by the first id field found in a raw (unparseable) line.

        Only a digest that is the value of a ``custom_id`` or ``vb_key`` field counts: the same
        digest quoted in a response's text (its quotes escaped) names no key.
        """
        for match in self._ID_IN_LINE.finditer(raw):
            index = self._digest_index(match.group(1).decode("ascii"))
            if index is not None:
                return index
        return None

    def match(self, row: Mapping[str, Any], taken: Container[int] = ()) -> int | None:
        """The index of the key an output row answers, or ``None``.

        Tried in order: the digest in ``custom_id`` or the ``vb_key`` sibling field, the digest in
        the echoed request's labels, then, for a row that carries no id at all, the canonical
        digest of the echoed request (the first key with that request not yet ``taken``, so
        identical requests each get one row).
        """
        index = self.match_id(row)
        if index is None and not self.carries_id(row):
            return self.match_echo(row, taken)
        return index

    def match_id(self, row: Mapping[str, Any]) -> int | None:
        """The index of the key whose digest the row carries (``custom_id``, ``vb_key``, label)."""
        for name in ("custom_id", KEY_FIELD, EMBEDDING_KEY_FIELD):  # nearly every row has one
            value = row.get(name)
            if type(value) is str and len(value) == 33 and value[0] == "k":
                # _digest_index, without its calls: once per output row.
                try:
                    index = self._digests.get(int(value[1:], 16))
                except ValueError:
                    continue
                if index is not None:
                    return index
        request = row.get("request")
        if not isinstance(request, Mapping):
            return None
        labels = request.get("labels")
        if isinstance(labels, Mapping):
            value = labels.get(KEY_FIELD)
            if isinstance(value, str):
                index = self._digest_index(value)
                if index is not None:
                    return index
        return None

    @staticmethod
    def carries_id(row: Mapping[str, Any]) -> bool:
        """Whether the row carries an id (a string in ``custom_id``, ``vb_key`` or its label).

        A row that carries one answers the key it names or none: when ``match_id`` finds no key,
        the row is another job's (or damaged), and must not take a key by its echoed request.
        """
        if (
            type(row.get("custom_id")) is str
            or type(row.get(KEY_FIELD)) is str
            or type(row.get(EMBEDDING_KEY_FIELD)) is str
        ):
            return True
        request = row.get("request")
        labels = request.get("labels") if isinstance(request, Mapping) else None
        return isinstance(labels, Mapping) and isinstance(labels.get(KEY_FIELD), str)

    def echo_shared(self, index: int) -> bool:
        """Whether other keys' requests have the canonical digest of key ``index``'s (after a
        ``match_echo``): a row matched by that echo may be any of theirs."""
        canonical = self._canonical[index]
        group = self._by_canonical.get(canonical, ()) if self._by_canonical else ()
        return len(group) > 1

    def match_echo(self, row: Mapping[str, Any], taken: Container[int] = ()) -> int | None:
        """The first key not yet ``taken`` whose request the row echoes (by canonical digest).

        The echo may be an object or a JSON string holding one (read within ``_json``'s bounds),
        under ``request``, or under ``instance`` (the older prediction rows of the text-embedding
        models, ``_requests.embedding_text``, echo their whole line there).
        """
        request = row.get("request")
        if request is None:
            request = row.get("instance")
        if isinstance(request, str):
            try:
                request = load_json(request)
            except ValueError:  # not JSON, or nested deeper than any staged request
                return None
        if not isinstance(request, Mapping):
            return None
        try:
            canonical = int(canonical_digest(request)[:16], 16)
        except ValueError:  # nested deeper than any staged request
            return None
        if self._by_canonical is None:
            self._by_canonical = {}
            for index, staged in enumerate(self._canonical):
                if staged:
                    self._by_canonical.setdefault(staged, []).append(index)
        for index in self._by_canonical.get(canonical, ()):
            if index not in taken:
                return index
        return None


def parse_key_record(raw: bytes) -> tuple[str, str, str]:
    """``[key, digest, canonical]`` of one key-map line; ``ValueError`` if it is not one."""
    plain = _PLAIN_RECORD.fullmatch(raw)
    if plain is not None:  # the usual record: read without a JSON parser, the same answer
        try:
            key = plain.group(1).decode("utf-8", "surrogatepass")  # as json.loads decodes
        except UnicodeDecodeError:
            pass  # json.loads refuses it too, below
        else:
            return key, plain.group(2).decode("ascii"), plain.group(3).decode("ascii")
    try:
        record = load_json(raw)  # depth measured before parsing, never met at the limit
    except ValueError:
        raise ValueError("not a key record (not JSON)") from None
    if (
        type(record) is not list
        or len(record) != 3
        or not all(type(v) is str for v in record)
        or not record[0]
        or not _DIGEST.fullmatch(record[1].encode("utf-8", "replace"))
        or (record[2] and not _HEX32.fullmatch(record[2]))
    ):
        raise ValueError("not a key record ([key, digest, canonical digest])")
    return record[0], record[1], record[2]


_HEX32 = re.compile(r"[0-9a-f]{32}")
# A key record as written (compact, a key with no escape, quote or control character): every
# one of a job's up to 200,000 records is read before its first result.
_PLAIN_RECORD = re.compile(rb'\["([^"\\\x00-\x1f]+)","(k[0-9a-f]{32})","((?:[0-9a-f]{32})?)"\]')
# The same, a line each in a batch; digests matched as any 32 bytes (quicker), then held to hex.
_PLAIN_RECORDS = re.compile(rb'^\["([^"\\\x00-\x1f]+)","k(.{32})","((?:.{32})?)"\]$', re.M)
_HEX = b"0123456789abcdef"


def _number(digest: str) -> int:
    """The 128 bits of a digest as an integer: half the memory of the string, and all its bits.

    All of them: a row's id that shares only a prefix with a key's digest names another key (or
    none). ``int`` also reads other spellings of the same number (upper case, ``_``, a sign), never
    a different one; anything else that is not hex is a ``ValueError``.
    """
    return int(digest[1:], 16)
