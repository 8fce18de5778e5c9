"""The integration tests share the fast tests' fixtures: one stack, a fresh bucket per test."""

from tests.conftest import bucket, client, local_stack, stack

__all__ = ["bucket", "client", "local_stack", "stack"]
