"""The upload benchmark's fit of fake-gcs-server's per-chunk re-checksum cost."""

from __future__ import annotations

import re

from benchmarks.upload_chunks import _rechecksum

MIB = 2**20


def _chunks(per_gib: float, alone: float, sizes: list[int]) -> list[tuple[str, float, float, int]]:
    """Chunk times that grow ``per_gib`` seconds per GiB already stored, exactly."""
    chunks, stored = [], 0
    for size in sizes:
        chunks.append(("input.jsonl", 0.0, alone + per_gib * stored / 2**30, size))
        stored += size
    return chunks


def test_the_fit_recovers_the_cost_per_stored_gib_and_its_total() -> None:
    chunks = _chunks(1.25, 0.05, [16 * MIB] * 9 + [4 * MIB])
    chunks[-1] = ("input.jsonl", 0.0, 3.0, 4 * MIB)  # the last also commits: left out of the fit
    line = _rechecksum(chunks)
    match = re.fullmatch(
        r"re-checksum: ([\d.]+) s per GiB already stored, per chunk \(a chunk alone ([\d.]+) s\); "
        r"([\d.]+) s of this upload",
        line,
    )
    assert match, line
    assert match.group(1) == "1.250" and match.group(2) == "0.050"
    # 0 + 16 + ... + 144 MiB stored before the ten chunks: 720 MiB, at 1.25 s per GiB.
    assert match.group(3) == f"{1.25 * 720 / 1024:.2f}" == "0.88"


def test_too_few_chunks_are_not_fitted() -> None:
    assert _rechecksum(_chunks(1.0, 0.1, [16 * MIB] * 3)) == "re-checksum: too few chunks to fit"
    assert _rechecksum([]) == "re-checksum: too few chunks to fit"
