"""LocalStack start and stop, the foreground runner, and the stack's helpers."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from google.cloud import aiplatform_v1, storage

import vertexbatch
from tests.helpers import free_ports, refuses
from vertexbatch._command.cli import main
from vertexbatch.emulator import LocalStack, run_foreground


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.processes
def test_start_and_stop_leave_nothing_behind() -> None:
    """A stack serves on loopback, and stopping it leaves no process or port behind.

    How long starting and stopping take is measured by the benchmark command, not here.
    """
    with LocalStack() as stack:
        vertex, gcs, pid = stack.vertex_endpoint, stack.storage_endpoint, stack.gcs_pid
        assert vertex.startswith("http://127.0.0.1:") and gcs.startswith("http://127.0.0.1:")
        stack.create_bucket("quick-bucket")
    assert gone(pid) and refuses(vertex) and refuses(gcs)


@pytest.mark.processes
def test_stop_when_the_body_raises() -> None:
    """Leaving the with block by an exception still stops both servers."""
    with pytest.raises(RuntimeError, match="boom"), LocalStack() as stack:
        pid, vertex, gcs = stack.gcs_pid, stack.vertex_endpoint, stack.storage_endpoint
        raise RuntimeError("boom")
    assert gone(pid) and refuses(vertex) and refuses(gcs)
    with pytest.raises(RuntimeError, match="not started"):
        stack.vertex_endpoint  # noqa: B018


@pytest.mark.processes
def test_stop_with_held_and_running_jobs(lab_factory: Any) -> None:
    """Stopping with jobs held or mid-run, or a call blocked, is quick and raises nothing."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        with LocalStack() as stack:
            stack.create_bucket("busy-bucket")
            lab = lab_factory(stack, "busy-bucket")
            stack.faults.hold(state="PENDING")
            lab.create()
            stack.faults.reset()
            stack.faults.hold(state="RUNNING", after_rows=1)
            lab.create([lab.gemini_line("a"), lab.gemini_line("b")])
            stack.faults.block("list")
            blocked = pool.submit(lab.raw, "GET", f"/v1/{lab.parent}/batchPredictionJobs")
            stack.faults.wait_blocked("list")
            pid = stack.gcs_pid
        with contextlib.suppress(OSError):  # stop may close the connection before the 503
            blocked.result(timeout=10)
    with pytest.raises(TimeoutError):  # stop let the held call go: no thread is left waiting
        stack.faults.wait_blocked("list", timeout=0)
    assert gone(pid)


def test_clients_and_helpers(lab: Any, tmp_path: Path) -> None:
    """jobs_client/storage_client are the real clients; create_bucket is idempotent."""
    stack = lab.stack
    assert isinstance(stack.jobs_client(), aiplatform_v1.JobServiceClient)
    assert isinstance(stack.storage_client(), storage.Client)
    stack.create_bucket(lab.bucket)
    assert stack.storage_client().lookup_bucket(lab.bucket) is not None
    assert (stack.project, stack.location) == ("local-project", "us-central1")
    with pytest.raises(KeyError):
        stack.wait_job("1234567890123456789")
    stack.faults.hold(state="PENDING")
    job = lab.create()
    with pytest.raises(TimeoutError):
        stack.wait_job(job.name, timeout=0.05)
    stack.reset_calls()
    lab.jobs.get_batch_prediction_job(name=job.name)
    assert stack.calls() == {"get": 1}
    stack.reset_calls()
    assert stack.calls() == {}
    assert any(j["name"] == job.name for j in stack.jobs())


@pytest.mark.processes
def test_log_dir(tmp_path: Path) -> None:
    """log_dir receives fake-gcs-server's log file and is kept after stop."""
    with LocalStack(log_dir=tmp_path / "logs"):
        pass
    assert (tmp_path / "logs" / "fake-gcs-server.log").exists()


