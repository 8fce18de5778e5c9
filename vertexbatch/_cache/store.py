"""The answer cache in GCS: ok answers keyed by provider, model and exact request digest.

Layout, under the client's bucket and prefix (``_cache`` cannot be a submission id)::

    PREFIX/_cache/PROVIDER/MODEL/PP/TTTTTTTTTT-WRITER.jsonl
    PREFIX/_cache/kms-KKKKKKKKKKKKKKKK/PROVIDER/MODEL/...   (a kms_key submission's)

A submission with ``kms_key`` (its ``Staging`` keyed) reads and writes the cache of that key
only, ``KKKKKKKKKKKKKKKK`` the first 16 hex digits of the key name's SHA-256, every object written
with the key: its answers are never merged into an object written without it, nor read by a
submission that does not name the key (whoever may use the key can still read them).

``PP`` is the first two hex digits of the exact digest (``_requests.dedupe.exact_digest``; 256
shards), ``TTTTTTTTTT`` the Unix time the entries are dated by (a job's first fill: ``CacheFill``)
and ``WRITER`` the submission id whose results filled them (``ID.pN`` for a part): one object per
shard per completed job, written create-only, so two writers never touch one object and a
writer that runs twice finds its objects there. Each line is one
entry::

    {"d": DIGEST, "m": MODEL, "t": UNIX_TIME, "h": HASH_OF_RESPONSE, "r": RESPONSE}

A lookup of many requests lists the model's folder once and reads only the shards its digests
fall in, several at a time: a few hundred reads at most, never one per request. Each filling job
adds an object to a shard; once a shard holds more than ``COMPACT_AT`` objects older than
``COMPACT_MARGIN`` that no merged object holds yet, a submit's lookup merges them into
``PP/merged/TTTTTTTTTT-HASH.jsonl``: a header line ``{"n": ENTRIES, "replaces": [NAMES]}``
naming exactly the objects it holds (the previous merged object's among them), then the newest
entry of each digest from them, each with its own write time ``t``. Later lookups read the
newest merged object and every object its header does not name, whatever the times in their
names (a writer's clock, or a fill slower than the margin, never hides an object). A merged
object that is damaged (a header or a wanted entry that does not parse, or fewer entries than
its header counts) is passed over with a warning, and the objects it named are read instead
(they still exist). An entry that does not parse, names another model or shard, or whose
response does not hash to ``h`` is a miss, with a warning that names the object, never its
content. Entries older than the caller's ``ttl`` are misses too (the time in the object name
skips whole objects unread). Retention is the caller's: GCS lifecycle rules on
``PREFIX/_cache/`` (see docs/cost.md); a merged object's ``customTime`` is its oldest entry's
write time, so a ``daysSinceCustomTime`` rule deletes it once that entry is due, and lookups
fall back to the younger objects it named.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from .._errors import InvalidRequestError, VertexBatchError
from .._gcs.staging import JSONL, Staging
from .._json import load_json
from .._retry import transport_errors
from .._values import Provider
from .entry import Entry, encode_response, entry_text, header_line, parse_entry, text_hash

__all__ = [
    "CACHE_FOLDER",
    "AnswerCache",
    "check_ttl",
    "storage_errors",
]

logger = logging.getLogger("vertexbatch")

CACHE_FOLDER = "_cache"
# Shards read at once: GCS reads are latency-bound, and a lookup touches at most 256 per writer.
_READERS = 16
_NAME = re.compile(
    r"(?P<pp>[0-9a-f]{2})/(?P<time>[0-9]{10})-(?P<writer>[a-z0-9][a-z0-9._-]*)\.jsonl"
)
_MERGED = re.compile(r"(?P<pp>[0-9a-f]{2})/merged/(?P<time>[0-9]{10})-[0-9a-f]{16}\.jsonl")
# A shard holding more objects than this is merged by the next lookup that may write.
COMPACT_AT = 8
# Only objects older than this (seconds) are merged: a fill still writing (its objects are
# named by the time it began) is never left out of a merge that stands for its time.
COMPACT_MARGIN = 600


def storage_errors() -> tuple[type[BaseException], ...]:
    """The errors of a failed storage call (after retries): what a best-effort cache write
    passes over. Anything else is a bug, and raises.

    The transport errors (``_retry.transport_errors``), then what GCS answered (an API error,
    a transfer google-cloud-storage's media library refused or found corrupted) and the
    package's own. Built when a write fails: the storage libraries are imported by then.
    """
    from google.api_core import exceptions as api_exceptions
    from google.resumable_media import common as media_common

    return (
        *transport_errors(),
        api_exceptions.GoogleAPICallError,
        api_exceptions.RetryError,
        media_common.InvalidResponse,
        media_common.DataCorruption,
        OSError,
        VertexBatchError,
    )


def _parse_header(raw: bytes) -> tuple[int, list[str]] | None:
    """A merged object's header line: its entry count and the names it replaces."""
    try:
        header = load_json(raw)
    except ValueError:
        return None
    if not isinstance(header, dict) or set(header) != {"n", "replaces"}:
        return None
    count, names = header["n"], header["replaces"]
    if type(count) is not int or not isinstance(names, list):
        return None
    if not all(isinstance(name, str) for name in names):
        return None
    return count, names


@dataclass(frozen=True, slots=True)
class _Object:
    """One entry object of a shard, as listed: the time in its name, its name under the model's
    folder (``PP/...``, as a merged object's header names it) and its URI."""

    time: int
    name: str
    uri: str
    merged: bool


@dataclass(frozen=True, slots=True)
class _Merged:
    """What a lookup read of a shard's newest merged object: its wanted entries, and the
    objects it holds (itself included), or ``None`` when it was damaged."""

    entries: list[Entry]
    replaces: frozenset[str] | None


def check_ttl(ttl: object) -> timedelta | None:
    """``ttl`` if it is ``None`` or a positive ``timedelta``; else ``InvalidRequestError``."""
    if ttl is None or (isinstance(ttl, timedelta) and ttl > timedelta(0)):
        return ttl
    raise InvalidRequestError(
        f"cache_ttl must be a positive datetime.timedelta or None, got {ttl!r}", field="cache_ttl"
    )


class AnswerCache:
    """The cache of one provider and model under a client's bucket and prefix."""

    def __init__(
        self,
        staging: Staging,
        provider: Provider,
        model: str,
        *,
        ttl: timedelta | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._staging = staging
        self._model = model
        self._ttl = ttl
        self._clock = clock
        folder = staging.folder(CACHE_FOLDER)
        space = f"{provider}/{model}"
        if staging.kms_key:  # a key's answers live apart, every object written with it
            digest = hashlib.sha256(staging.kms_key.encode()).hexdigest()[:16]
            space = f"kms-{digest}/{space}"
        self._path = folder.name(space)
        self.uri = folder.uri(space)

    def lookup(self, digests: Iterable[str], *, compact: bool = False) -> dict[str, Entry]:
        """The entries the cache holds for ``digests`` (the newest of each), read shard by shard.

        With ``compact`` (a submit's lookup; never a plan's, which writes nothing), a wanted
        shard holding more than ``COMPACT_AT`` objects older than ``COMPACT_MARGIN`` that its
        newest merged object does not hold is merged as it is read: those objects and the
        merged one go into one create-only ``PP/merged/`` object whose header names them, and
        later lookups read it and the objects it does not name instead of them all. A merge
        that fails on storage is a warning.

        Raises:
            google.api_core.exceptions.GoogleAPICallError: listing or reading failed after
                retries (an object deleted between listing and reading is a miss).
        """
        wanted: dict[str, set[str]] = defaultdict(set)
        for digest in digests:
            wanted[digest[:2]].add(digest)
        if not wanted:
            return {}
        now = int(self._clock())
        oldest = -1 if self._ttl is None else int(now - self._ttl.total_seconds())
        cut = now - COMPACT_MARGIN
        listed = self._listed()
        found: dict[str, Entry] = {}

        def keep(entries: list[Entry]) -> None:
            for entry in entries:
                held = found.get(entry.digest)
                if held is None or entry.created > held.created:
                    found[entry.digest] = entry

        heads = {
            shard: max(merged, key=lambda o: (o.time, o.name))
            for shard in wanted
            if (merged := [o for o in listed.get(shard, []) if o.merged])
        }
        plain: list[tuple[_Object, str]] = []  # (object, shard) read for the wanted entries only
        # (shard, newest merged object, is it sound?, objects to merge, names it held)
        merging: list[tuple[str, _Object | None, bool, list[_Object], set[str]]] = []
        with ThreadPoolExecutor(max_workers=_READERS) as pool:
            read_heads = dict(
                zip(
                    heads,
                    pool.map(lambda s: self._read_merged(heads[s], s, wanted[s], oldest), heads),
                    strict=True,
                )
            )
            for shard in wanted:
                objects = listed.get(shard, [])
                head = heads.get(shard)
                held: frozenset[str] = frozenset()
                sound = head is not None and read_heads[shard].replaces is not None
                if head is not None and not sound:  # damaged: its objects are read instead
                    objects = [o for o in objects if o is not head]
                elif head is not None:
                    keep(read_heads[shard].entries)
                    held = read_heads[shard].replaces or held
                rest = [o for o in objects if o.name not in held]
                eligible = [o for o in rest if o.time < cut]
                if compact and len(eligible) > COMPACT_AT:
                    present = {o.name for o in objects}
                    held_now = {n for n in held if n in present}
                    merging.append((shard, head, sound, eligible, held_now))
                    rest = [o for o in rest if o.time >= cut]
                plain.extend((o, shard) for o in rest if o.time >= oldest)
            for entries in pool.map(
                lambda o: self._read(o[0].uri, o[1], wanted[o[1]], oldest, header=o[0].merged),
                plain,
            ):
                keep(entries)
            for entries in pool.map(
                lambda m: self._merge(*m, cut=cut, wanted=wanted[m[0]], oldest=oldest), merging
            ):
                keep(entries)
        return found

    def _listed(self) -> dict[str, list[_Object]]:
        """The folder's entry objects by shard."""
        by_shard: dict[str, list[_Object]] = defaultdict(list)
        start = len(self.uri) + 1
        # ``list_names`` lists the folder (a trailing slash): ``gemini-2.5-flash`` never lists
        # ``gemini-2.5-flash-lite``.
        for uri, _, _ in self._staging.list_names(self.uri):
            rest = uri[start:]
            match = _NAME.fullmatch(rest)
            merged = match is None
            if merged:
                match = _MERGED.fullmatch(rest)
            if match is not None:  # else not an entry object: someone else's file
                by_shard[match["pp"]].append(_Object(int(match["time"]), rest, uri, merged))
        return by_shard

    def _read_merged(self, head: _Object, shard: str, wanted: set[str], oldest: int) -> _Merged:
        """The wanted entries of a merged object and the names it holds (itself among them);
        ``replaces`` is ``None``, with a warning naming the object, if it is damaged."""
        from google.api_core import exceptions as api_exceptions

        lines = iter(self._staging.read_lines(head.uri))
        entries: list[Entry] = []
        try:
            header = _parse_header(next(lines, b""))
            count = 0
            for raw in lines:
                if not raw.strip():
                    continue
                count += 1
                if not raw.startswith(b'{"d":"'):
                    header = None
                elif raw[6:38].decode("ascii", "replace") in wanted:
                    entry = parse_entry(raw, self._model, shard)
                    if entry is None:
                        header = None
                    elif entry.created >= oldest:
                        entries.append(entry)
        except api_exceptions.NotFound:  # deleted since the listing: its objects are read
            return _Merged([], None)
        if header is None or header[0] != count:
            logger.warning(
                "answer cache: merged object %s is damaged; the objects it merged are read instead",
                head.uri,
            )
            return _Merged([], None)
        return _Merged(entries, frozenset(header[1]) | {head.name})

    def _merge(
        self,
        shard: str,
        head: _Object | None,
        sound: bool,
        eligible: list[_Object],
        held: set[str],
        *,
        cut: int,
        wanted: set[str],
        oldest: int,
    ) -> list[Entry]:
        """Read ``eligible`` (and ``head``, the shard's newest merged object, if ``sound``)
        whole: the wanted entries, and one merged object of all their entries, whose header
        names them, what ``head`` held (``held``) and ``head`` itself (a damaged one too: the
        objects it named are read, never it)."""
        found: list[Entry] = []
        merged: dict[str, Entry] = {}
        sources = [*eligible, *([head] if head is not None and sound else [])]
        for source in sources:
            for entry in self._read(source.uri, shard, None, -1, header=source.merged):
                if entry.digest in wanted and entry.created >= oldest:
                    found.append(entry)
                kept = merged.get(entry.digest)
                if kept is None or entry.created > kept.created:
                    merged[entry.digest] = entry
        replaces = held | {o.name for o in sources} | ({head.name} if head else set())
        # Named after the newest merged object, whatever the clocks: it stands in for it.
        time_ = max(cut, head.time + 1 if head is not None else cut)
        try:
            self._write_merged(shard, time_, merged, sorted(replaces))
        except storage_errors() as exc:  # the lookup's answers stand; a later lookup merges
            logger.warning(
                "answer cache: shard %s of %s was not merged (%s)",
                shard,
                self.uri,
                type(exc).__name__,
            )
            logger.debug("answer cache: the merge of shard %s failed", shard, exc_info=True)
        return found

    def _write_merged(
        self, shard: str, time_: int, merged: dict[str, Entry], replaces: list[str]
    ) -> None:
        header = header_line(len(merged), replaces)
        text = header + b"".join(
            entry_text(digest, self._model, merged[digest].response, merged[digest].created)
            for digest in sorted(merged)
        )
        name = f"{self._path}/{shard}/merged/{time_:010d}-{text_hash(text)[:16]}.jsonl"
        oldest = min((entry.created for entry in merged.values()), default=time_)
        moment = datetime.fromtimestamp(oldest, UTC)
        # False: the same merge, written by a concurrent lookup
        self._staging.create(name, text, JSONL, custom_time=moment)
        logger.info(
            "answer cache: %d objects of shard %s of %s merged (%d entries)",
            len(replaces),
            shard,
            self.uri,
            len(merged),
        )

    def _read(
        self, uri: str, shard: str, wanted: set[str] | None, oldest: int, *, header: bool = False
    ) -> list[Entry]:
        """The entries of one object: the ``wanted`` ones (``None``: all), not older than
        ``oldest``. A merged object's first line (``header``) is its header, not an entry."""
        from google.api_core import exceptions as api_exceptions

        entries: list[Entry] = []
        damaged = 0
        try:
            lines = iter(self._staging.read_lines(uri))
            if header:
                next(lines, None)
            for raw in lines:
                if not raw.strip():
                    continue
                # Sorted keys: the digest is the line's first field, so an entry nobody asked
                # for is passed over before it is checked.
                if not raw.startswith(b'{"d":"'):
                    damaged += 1
                    continue
                if wanted is not None and raw[6:38].decode("ascii", "replace") not in wanted:
                    continue
                entry = parse_entry(raw, self._model, shard)
                if entry is None:
                    damaged += 1
                elif entry.created >= oldest:
                    entries.append(entry)
        except api_exceptions.NotFound:  # deleted since the listing (a lifecycle rule, say)
            return []
        if damaged:
            logger.warning(
                "answer cache: %d damaged entr%s in %s ignored (looked up as misses)",
                damaged,
                "y" if damaged == 1 else "ies",
                uri,
            )
        return entries

    def fill(self, writer: str, answers: Mapping[str, Mapping[str, Any]]) -> int:
        """Write ``answers`` (exact digest -> ok response) as ``writer``'s entries.

        One create-only object per shard; an object already there (the same writer before) is
        left as it is. Returns the entries written.
        """
        return self.fill_text(writer, {d: encode_response(r) for d, r in answers.items()})

    def fill_text(
        self, writer: str, texts: Mapping[str, bytes], *, created: int | None = None
    ) -> int:
        """``fill`` of answers given as their text (exact digest -> ``encode_response``'s),
        dated ``created`` (default: now). The object names are the writer's and the date's
        alone: the same writer and date again finds its objects there and writes nothing."""
        created = int(self._clock()) if created is None else created
        shards: dict[str, list[bytes]] = defaultdict(list)
        for digest in sorted(texts):
            shards[digest[:2]].append(entry_text(digest, self._model, texts[digest], created))

        def write(item: tuple[str, list[bytes]]) -> int:
            shard, lines = item
            name = f"{self._path}/{shard}/{created:010d}-{writer}.jsonl"
            return len(lines) if self._staging.create(name, lines, JSONL) else 0

        with ThreadPoolExecutor(max_workers=_READERS) as pool:
            written = sum(pool.map(write, shards.items()))
        logger.info("answer cache: %d entries written under %s by %s", written, self.uri, writer)
        return written
