"""Long-running operations (of deletes): google.longrunning.Operation JSON, get, list and wait.

A delete answers with an Operation that is `done` at once, or, with `Timing(delete_seconds=S)`,
S seconds later: until then it has no `done` and no `response`, so a client polls it. The routes
are those the SDKs request: `/ui/{name=projects/*/locations/*/operations/*}` (aiplatform_v1's
REST transport, for `get_operation`, `list_operations`, `wait_operation` and an LRO's
`result()`), besides `/v1/` and `/v1beta1/`.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from vertexbatch.emulator._errors import ApiError, bad_request
from vertexbatch.emulator._model import rfc3339

__all__ = ["Operations"]

_DURATION = re.compile(r"(\d+(?:\.\d+)?)s")
_KEPT = 10_000  # operations remembered, oldest forgotten first


@dataclass(frozen=True, slots=True)
class _Operation:
    name: str
    location: str
    api_version: str
    created: datetime
    seconds: float  # how long it takes
    done_at: float  # time.monotonic()

    def to_json(self, now: float) -> dict[str, Any]:
        done = now >= self.done_at
        update = rfc3339(self.created + timedelta(seconds=self.seconds if done else 0.0))
        out: dict[str, Any] = {
            "name": self.name,
            "metadata": {
                "@type": f"type.googleapis.com/google.cloud.aiplatform.{self.api_version}."
                "DeleteOperationMetadata",
                "genericMetadata": {"createTime": rfc3339(self.created), "updateTime": update},
            },
        }
        if done:
            out["done"] = True
            out["response"] = {"@type": "type.googleapis.com/google.protobuf.Empty"}
        return out


class Operations:
    """The operations of one stack (thread-safe)."""

    def __init__(self, project_number: str) -> None:
        self._project_number = project_number
        self._lock = threading.Condition()
        self._operations: dict[str, _Operation] = {}

    def start_delete(self, location: str, api_version: str, seconds: float) -> dict[str, Any]:
        """A new delete operation, done `seconds` from now; returns its JSON."""
        operation_id = str(secrets.randbelow(9 * 10**18) + 10**18)
        operation = _Operation(
            name=f"projects/{self._project_number}/locations/{location}/operations/{operation_id}",
            location=location,
            api_version=api_version,
            created=datetime.now(UTC),
            seconds=seconds,
            done_at=time.monotonic() + seconds,
        )
        with self._lock:
            self._operations[operation_id] = operation
            while len(self._operations) > _KEPT:
                del self._operations[next(iter(self._operations))]
        return operation.to_json(time.monotonic())

    def _find(self, location: str, operation_id: str) -> _Operation:
        with self._lock:
            found = self._operations.get(operation_id)
        if found is None or found.location != location:
            raise ApiError(404, "Operation not found.", "NOT_FOUND")
        return found

    def get(self, location: str, operation_id: str) -> dict[str, Any]:
        """The operation's JSON now."""
        return self._find(location, operation_id).to_json(time.monotonic())

    def wait(self, location: str, operation_id: str, body: Any) -> dict[str, Any]:
        """Block until the operation is done or the request's `timeout` ("5s") passes."""
        operation = self._find(location, operation_id)
        timeout = body.get("timeout") if isinstance(body, dict) else None
        limit = 60.0
        if timeout is not None:
            match = _DURATION.fullmatch(str(timeout))
            if match is None:
                raise bad_request(f'Invalid timeout {str(timeout)[:50]!r}: expected e.g. "5s".')
            limit = float(match.group(1))
        pause = min(limit, max(0.0, operation.done_at - time.monotonic()))
        if pause:
            with self._lock:  # woken by nothing: a bounded wait on the operation's own clock
                self._lock.wait(pause)
        return operation.to_json(time.monotonic())

    def list(self, location: str) -> dict[str, Any]:
        """The location's operations, oldest first (`{}` for none)."""
        now = time.monotonic()
        with self._lock:
            found = [op.to_json(now) for op in self._operations.values() if op.location == location]
        return {"operations": found} if found else {}
