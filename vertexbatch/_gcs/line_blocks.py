"""An object's bytes, read range by range, cut into lines (pure).

``line_blocks`` gives the lines a range completes together with the range itself, so that a
reader can check a whole range in one pass where it would check each line (a range of 4 MiB
holds a few thousand output lines): every line of a block but its first ``joined`` ones is a
piece of ``data``. ``Staging.read_lines`` gives the lines alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

__all__ = ["LineBlock", "line_blocks"]


class LineBlock(NamedTuple):
    """Lines in the object's order, and the range they were cut from."""

    data: bytes
    """The range read (``b""`` for a block of one line held across ranges)."""
    lines: list[bytes]
    """The lines: whole ones, and a line longer than ``max_line`` as its first ``max_line``
    bytes and a NUL byte (which no JSON text holds, so it reads as a damaged line)."""
    joined: int
    """How many of the first lines are not a piece of ``data`` between newlines (0 or 1):
    begun in a range before it, or cut from bytes held across ranges. Every other line is one
    (or the first ``max_line`` bytes of one and a NUL byte)."""


def line_blocks(ranges: Iterable[bytes], max_line: int | None = None) -> Iterator[LineBlock]:
    """The lines of the bytes ``ranges`` give in order, a block for each range that completes
    one; the last line needs no newline after it.

    With ``max_line``, no more than ``max_line`` bytes of one line are held: a longer line is
    yielded cut (``LineBlock.lines``) and the rest of it passed over as it streams by.
    """
    tail: list[bytes] = []  # the line being read, in pieces while it spans reads
    held = 0
    skipping = False  # passing over the rest of a line cut at max_line
    for data in ranges:
        lines = data.split(b"\n")
        last = lines.pop()
        if lines:
            joined = 0
            if skipping:
                del lines[0]
                skipping = False
            elif tail:
                tail.append(lines[0])
                lines[0] = b"".join(tail)
                joined = 1
            tail, held = [], 0
            if max_line is not None and max(map(len, lines), default=0) > max_line:
                lines = [
                    line if len(line) <= max_line else line[:max_line] + b"\0" for line in lines
                ]
            if lines:
                yield LineBlock(data, lines, joined)
        if last and not skipping:
            tail.append(last)
            held += len(last)
            if max_line is not None and held > max_line:
                yield LineBlock(b"", [b"".join(tail)[:max_line] + b"\0"], 1)
                tail, held, skipping = [], 0, True
    if tail:
        yield LineBlock(b"", [b"".join(tail)], 1)
