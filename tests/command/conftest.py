"""What the command's tests share."""

from __future__ import annotations

import pytest

from vertexbatch.emulator import LocalStack


@pytest.fixture
def env(stack: LocalStack, bucket: str) -> dict[str, str | None]:
    """The environment that points the command at the stack and this test's bucket."""
    return {**stack.environment(bucket, prefix="jobs")}
