"""Stack and job options: how fast jobs run, and how their output rows are shaped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["ClaudeErrorShape", "ClaudeSuccessShape", "JobOptions", "Timing"]

ClaudeSuccessShape = Literal["object", "string", "body"]
ClaudeErrorShape = Literal["status_string", "status_object", "error_envelope"]

CLAUDE_SUCCESS_SHAPES: tuple[str, ...] = ("object", "string", "body")
CLAUDE_ERROR_SHAPES: tuple[str, ...] = ("status_string", "status_object", "error_envelope")


@dataclass(frozen=True, slots=True)
class Timing:
    """How a job moves through its states.

    Args:
        pending_seconds: time a job stays PENDING before it runs.
        row_seconds: time each row takes while RUNNING.
        expire_seconds: a job not terminal this long after creation ends JOB_STATE_EXPIRED,
            keeping the rows done so far. None: never.
        incremental_every: while RUNNING, write `incremental_predictions/predictions_<k>.jsonl`
            after every N rows. 0: never.
    """

    pending_seconds: float = 0.0
    row_seconds: float = 0.0
    expire_seconds: float | None = None
    incremental_every: int = 0

    def __post_init__(self) -> None:
        if self.pending_seconds < 0 or self.row_seconds < 0:
            raise ValueError("pending_seconds and row_seconds must be >= 0")
        if self.expire_seconds is not None and self.expire_seconds < 0:
            raise ValueError("expire_seconds must be >= 0 or None")
        if self.incremental_every < 0:
            raise ValueError("incremental_every must be >= 0")


@dataclass(frozen=True, slots=True)
class JobOptions:
    """How a job's output rows look (the parts of the wire format that are unconfirmed or optional).

    Args:
        echo_labels: keep `labels` in the echoed Gemini `request`.
        claude_success_shape: "object" (`"response": {Message}`), "string" (the Message as a
            JSON string) or "body" (`"response": {"body": {Message}}`).
        claude_error_shape: "status_string" (`"status": "Too Many Requests: {json}"`),
            "status_object" (`"status": {"code", "message"}`) or "error_envelope"
            (an Anthropic error object in `response` and a short `status`).
        shuffle: write rows in a seeded shuffled order, never input order.
    """

    echo_labels: bool = True
    claude_success_shape: ClaudeSuccessShape = "object"
    claude_error_shape: ClaudeErrorShape = "status_string"
    shuffle: bool = True

    def __post_init__(self) -> None:
        if self.claude_success_shape not in CLAUDE_SUCCESS_SHAPES:
            raise ValueError(f"claude_success_shape must be one of {CLAUDE_SUCCESS_SHAPES}")
        if self.claude_error_shape not in CLAUDE_ERROR_SHAPES:
            raise ValueError(f"claude_error_shape must be one of {CLAUDE_ERROR_SHAPES}")
