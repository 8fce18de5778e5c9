"""A shard's online answers as written and read: ``online.jsonl``, past one piece in pieces.

The online fallback joins its parts into one object of every answer (``_runs.online``). That
object may be larger than is comfortable to hold (a shard's keys times an answer each), so it is
written in bounded pieces, each one create-only request (``Staging.create``) of at most the
staging's ``part_size`` (8 MiB) of whole rows::

    PREFIX/SHARD/online.jsonl                    the first piece: created last, it marks the
                                                 shard answered and names the later pieces
    PREFIX/SHARD/online-<tag>-00001.jsonl        the later pieces, in order

Answers that fit in one piece are ``online.jsonl`` alone, as an earlier version wrote them. Past
that, the later pieces go first and ``online.jsonl`` last, with custom metadata naming them: a
tag of this join (random: two holders joining at once, or one that died midway, never write the
same name) and their number. A join that dies before ``online.jsonl`` leaves later pieces that
nothing names; one that finds ``online.jsonl`` created by another left that one alone (its own
later pieces are unnamed too). Memory: two pieces (the first, held until last, and the one being
built).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable

from .._errors import InvalidRequestError
from .._gcs.staging import JSONL, Folder, Staging

__all__ = ["read_uris", "write_rows"]

# Custom metadata of online.jsonl: the tag of its later pieces, and how many there are.
_TAG = "vertexbatch-online-tag"
_COUNT = "vertexbatch-online-pieces"
_TAG_FORM = re.compile(r"[0-9a-f]{32}")


def _piece_leaf(stem: str, tag: str, index: int) -> str:
    return f"{stem}-{tag}-{index:05d}.jsonl"


def write_rows(staging: Staging, folder: Folder, leaf: str, rows: Iterable[bytes]) -> bool:
    """Write ``rows`` (whole lines) as ``leaf`` and its later pieces, create-only; ``True`` if
    this call created ``leaf``, ``False`` if it existed (its answers stand)."""
    stem = leaf.removesuffix(".jsonl")
    most = staging.part_size
    tag = uuid.uuid4().hex
    first: bytearray | None = None
    later = 0
    piece = bytearray()
    for row in rows:
        if piece and len(piece) + len(row) > most:
            if first is None:
                first = piece
            else:
                later += 1
                # Named by this join's tag: no other writer's name, so never found existing.
                staging.create(folder.name(_piece_leaf(stem, tag, later)), piece, JSONL)
            piece = bytearray()
        piece += row
    if first is None:
        return staging.create(folder.name(leaf), piece, JSONL)
    later += 1
    staging.create(folder.name(_piece_leaf(stem, tag, later)), piece, JSONL)
    metadata = {_TAG: tag, _COUNT: str(later)}
    return staging.create(folder.name(leaf), first, JSONL, metadata=metadata)


def read_uris(staging: Staging, folder: Folder, leaf: str) -> list[str] | None:
    """The URIs of ``leaf`` and the later pieces it names, in order; ``None`` if ``leaf`` does
    not exist.

    Raises:
        InvalidRequestError: ``leaf``'s metadata names its pieces in no form written here.
    """
    metadata = staging.custom_metadata(folder.name(leaf))
    if metadata is None:
        return None
    uris = [folder.uri(leaf)]
    if _TAG not in metadata and _COUNT not in metadata:
        return uris  # one piece
    tag, count = metadata.get(_TAG, ""), metadata.get(_COUNT, "")
    if not (_TAG_FORM.fullmatch(tag) and count.isdigit() and count.isascii() and int(count)):
        raise InvalidRequestError(
            f"{folder.uri(leaf)} names its later pieces in a form vertexbatch does not write "
            "(its metadata was edited): delete it to let the online fallback join its answers "
            "again",
            field="staging",
        )
    stem = leaf.removesuffix(".jsonl")
    uris += [folder.uri(_piece_leaf(stem, tag, i)) for i in range(1, int(count) + 1)]
    return uris