def test_client_jobs_are_found_through_the_environment(lab: Any) -> None:
    """A job stack.client() makes is found by `vertexbatch find` and by Client.from_env.

    Both read stack.environment(bucket), which sets no prefix: all three use the default one.
    """
    stack = lab.stack
    client = stack.client(bucket=lab.bucket)
    assert isinstance(client, vertexbatch.Client) and client.prefix == "vertexbatch"
    request = vertexbatch.ClaudeRequest(
        "k", {"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    )
    job = client.submit_claude("found-by-env", "claude-opus-5-5@default", [request])
    env = stack.environment(lab.bucket)
    assert "VERTEXBATCH_PREFIX" not in env
    assert vertexbatch.Client.from_env(env).find("found-by-env") == job
    command_env = {**env, "VERTEXBATCH_PREFIX": None}  # not the caller's, if it has one
    found = CliRunner().invoke(main, ["find", "found-by-env", "--json"], env=command_env)
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout) == job.to_dict()


class FlushedOutput(io.StringIO):
    """An output that signals its first flush (run_foreground flushes after the exports)."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed = threading.Event()

    def flush(self) -> None:
        super().flush()
        self.flushed.set()


@pytest.mark.processes
def test_run_foreground_in_a_thread() -> None:
    """run_foreground prints the environment and stops when asked."""
    out = FlushedOutput()
    stop = threading.Event()
    runner = threading.Thread(target=run_foreground, kwargs={"out": out, "stop": stop})
    runner.start()
    try:
        assert out.flushed.wait(10)
    finally:
        stop.set()
        runner.join(10)
    assert not runner.is_alive()
    lines = out.getvalue().splitlines()
    assert [line.split("=")[0] for line in lines] == [
        "export STORAGE_EMULATOR_HOST",
        "export VERTEXBATCH_VERTEX_ENDPOINT",
        "export GOOGLE_CLOUD_PROJECT",
        "export GOOGLE_CLOUD_LOCATION",
        "export VERTEXBATCH_BUCKET",
    ]
    assert refuses(lines[0].split("=", 1)[1]) and refuses(lines[1].split("=", 1)[1])


@pytest.mark.processes
def test_fixed_ports_survive_a_restart() -> None:
    """A stack on fixed ports serves there, frees them on stop, and a new one serves there again:
    the environment it gives is the same."""
    port, gcs_port = free_ports(2)
    environments = []
    for _ in range(2):
        with LocalStack(port=port, gcs_port=gcs_port) as stack:
            assert stack.vertex_endpoint == f"http://127.0.0.1:{port}"
            assert stack.storage_endpoint == f"http://127.0.0.1:{gcs_port}"
            stack.create_bucket("fixed-bucket")
            environments.append(stack.environment("fixed-bucket"))
        assert refuses(f"http://127.0.0.1:{port}") and refuses(f"http://127.0.0.1:{gcs_port}")
    assert environments[0] == environments[1]


def test_port_in_use_and_bad_ports() -> None:
    """A fixed port something listens on is EADDRINUSE naming it, before anything starts."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for ports in ({"port": port}, {"gcs_port": port}):
            with pytest.raises(OSError, match=f"127.0.0.1:{port} is already in use") as raised:
                LocalStack(**ports).start()
            assert raised.value.errno == errno.EADDRINUSE
    for bad in ({"port": -1}, {"gcs_port": 65536}, {"port": 9100, "gcs_port": 9100}):
        with pytest.raises(ValueError):
            LocalStack(**bad)  # type: ignore[arg-type]


@pytest.mark.processes
def test_run_foreground_env_file(tmp_path: Path) -> None:
    """run_foreground writes the exports to env_file once serving (a stale file is gone first),
    on the ports given, and removes the file when it stops."""
    env_file = tmp_path / "local.env"
    env_file.write_text("export STORAGE_EMULATOR_HOST=http://127.0.0.1:1\n")  # a stale one
    port, gcs_port = free_ports(2)
    out, err = FlushedOutput(), io.StringIO()
    stop = threading.Event()
    kwargs = {"out": out, "err": err, "stop": stop, "port": port, "gcs_port": gcs_port}
    runner = threading.Thread(target=run_foreground, kwargs={**kwargs, "env_file": env_file})
    runner.start()
    try:
        assert out.flushed.wait(10)
        written = env_file.read_text()
    finally:
        stop.set()
        runner.join(10)
    assert not runner.is_alive()
    assert written.startswith(f"# vertexbatch emulator, pid {os.getpid()}: ")
    assert written.splitlines()[1:] == out.getvalue().splitlines()
    assert f"export VERTEXBATCH_VERTEX_ENDPOINT=http://127.0.0.1:{port}\n" in written
    assert f"export STORAGE_EMULATOR_HOST=http://127.0.0.1:{gcs_port}\n" in written
    assert f"its environment is in {env_file} (source it)" in err.getvalue()
    assert not env_file.exists()
    assert refuses(f"http://127.0.0.1:{port}") and refuses(f"http://127.0.0.1:{gcs_port}")


def test_timing_is_validated() -> None:
    """Negative timings are refused."""
    from vertexbatch.emulator import Timing

    for bad in (
        {"pending_seconds": -1},
        {"row_seconds": -1},
        {"expire_seconds": -1},
        {"incremental_every": -1},
    ):
        with pytest.raises(ValueError):
            Timing(**bad)  # type: ignore[arg-type]


@pytest.mark.processes
def test_client_fails_fast_once_the_stack_is_gone() -> None:
    """`LocalStack.client()` gets the loopback rule of `Client.from_env`: a refused connection
    is final at once, with the hint, whatever retry policy the caller passes."""
    import requests

    from vertexbatch._retry import LOCAL_STACK_HINT

    with LocalStack() as stack:
        client = stack.client("fail-fast-bucket", retry=vertexbatch.RetryPolicy(attempts=5))
        assert client.retry.retry_refused is False and client.retry.attempts == 5
        assert stack.client("fail-fast-bucket").retry.retry_refused is False
    with pytest.raises(requests.ConnectionError) as raised:
        client.find("vb-0123456789abcdef")
    assert LOCAL_STACK_HINT in getattr(raised.value, "__notes__", [])
    client.close()


def test_use_job_ids(lab: Any) -> None:
    """The next jobs created get the ids given, in order; a bad or taken id is refused."""
    first, second = "1000000000000000001", "1000000000000000002"
    lab.stack.use_job_ids(first, second)
    assert lab.create().name.endswith(f"/{first}") and lab.create().name.endswith(f"/{second}")
    with pytest.raises(ValueError, match="is not a number, or is in use"):
        lab.stack.use_job_ids(first)
    with pytest.raises(ValueError, match="is not a number"):
        lab.stack.use_job_ids("abc")
