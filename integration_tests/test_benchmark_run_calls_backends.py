"""The run-step calls benchmark counts the same on fake-gcs-server's filesystem backend (its
default: staging linear in the shards) as on the memory backend (its old path, quadratic)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from benchmarks import run_calls

_SHARDS = 20


def _counts(rows: list[run_calls.Row]) -> list[tuple[str, Counter[str], Counter[str]]]:
    """Each step's name, Vertex calls and GCS requests by kind: all but its seconds."""
    return [(name, calls, requests) for name, calls, requests, _ in rows]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_every_step_makes_the_same_calls_and_requests_on_both_backends(tmp_path: Path) -> None:
    """At 20 shards each step's Vertex calls and GCS requests, by operation and kind, are the
    same whether fake-gcs-server keeps its objects on disk or in memory; and the filesystem run
    did keep them on disk (each shard's staged objects are files under its state directory)."""
    on_disk = run_calls.measure([_SHARDS], "filesystem", state_dir=tmp_path)
    staged = {
        leaf: len(list(tmp_path.glob(f"gcs/*/bench/calls-{_SHARDS}.s*/{leaf}")))
        for leaf in ("input.jsonl", "keys.jsonl", "manifest.json")
    }
    assert staged == dict.fromkeys(staged, _SHARDS)
    in_memory = run_calls.measure([_SHARDS], "memory")
    assert _counts(on_disk[_SHARDS]) == _counts(in_memory[_SHARDS])
    assert sum(on_disk[_SHARDS][0][1].values()) == 1  # the first status: one listing


def test_an_unknown_backend_is_refused_naming_it() -> None:
    """``measure`` refuses a backend fake-gcs-server does not have, before starting a stack."""
    with pytest.raises(ValueError, match=r"gcs must be one of .*got 'disk'"):
        run_calls.measure([1], "disk")
