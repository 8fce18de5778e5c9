"""Clients have a lifecycle: ``close()`` / ``with`` and ``aclose()`` / ``async with`` free what
the client built, and a closed client refuses every call."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

import vertexbatch as vb
from tests.helpers import CLAUDE, GEMINI, claude_requests, gemini_requests
from vertexbatch.emulator import LocalStack

# A process of its own, so that every connection it has to the stack is its client's.
_CHILD = r"""
import json, sys
import psutil
import vertexbatch as vb

vertex, storage, project, location, bucket = sys.argv[1:]
ports = {"vertex": int(vertex.rsplit(":", 1)[1]), "gcs": int(storage.rsplit(":", 1)[1])}

def connections():
    open_ = [c.raddr.port for c in psutil.Process().net_connections("tcp") if c.raddr]
    return {name: open_.count(port) for name, port in ports.items()}

client = vb.Client.for_endpoints(
    vertex_endpoint=vertex, storage_endpoint=storage, project=project, location=location,
    bucket=bucket, prefix="jobs",
)
claude = [vb.ClaudeRequest("a", {"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]})]
job = client.submit_claude("owned", "claude-opus-5-5@default", claude)
list(client.results(client.find("owned")))
client.plan_claude("counted", "claude-opus-5-5@default", claude, count_tokens=True)
client.plan_gemini("counted", "gemini-3.8-flash", [vb.GeminiRequest("a", "hi")], count_tokens=True)
before = connections()
client.close()
# What the client held is closed now; what it dropped earlier (a 404's response kept alive by a
# reference cycle through its exception's traceback, say) is unreachable, and its pool closes
# its connections when the cycle collector frees it: collected here, so only holding counts.
import gc
gc.collect()
print(json.dumps({"before": before, "after": connections()}))
"""


def test_close_frees_every_connection_the_client_made(stack: LocalStack, bucket: str) -> None:
    """After ``close()`` a client built by vertexbatch (``for_endpoints``) holds no connection
    to the stack: its Vertex, storage and online clients (count-tokens, both providers) are
    closed, in a process of its own."""
    stack.create_bucket(bucket)
    args = [stack.vertex_endpoint, stack.storage_endpoint, stack.project, stack.location, bucket]
    ran = subprocess.run(
        [sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    seen = json.loads(ran.stdout)
    assert seen["before"]["vertex"] >= 2 and seen["before"]["gcs"] >= 1, seen  # kept alive
    assert seen["after"] == {"vertex": 0, "gcs": 0}, seen


def test_a_closed_client_refuses_every_call(stack: LocalStack, bucket: str) -> None:
    """Once its ``with`` block ends, every method says the client is closed (a results
    iterator taken before too); closing again does nothing."""
    with stack.client(bucket, prefix="jobs", retry=vb.RetryPolicy.no_wait()) as client:
        job = client.submit_claude("closed", CLAUDE, claude_requests(2))
        results = client.results(job)
    calls = {
        "submit": lambda: client.submit_claude("other", CLAUDE, claude_requests(1)),
        "plan": lambda: client.plan_gemini("other", GEMINI, gemini_requests(1)),
        "find": lambda: client.find("closed"),
        "status": lambda: client.status(job),
        "results": lambda: client.results(job),
        "taken results": lambda: next(results),
        "cancel": lambda: client.cancel(job),
        "resubmit": lambda: client.resubmit(job, keys=["key-0"]),
        "run": lambda: client.run_claude("run", CLAUDE, claude_requests(1)),
        "open_run": lambda: client.open_run("run"),
        "aio": lambda: client.aio,
        "wait": lambda: client.wait(job),
    }
    for name, call in calls.items():
        with pytest.raises(RuntimeError, match=r"vertexbatch\.Client is closed"):
            call()
            pytest.fail(f"{name} ran on a closed client")
    client.close()  # again: nothing
    with pytest.raises(RuntimeError, match="closed"), client:
        pass


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_async_with_closes_the_client_and_its_view(
    stack: LocalStack, bucket: str, anyio_backend: str
) -> None:
    """``async with client.aio`` closes the client at its end: the view's calls and streams,
    and the client's own, say it is closed; ``aclose()`` again does nothing."""
    client = stack.client(bucket, prefix="jobs", retry=vb.RetryPolicy.no_wait())
    async with client.aio as aio:
        job = await aio.submit_claude("aclosed", CLAUDE, claude_requests(2))
        stream = aio.results(job)
    with pytest.raises(RuntimeError, match="closed"):
        await aio.find("aclosed")
    with pytest.raises(RuntimeError, match="closed"):
        await stream.__anext__()
    with pytest.raises(RuntimeError, match="closed"):
        client.find("aclosed")
    await aio.aclose()
    client.close()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_aclose_lets_a_call_under_way_end_first(
    stack: LocalStack, bucket: str, anyio_backend: str
) -> None:
    """``aclose()`` returns only once the calls under way have ended (here a status call the
    stack holds), and those end with their answer; the next call is refused."""
    client = stack.client(bucket, prefix="jobs", retry=vb.RetryPolicy.no_wait())
    job = await client.aio.submit_claude("held", CLAUDE, claude_requests(1))
    stack.faults.block("get")
    status = asyncio.create_task(client.aio.status(job))
    await asyncio.to_thread(stack.faults.wait_blocked, "get")
    closing = asyncio.create_task(client.aio.aclose())
    # While the call is held, aclose cannot be done: a bound on waiting, not an ordering.
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(asyncio.shield(closing), 0.5)
    await asyncio.to_thread(stack.faults.unblock, "get")
    await closing
    assert isinstance(await status, vb.Status)
    with pytest.raises(RuntimeError, match="closed"):
        await client.aio.find("held")
