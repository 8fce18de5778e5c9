"""The installed ``vertexbatch`` script and ``python -m vertexbatch.emulator``, as processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.auth.credentials import AnonymousCredentials
from google.cloud import aiplatform_v1, storage

import vertexbatch as vb
from tests.helpers import (
    CLAUDE,
    claude_requests,
    free_ports,
    refuses,
    request_line,
    write_lines,
)
from vertexbatch._config import SETTINGS
from vertexbatch.emulator import LocalStack


def _script() -> str:
    found = Path(sys.executable).with_name("vertexbatch")
    return str(found) if found.exists() else str(shutil.which("vertexbatch"))


@pytest.fixture
def emulator_process(tmp_path: Path) -> Iterator[dict[str, str]]:
    """`vertexbatch emulator` in a subprocess; yields the environment it printed."""
    with (
        open(tmp_path / "emulator.err", "w") as errors,
        subprocess.Popen(
            [_script(), "emulator", "--bucket", "e2e-bucket", "--row-seconds", "0"],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        ) as process,
    ):
        try:
            assert process.stdout is not None
            exported = {}
            for _ in range(5):
                line = process.stdout.readline()
                name, _, value = line.strip().removeprefix("export ").partition("=")
                exported[name] = value
            yield exported
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=20) == 0, (tmp_path / "emulator.err").read_text()


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_installed_script_end_to_end(emulator_process: dict[str, str], tmp_path: Path) -> None:
    """The installed script: emulator, then submit, watch and results, each a new process."""
    env = {**os.environ, **emulator_process}
    assert set(emulator_process) >= {"STORAGE_EMULATOR_HOST", "VERTEXBATCH_VERTEX_ENDPOINT"}
    path = write_lines(tmp_path / "in.jsonl", [request_line("a"), request_line("b", "[[vb:drop]]")])

    def script(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [_script(), *args], env=env, capture_output=True, text=True, timeout=60
        )

    submitted = script(
        "submit", "--provider", "claude", "--model", CLAUDE, "--id", "e2e-1", "--json", str(path)
    )
    assert submitted.returncode == 0, submitted.stderr
    assert (
        json.loads(submitted.stdout)["input_uri"] == "gs://e2e-bucket/vertexbatch/e2e-1/input.jsonl"
    )
    watched = script("watch", "e2e-1", "--floor", "0.05")
    assert watched.returncode == 0, watched.stderr
    results = script("results", "e2e-1")
    assert results.returncode == 0, results.stderr
    outcomes = {
        json.loads(line)["key"]: json.loads(line)["outcome"] for line in results.stdout.splitlines()
    }
    assert outcomes == {"a": "ok", "b": "missing"}
    assert "ok 1, refused 0, truncated 0, retryable 0, failed 0, missing 1" in results.stderr


@pytest.mark.slow
def test_python_m_emulator_runs_until_sigterm() -> None:
    """`python -m vertexbatch.emulator` prints exports, serves, and exits cleanly on SIGTERM."""
    process = subprocess.Popen(
        [sys.executable, "-m", "vertexbatch.emulator", "--bucket", "fg-bucket"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        env = dict(
            line.removeprefix("export ").strip().split("=", 1)
            for line in (process.stdout.readline() for _ in range(5))
        )
        assert env["GOOGLE_CLOUD_PROJECT"] == "local-project"
        assert env["GOOGLE_CLOUD_LOCATION"] == "us-central1"
        assert env["VERTEXBATCH_BUCKET"] == "fg-bucket"
        gcs = storage.Client(
            project="local-project",
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options={"api_endpoint": env["STORAGE_EMULATOR_HOST"]},
        )
        assert gcs.lookup_bucket("fg-bucket") is not None
        jobs = aiplatform_v1.JobServiceClient(
            transport="rest",
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options={"api_endpoint": env["VERTEXBATCH_VERTEX_ENDPOINT"]},
        )
        parent = "projects/local-project/locations/us-central1"
        assert list(jobs.list_batch_prediction_jobs(parent=parent)) == []
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    assert refuses(env["STORAGE_EMULATOR_HOST"]) and refuses(env["VERTEXBATCH_VERTEX_ENDPOINT"])


def _shell_env() -> dict[str, str]:
    """This process's environment without the stack's variables, the script first on PATH."""
    names = {setting.variable for setting in SETTINGS}
    env = {k: v for k, v in os.environ.items() if k not in names}
    env["PATH"] = f"{Path(_script()).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _exports(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("export ")]


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_emulator_env_file_sourced_by_a_shell(tmp_path: Path) -> None:
    """The recommended way from a shell: fixed ports and --env-file, sourced where the commands
    run. SIGTERM (or SIGINT) stops it with exit 0, its ports free and the file gone; restarted
    on the same ports it writes the same exports; stopped, the commands fail fast with a hint.
    """
    port, gcs_port = free_ports(2)
    env_file = tmp_path / "local.env"
    log = tmp_path / "emulator.err"
    command = [_script(), "emulator", "--port", str(port), "--gcs-port", str(gcs_port)]
    command += ["--env-file", str(env_file), "--bucket", "shell-bucket", "--row-seconds", "0"]
    endpoints = (f"http://127.0.0.1:{port}", f"http://127.0.0.1:{gcs_port}")

    def start() -> subprocess.Popen[bytes]:
        with open(log, "ab") as errors:
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors)
        deadline = time.monotonic() + 30
        while not env_file.exists():
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        return process

    def stop(process: subprocess.Popen[bytes], signum: int) -> None:
        process.send_signal(signum)
        try:
            assert process.wait(timeout=20) == 0, log.read_text()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert not env_file.exists()
        assert all(refuses(endpoint) for endpoint in endpoints)

    requests_file = write_lines(tmp_path / "in.jsonl", [request_line("a"), request_line("b")])
    script = (
        '. "$1" && vertexbatch submit --provider claude --model "$2" --id sh-1 "$3" >/dev/null '
        "&& vertexbatch watch sh-1 --floor 0.05 >/dev/null && vertexbatch find sh-1 --json"
    )
    process = start()
    try:
        first = env_file.read_text()
        shell = subprocess.run(
            ["bash", "-c", script, "_", str(env_file), CLAUDE, str(requests_file)],
            env=_shell_env(),
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert shell.returncode == 0, shell.stderr
        job = json.loads(shell.stdout)
        assert job["input_uri"] == "gs://shell-bucket/vertexbatch/sh-1/input.jsonl"
        assert job["keys"] == 2
    finally:
        stop(process, signal.SIGTERM)

    process = start()
    try:
        assert _exports(env_file.read_text()) == _exports(first)
        assert f"export VERTEXBATCH_VERTEX_ENDPOINT={endpoints[0]}" in _exports(first)
    finally:
        stop(process, signal.SIGINT)

    saved = tmp_path / "saved.env"
    saved.write_text(first)
    # -v shows each retry the policy makes: a refused loopback connection is final at once.
    stopped = subprocess.run(
        ["bash", "-c", '. "$1" && exec vertexbatch -v find sh-1', "_", str(saved)],
        env=_shell_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert stopped.returncode == 6
    assert "retrying" not in stopped.stderr
    assert stopped.stderr.splitlines()[-1] in {
        f"vertexbatch: cannot reach the local stack at 127.0.0.1:{either} (connection refused): "
        "is it running? Start it with 'vertexbatch emulator' and source the file its --env-file "
        "writes"
        for either in (port, gcs_port)
    }


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_closed_pipe_ends_quietly(stack: LocalStack, bucket: str, client: vb.Client) -> None:
    """`vertexbatch results ID | head -1` prints the first line and ends quietly: exit 141, as a
    command killed by SIGPIPE, with nothing on stderr."""
    job = client.submit_claude("piped", CLAUDE, claude_requests(2000))  # far more than a pipe holds
    stack.wait_job(job.name, timeout=60)
    env = {**_shell_env(), **stack.environment(bucket, prefix="jobs")}
    piped = subprocess.run(
        ["bash", "-c", 'vertexbatch results piped | head -1; echo "status ${PIPESTATUS[0]}" >&2'],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert json.loads(piped.stdout)["outcome"] == "ok"
    assert piped.stderr == "status 141\n"
