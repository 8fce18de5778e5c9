"""The live suite's target: real Vertex when VERTEXBATCH_LIVE_* name a project, else the stack.

With VERTEXBATCH_LIVE_PROJECT, VERTEXBATCH_LIVE_LOCATION and VERTEXBATCH_LIVE_BUCKET set, the
scenario runs against real Vertex AI with application default credentials (docs/testing.md says
what it costs); with none set it runs against the session's local stack, so the suite is known
to work wherever the README's test command runs. Setting only some of them is an error.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

import vertexbatch as vb
from vertexbatch.emulator import LocalStack

LIVE = ("VERTEXBATCH_LIVE_PROJECT", "VERTEXBATCH_LIVE_LOCATION", "VERTEXBATCH_LIVE_BUCKET")
CLAUDE_MODEL = "VERTEXBATCH_LIVE_CLAUDE_MODEL"
GEMINI_MODEL = "VERTEXBATCH_LIVE_GEMINI_MODEL"
TIMEOUT = "VERTEXBATCH_LIVE_TIMEOUT"


def live_settings(env: Mapping[str, str]) -> dict[str, str] | None:
    """The live project's settings, None when none is set.

    Raises:
        pytest.UsageError: only some of the three variables are set.
    """
    given = {name: env.get(name, "") for name in LIVE}
    if not any(given.values()):
        return None
    missing = [name for name, value in given.items() if not value]
    if missing:
        raise pytest.UsageError(f"the live suite needs all of {', '.join(LIVE)}; missing {missing}")
    return given


def pytest_report_header(config: pytest.Config) -> str:
    settings = live_settings(os.environ)
    if settings is None:
        return (
            "live suite: against the local stack (set VERTEXBATCH_LIVE_PROJECT, "
            "VERTEXBATCH_LIVE_LOCATION and VERTEXBATCH_LIVE_BUCKET to run it on real Vertex)"
        )
    return f"live suite: against real Vertex in {settings['VERTEXBATCH_LIVE_PROJECT']}"


@dataclass
class Target:
    """Where the scenario runs: a client, the models, and how long to wait."""

    client: vb.Client
    claude_model: str
    gemini_model: str
    timeout: float
    floor: float
    stack: LocalStack | None = None  # None: real Vertex
    stamp: str = field(
        default_factory=lambda: datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)
    )

    def id(self, name: str) -> str:
        """A submission id of this run: new ids each run, so a rerun never adopts old jobs."""
        return f"live-{self.stamp}-{name}"


@pytest.fixture
def target(request: pytest.FixtureRequest) -> Target:
    settings = live_settings(os.environ)
    claude = os.environ.get(CLAUDE_MODEL) or "claude-sonnet-4-5"
    gemini = os.environ.get(GEMINI_MODEL) or "gemini-2.5-flash"
    if settings is not None:
        client = vb.Client(
            settings["VERTEXBATCH_LIVE_PROJECT"],
            settings["VERTEXBATCH_LIVE_LOCATION"],
            settings["VERTEXBATCH_LIVE_BUCKET"],
            prefix="vertexbatch-live",
        )
        timeout = float(os.environ.get(TIMEOUT) or 3 * 3600)
        return Target(client, claude, gemini, timeout=timeout, floor=20.0)
    stack: LocalStack = request.getfixturevalue("stack")
    bucket: str = request.getfixturevalue("bucket")
    client = stack.client(bucket=bucket, prefix="live", retry=vb.RetryPolicy.no_wait())
    return Target(client, claude, gemini, timeout=60.0, floor=0.01, stack=stack)
