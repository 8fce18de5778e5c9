"""Fixtures of the local stack's own tests, on the suite's `stack` and `bucket` fixtures."""

from __future__ import annotations

import pytest

from tests.lab import Lab
from vertexbatch.emulator import LocalStack


@pytest.fixture
def lab(stack: LocalStack, bucket: str) -> Lab:
    """Helpers bound to the session stack and this test's fresh bucket."""
    return Lab(stack, bucket)


@pytest.fixture
def lab_factory() -> type[Lab]:
    """The Lab helper class, for tests that start a LocalStack of their own."""
    return Lab
