"""How a run cuts its requests into shards: at most ``shard_size`` rows and one job's limits
(pure; the lines are read as they are cut).

One job's limits are the model's (``_providers.job_limits``: the catalogue's where it documents
them, else vertexbatch's defaults); a plan cuts a run the same way (``_plans.estimate``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .._requests.dedupe import dedupe as dedupe_lines
from .._requests.lines import StagedLine
from .._rules import Limits

__all__ = ["Shards"]


class Shards:
    """Cut one stream of lines into shards of at most ``size`` rows, ``limits.rows`` rows and
    ``limits.input_bytes`` bytes (a model's: ``job_limits``)."""

    def __init__(
        self, lines: Iterable[StagedLine], size: int, limits: Limits, dedupe: bool = False
    ) -> None:
        self._lines = iter(lines)
        self._input_bytes = limits.input_bytes
        self._size = min(size, limits.rows)
        self._dedupe = dedupe
        self._next: StagedLine | None = next(self._lines, None)

    def more(self) -> bool:
        return self._next is not None

    def take(self) -> Iterator[StagedLine]:
        """The next shard's lines (its keys, deduplicated within the shard with ``dedupe``)."""
        return dedupe_lines(self._take()) if self._dedupe else self._take()

    def _take(self) -> Iterator[StagedLine]:
        rows = size = 0
        while self._next is not None and rows < self._size:
            if rows and size + len(self._next.data) > self._input_bytes:
                return
            line, self._next = self._next, None
            rows += 1
            size += len(line.data)
            yield line
            self._next = next(self._lines, None)
