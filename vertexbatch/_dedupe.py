"""Dedupe: stage each distinct request once, and give its answer to every key that sent it.

Pure. Requests are equal when their canonical digests are (``_keymap.canonical_digest``: key
order, nulls and Gemini labels do not count). The first key of a request is staged as usual;
each later key with the same request becomes an *alias*: a key record that carries the first
key's digest and no input line. ``KeyMap`` then leads the one answered line to all its keys, and
``shared_result`` gives each of them the same outcome under its own key.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace

from ._errors import ResultError
from ._lines import StagedLine
from ._models import Result

__all__ = ["alias_of", "dedupe", "is_alias", "shared_result"]


def is_alias(line: StagedLine) -> bool:
    """Whether ``line`` is a key record only: its request is staged under an earlier key."""
    return not line.data


def alias_of(line: StagedLine, first: StagedLine) -> StagedLine:
    """``line``'s key, travelling on ``first``'s staged line."""
    return StagedLine(key=line.key, digest=first.digest, canonical=first.canonical, data=b"")


def dedupe(lines: Iterable[StagedLine]) -> Iterator[StagedLine]:
    """The lines with each repeated request turned into an alias of its first occurrence.

    Streams: holds one digest pair per distinct request, never the lines.
    """
    first: dict[str, StagedLine] = {}
    for line in lines:
        if not line.canonical or is_alias(line):
            yield line
            continue
        earlier = first.get(line.canonical)
        if earlier is None:
            # Only what the alias needs is kept, not the line's bytes.
            first[line.canonical] = StagedLine(line.key, line.digest, line.canonical, b"")
            yield line
        else:
            yield alias_of(line, earlier)


def shared_result(result: Result, key: str) -> Result:
    """``result`` (the answer of a shared line) for another key that sent the same request."""
    error = result.error
    if error is not None:
        error = _rekeyed(error, key)
    return replace(result, key=key, error=error, shared=True)


def _rekeyed(error: ResultError, key: str) -> ResultError:
    # Rebuilt through its own constructor, as unpickling does: the same fields, another key.
    state = {**error._state(), "key": key}
    return type(error)(*error.args, **state)
