"""Code run in child processes by tests that need a process to die at a point (started by
``tests.helpers.child_processes``, so it must be importable), as integration_tests/_workers.py does
for the longer runs.

A test kills the process with SIGKILL while a gate in front of GCS holds its write
(``tests.gcs_gate.hold_write``): the process dies between two writes, as a crashed task
would, and nothing in the library is patched.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

import vertexbatch as vb
from tests.gcs_gate import hold_write
from tests.helpers import CLAUDE, child_processes, endpoints_client
from vertexbatch.emulator import LocalStack


def submit(
    endpoints: dict[str, str], id: str, requests: list[vb.ClaudeRequest], options: dict[str, Any]
) -> None:
    """Submit ``requests`` under ``id`` with ``options`` (``cache=True``, ``dedupe=True``): the
    test kills this process while one of its writes is held."""
    endpoints_client(endpoints).submit_claude(id, CLAUDE, requests, **options)


def kill_at_write(
    stack: LocalStack,
    bucket: str,
    name: str,
    target: Callable[..., None],
    *args: Any,
) -> None:
    """Run ``target(endpoints, *args)`` in a process on the stack (prefix ``jobs``) and SIGKILL
    it while its write of the object whose name ends with ``name`` is held: it dies before
    that object is written, everything before it written."""
    with hold_write(stack.storage_endpoint, name) as gate:
        endpoints = {
            "vertex": stack.vertex_endpoint,
            "storage": gate.url,
            "project": stack.project,
            "location": stack.location,
            "bucket": bucket,
        }
        process = child_processes().Process(target=target, args=(endpoints, *args))
        process.start()
        try:
            assert gate.held.wait(120), f"the process never wrote {name}"
        finally:
            process.kill()
            process.join(timeout=60)
    assert process.exitcode == -signal.SIGKILL
