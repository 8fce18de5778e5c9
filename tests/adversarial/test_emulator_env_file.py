"""``vertexbatch emulator --env-file F`` never takes F from another emulator still serving: it
refuses to start, naming F and that emulator, and the live one's file stays as it wrote it. A
file left by an emulator that is gone (killed) is replaced, as before. A stack killed with
SIGKILL leaves none of its servers running (``emulator._processes.Watchdog``). Real processes."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import free_ports, refuses

# The two ways to start one: the command, and the package's own module.
COMMAND = ["vertexbatch", "emulator"]
MODULE = ["vertexbatch.emulator"]


def _emulator(
    env_file: Path, port: int, gcs_port: int, how: list[str] = COMMAND
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            *how,
            "--port",
            str(port),
            "--gcs-port",
            str(gcs_port),
            "--env-file",
            str(env_file),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        start_new_session=True,  # its own process group, fake-gcs-server in it: killed together
    )


def _wait_for(env_file: Path, process: subprocess.Popen[bytes], text: str = "") -> str:
    """The file's text once it exists (and, with ``text``, holds it); the process must live."""
    pause = threading.Event()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if env_file.exists() and text in (written := env_file.read_text()):
            return written
        pause.wait(0.05)
    raise AssertionError(process.stderr.read().decode() if process.stderr else "no file")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)


@pytest.mark.processes
@pytest.mark.parametrize("how", [COMMAND, MODULE], ids=["command", "module"])
def test_a_second_emulator_refuses_the_env_file_of_a_live_one(
    tmp_path: Path, how: list[str]
) -> None:
    """The second emulator (``vertexbatch emulator`` or ``python -m vertexbatch.emulator``)
    exits 2 naming the file and the first one's pid, starts nothing, and leaves the file; the
    first keeps serving and removes its file when it stops."""
    env_file = tmp_path / "stack.env"
    port, gcs_port, other, other_gcs = free_ports(4)
    first = _emulator(env_file, port, gcs_port)
    try:
        written = _wait_for(env_file, first)
        assert f"pid {first.pid}:" in written
        second = _emulator(env_file, other, other_gcs, how)
        try:
            _, err = second.communicate(timeout=60)
        finally:
            _stop(second)  # one that serves instead of refusing is stopped all the same
        message = err.decode()
        assert second.returncode == 2, message
        assert str(env_file) in message and f"pid {first.pid}," in message
        assert "another --env-file" in message
        assert env_file.read_text() == written  # neither overwritten nor deleted
        assert refuses(f"http://127.0.0.1:{other}")  # the second started nothing
        assert not refuses(f"http://127.0.0.1:{port}")  # the first still serves
    finally:
        _stop(first)
    assert first.returncode == 0
    assert not env_file.exists()


@pytest.mark.processes
def test_the_file_of_a_killed_emulator_is_replaced(tmp_path: Path) -> None:
    """A file whose emulator died without removing it (SIGKILL) names no live stack: the next
    emulator replaces it with its own, and removes it when it stops."""
    env_file = tmp_path / "stack.env"
    port, gcs_port, other, other_gcs = free_ports(4)
    dead = _emulator(env_file, port, gcs_port)
    _wait_for(env_file, dead)
    # SIGKILL to its group, as a container's end kills it: its fake-gcs-server too, then
    # nothing answers (killed alone, its watchdog stops the server: the test after this one).
    os.killpg(dead.pid, signal.SIGKILL)
    dead.communicate(timeout=30)
    pause, deadline = threading.Event(), time.monotonic() + 30
    while time.monotonic() < deadline and not (
        refuses(f"http://127.0.0.1:{port}") and refuses(f"http://127.0.0.1:{gcs_port}")
    ):
        pause.wait(0.05)
    assert refuses(f"http://127.0.0.1:{gcs_port}"), "its fake-gcs-server outlived it"
    assert f"pid {dead.pid}:" in env_file.read_text()  # left behind
    second = _emulator(env_file, other, other_gcs)
    try:
        written = _wait_for(env_file, second, f"pid {second.pid}:")
        assert f"127.0.0.1:{other}" in written
    finally:
        _stop(second)
    assert second.returncode == 0
    assert not env_file.exists()


def _all_refuse(endpoints: list[str]) -> bool:
    """Whether nothing listens at any of ``endpoints`` within 30 seconds (a killed server's port
    is freed once the kernel has ended it)."""
    pause, deadline = threading.Event(), time.monotonic() + 30
    while time.monotonic() < deadline and not all(refuses(e) for e in endpoints):
        pause.wait(0.05)
    return all(refuses(e) for e in endpoints)


@pytest.mark.processes
def test_an_emulator_killed_alone_takes_its_fake_gcs_server_with_it(tmp_path: Path) -> None:
    """SIGKILL to the emulator alone (not its group: a supervisor that kills one pid) leaves
    no fake-gcs-server behind: its watchdog sees the emulator's end of a pipe close and stops
    the server it was started beside."""
    env_file = tmp_path / "stack.env"
    port, gcs_port = free_ports(2)
    dead = _emulator(env_file, port, gcs_port)
    try:
        _wait_for(env_file, dead)
        assert not refuses(f"http://127.0.0.1:{gcs_port}")
        os.kill(dead.pid, signal.SIGKILL)
        dead.communicate(timeout=30)
        assert _all_refuse([f"http://127.0.0.1:{gcs_port}"]), "its fake-gcs-server outlived it"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(dead.pid, signal.SIGKILL)  # whatever is left of its group, if it failed


_KILLED_STACK = """\
import os, signal, sys
from vertexbatch.emulator import LocalStack
stack = LocalStack(bigquery=True).start()
print(stack.storage_endpoint, stack.bigquery_endpoint, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.processes
def test_a_killed_process_leaves_none_of_its_stacks_servers_running() -> None:
    """A process holding a ``LocalStack(bigquery=True)`` killed with SIGKILL (a test runner's
    timeout): its fake-gcs-server and its bqemulator both stop."""
    pytest.importorskip("bqemulator")
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_STACK],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its group, for the cleanup below only
    )
    try:
        out, err = child.communicate(timeout=120)
        assert child.returncode == -signal.SIGKILL, err.decode()[-2000:]
        endpoints = out.decode().split()
        assert len(endpoints) == 2, err.decode()[-2000:]
        assert _all_refuse(endpoints), f"a server outlived its stack: {endpoints}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)


@pytest.mark.processes
def test_sigterm_stops_an_emulator_after_a_bare_connection(tmp_path: Path) -> None:
    """An emulator a liveness check connected to (and hung up on) still stops on SIGTERM, and
    removes its file: four times over, as the signal may land on any of its threads."""
    for attempt in range(4):
        env_file = tmp_path / f"stack-{attempt}.env"
        port, gcs_port = free_ports(2)
        process = _emulator(env_file, port, gcs_port)
        try:
            _wait_for(env_file, process)
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                pass  # what another emulator's check of this one's file does
            process.send_signal(signal.SIGTERM)
            process.communicate(timeout=20)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate(timeout=30)
        assert process.returncode == 0, attempt
        assert not env_file.exists()
