"""Fixtures: one local stack per session, a fresh bucket and client per test."""

from __future__ import annotations

import importlib.util
import itertools
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import vertexbatch as vb
from vertexbatch.emulator import JobOptions, LocalStack

_buckets = itertools.count()


@pytest.fixture(scope="session")
def local_stack() -> Iterator[LocalStack]:
    """The local Vertex + GCS stack, started once for the session."""
    with LocalStack() as stack:
        yield stack


@pytest.fixture
def stack(local_stack: LocalStack) -> Iterator[LocalStack]:
    """The session's stack with faults, options and call counts reset around each test."""
    local_stack.faults.reset()
    local_stack.reset_calls()
    yield local_stack
    local_stack.faults.reset()
    local_stack.set_job_options(JobOptions())


@pytest.fixture
def bucket(stack: LocalStack) -> str:
    """A fresh bucket for this test."""
    name = f"test-bucket-{next(_buckets)}"
    stack.create_bucket(name)
    return name


@pytest.fixture
def client(stack: LocalStack, bucket: str) -> vb.Client:
    """A vertexbatch client on the stack and this test's bucket, retrying without waiting."""
    return stack.client(bucket=bucket, prefix="jobs", retry=vb.RetryPolicy.no_wait())


def claude_requests(
    n: int, *, text: str = "Summarise item {i}.", start: int = 0
) -> list[vb.ClaudeRequest]:
    """``n`` small Claude requests with keys ``key-<i>``."""
    return [
        vb.ClaudeRequest(
            f"key-{i}",
            {"max_tokens": 64, "messages": [{"role": "user", "content": text.format(i=i)}]},
        )
        for i in range(start, start + n)
    ]


def gemini_requests(n: int, *, text: str = "Classify ticket {i}.") -> list[vb.GeminiRequest]:
    """``n`` small Gemini requests with keys ``key-<i>``."""
    return [vb.GeminiRequest(f"key-{i}", text.format(i=i)) for i in range(n)]


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(name: str) -> ModuleType:
    """Import examples/NAME.py as a module."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def stack_env(stack: LocalStack, bucket: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Point the environment at the stack and this test's bucket; returns the bucket."""
    for name, value in stack.environment(bucket, prefix="jobs").items():
        monkeypatch.setenv(name, value)
    return bucket


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> Path:
    """Write one JSON object per line, as the command and the examples read requests."""
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path
