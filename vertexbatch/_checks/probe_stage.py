"""Staging a probe job's rows in two parts and creating it, as ``submit`` stages a large input.

A user's own project settles whether a provider takes a job of several input files and reads
them all (``inputConfig.gcsSource.uris``, docs/guarantees.md "Staged parts"): a create refused
(400: no job exists, so nothing is doubled) is made once more with the rows in one file, and
the report says how many files the job was created with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["create_in_parts", "stage_parts"]


def stage_parts(gcs: Any, bucket: str, folder: str, parts: list[bytes], stem: str) -> list[str]:
    """Upload each part create-only as ``folder/stem-N.jsonl``; their URIs, in order."""
    uris = []
    for number, part in enumerate(parts):
        blob = gcs.bucket(bucket).blob(f"{folder}/{stem}-{number}.jsonl")
        blob.upload_from_string(part, content_type="application/jsonl", if_generation_match=0)
        uris.append(f"gs://{bucket}/{blob.name}")
    return uris


def create_in_parts(
    create: Callable[[dict[str, Any]], dict[str, Any]],
    body: dict[str, Any],
    parts: list[bytes],
    stage: Callable[[list[bytes], str], list[str]],
    say: Callable[[str], None],
) -> tuple[dict[str, Any], int]:
    """``create(body)`` with the input staged in ``parts``; the created job and the number of
    input files it was created with (a create refused with 400 is made once with one file)."""
    from google.api_core import exceptions as api_exceptions

    body["inputConfig"]["gcsSource"] = {"uris": stage(parts, "input")}
    try:
        return create(body), len(parts)
    except api_exceptions.BadRequest as exc:
        say(f"a job of {len(parts)} input files was refused ({exc.message}); one file instead")
    body["inputConfig"]["gcsSource"] = {"uris": stage([b"".join(parts)], "whole")}
    return create(body), 1
