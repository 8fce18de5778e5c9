"""A manifest's completions: what a submission records in the manifest beside its rows, once
they are staged (pure).

Staging writes the manifest create-only after the rows (``_staged.write.stage``), through one
``amend`` that each layer wraps: the answers staged from the cache (``_cache.submission``), the
answer schema (``with_schema``), the BigQuery table the rows were read from (``with_source``)
and the canary's usage (``with_canary``). A completion is written only with a new manifest: a
submission that adopts a manifest already there records nothing more.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from .._schemas.check import Schema
from .manifest import Manifest
from .usage import TierUsage

__all__ = ["Amend", "with_canary", "with_schema", "with_source"]

Amend = Callable[[Manifest], Manifest]


def with_source(amend: Amend | None, source: Callable[[], tuple[str, str]] | None) -> Amend | None:
    """``amend``, then the BigQuery table the rows were read from and its snapshot recorded
    (``source()`` gives both once the rows are read)."""
    if source is None:
        return amend

    def amended(manifest: Manifest) -> Manifest:
        table, snapshot = source()
        done = amend(manifest) if amend is not None else manifest
        return replace(done, source=table, snapshot=snapshot)

    return amended


def with_schema(amend: Amend | None, schema: Schema | None) -> Amend | None:
    """``amend`` (a manifest's completion, or ``None``), then the answer schema recorded."""
    if schema is None:
        return amend

    def amended(manifest: Manifest) -> Manifest:
        return replace(amend(manifest) if amend is not None else manifest, schema=schema)

    return amended


def with_canary(amend: Amend | None, usage: TierUsage | None) -> Amend | None:
    """``amend``, then the usage of the canary's answers recorded, per tier they were billed at
    (``None`` or empty: no canary was sent, or none of its answers reported usage).

    Written with the manifest, never before it: a canary that passed and whose staging then
    failed leaves nothing, and the retry (no manifest yet) sends its own canary and records
    that one; an adopted submission sends none and keeps the first one's record."""
    if not usage:
        return amend

    def amended(manifest: Manifest) -> Manifest:
        return replace(amend(manifest) if amend is not None else manifest, canary=dict(usage))

    return amended
