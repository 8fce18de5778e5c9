"""The tests' one way to start child processes (``tests.helpers.child_processes``): children fork
from a server that imported vertexbatch and the Google clients once, started with no thread; each
is a process of its own that sees the test's environment, dies of SIGKILL as a spawned one does,
and whose CPU is the test's (tests/cpu_report.py) as soon as it ends."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import vertexbatch as vb
from tests import cpu_report
from tests.helpers import PRELOAD_OWN, PRELOAD_THIRD_PARTY, child_processes

pytestmark = pytest.mark.processes


def report(out: Any) -> None:
    """Run in a child: its pid, its parent's (the server) and the server's threads, the preloaded
    modules it has (``google.cloud.aiplatform_v1`` and the workers' module: none that this module
    imports), the vertexbatch it runs and its environment."""
    threads = len(os.listdir(f"/proc/{os.getppid()}/task"))
    preloaded = [m for m in (*PRELOAD_THIRD_PARTY, *PRELOAD_OWN) if m in sys.modules]
    environment = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    out.put((os.getpid(), os.getppid(), threads, preloaded, vb.__file__, environment))


def burn(seconds: float) -> None:
    """Run in a child: spend ``seconds`` of CPU."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def wait_to_be_killed(started: Any, never: Any) -> None:
    """Run in a child: say so, then wait for an event nobody sets (the test kills it)."""
    started.set()
    never.wait(600)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
def test_children_fork_from_a_preloaded_server_with_no_thread() -> None:
    ctx = child_processes()
    out = ctx.Queue()
    children = [ctx.Process(target=report, args=(out,)) for _ in range(2)]
    for child in children:
        child.start()
    seen = [out.get(timeout=120) for _ in children]
    for child in children:
        child.join(timeout=60)
        assert child.exitcode == 0
    (first, server, threads, preloaded, file, env), (second, *_) = seen
    assert first != second and os.getpid() not in (first, second, server)
    assert threads == 1  # the preloaded imports started no thread: forking it is safe
    own = Path(vb.__file__).resolve().parents[1] == Path.cwd().resolve()
    assert preloaded == [*PRELOAD_THIRD_PARTY, *(PRELOAD_OWN if own else ())]
    assert file == vb.__file__  # the checkout this process runs
    # Every variable the test has (a library's own setenv, such as COLUMNS, may add more).
    mine = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    assert env.items() >= mine.items()

    started, never = ctx.Event(), ctx.Event()  # held here: an event's semaphore dies with it
    killed = ctx.Process(target=wait_to_be_killed, args=(started, never))
    killed.start()
    assert started.wait(120)
    killed.kill()
    killed.join(timeout=60)
    assert killed.exitcode == -signal.SIGKILL

    before = cpu_report._children_cpu()  # what the CPU report counts of a test's children
    burner = ctx.Process(target=burn, args=(0.5,))
    burner.start()
    burner.join(timeout=120)
    assert cpu_report._children_cpu() - before >= 0.45  # reaped by the server, yet counted
