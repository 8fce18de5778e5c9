"""`LocalStack(state_dir=...)` and `vertexbatch emulator --state-dir`: jobs and GCS objects
persist across restarts, a job running at stop ends FAILED on the next start."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.cloud import aiplatform_v1, storage

from tests.helpers import free_ports
from vertexbatch.emulator import LocalStack
from vertexbatch.emulator._state import RESTARTED


@pytest.mark.processes
def test_jobs_and_objects_survive_a_restart(lab_factory: Any, tmp_path: Path) -> None:
    """A finished job (its output too), a deleted one and a held one, across a restart."""
    state = tmp_path / "state"
    with LocalStack(state_dir=state) as stack:
        stack.create_bucket("kept-bucket")
        lab = lab_factory(stack, "kept-bucket")
        done = lab.create(display_name="done", labels={"keep": "yes"})
        finished = stack.wait_job(done.name)
        gone = lab.create(display_name="gone")
        stack.wait_job(gone.name)
        lab.jobs.delete_batch_prediction_job(name=gone.name).result(timeout=30)
        stack.faults.hold(display_name="running", state="RUNNING", after_rows=1)
        running = lab.create(
            [lab.gemini_line("a"), lab.gemini_line("b", key="k2")], display_name="running"
        )
        stack.wait_job(running.name, until=lambda j: j["state"] == "JOB_STATE_RUNNING")
    assert (state / "vertex-jobs.json").exists() and (state / "gcs").is_dir()
    with LocalStack(state_dir=state) as stack:
        lab = lab_factory(stack, "kept-bucket")
        again = lab.jobs.get_batch_prediction_job(name=done.name)
        assert again.state == aiplatform_v1.JobState.JOB_STATE_SUCCEEDED
        assert stack.jobs()[0] == finished
        assert lab.read_rows(finished)[0]["response"]["candidates"]
        with pytest.raises(gexc.NotFound):
            lab.jobs.get_batch_prediction_job(name=gone.name)
        ended = lab.jobs.get_batch_prediction_job(name=running.name)
        assert ended.state == aiplatform_v1.JobState.JOB_STATE_FAILED
        assert (ended.error.code, ended.error.message) == (14, RESTARTED)
        listed = lab.jobs.list_batch_prediction_jobs(
            request={"parent": lab.parent, "filter": 'labels.keep="yes"'}
        )
        assert [job.name for job in listed] == [done.name]
        newer = lab.create(display_name="newer")  # ids and creation order go on
        assert [j["displayName"] for j in stack.jobs()] == ["done", "running", "newer"]
        stack.wait_job(newer.name)


@pytest.mark.processes
def test_without_a_state_dir_nothing_is_kept(tmp_path: Path) -> None:
    """The default keeps nothing: a restart on the same ports has no job and no bucket."""
    port, gcs_port = free_ports(2)
    with LocalStack(port=port, gcs_port=gcs_port) as stack:
        stack.create_bucket("forgotten")
    with LocalStack(port=port, gcs_port=gcs_port) as stack:
        assert stack.jobs() == [] and stack.storage_client().lookup_bucket("forgotten") is None


@pytest.mark.processes
def test_a_bad_state_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "vertex-jobs.json").write_text('{"version": 99}')
    with pytest.raises(ValueError, match="is not a local stack state file"):
        LocalStack(state_dir=tmp_path).start()


def _start(args: list[str], env_file: Path) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "vertexbatch", "emulator", *args, "--env-file", str(env_file)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    ready = threading.Event()
    deadline = time.monotonic() + 60
    while not env_file.exists() and process.poll() is None and time.monotonic() < deadline:
        ready.wait(0.05)  # the file appears, whole, once the stack serves
    assert env_file.exists(), process.stderr.read() if process.stderr else ""
    exports = dict(
        line.removeprefix("export ").split("=", 1)
        for line in env_file.read_text().splitlines()
        if line.startswith("export ")
    )
    return process, exports


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err


@pytest.mark.processes
def test_the_command_keeps_state_across_a_real_restart(tmp_path: Path) -> None:
    """`vertexbatch emulator --state-dir DIR`, stopped by SIGTERM and started again on the same
    ports: the job and the objects are there, through the real clients."""
    port, gcs_port = free_ports(2)
    args = ["--port", str(port), "--gcs-port", str(gcs_port), "--row-seconds", "0"]
    args += ["--state-dir", str(tmp_path / "state"), "--bucket", "restart-bucket"]
    process, env = _start(args, tmp_path / "stack.env")
    try:
        gcs = storage.Client(
            project=env["GOOGLE_CLOUD_PROJECT"],
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options={"api_endpoint": env["STORAGE_EMULATOR_HOST"]},
        )
        line = {"request": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}}
        gcs.bucket("restart-bucket").blob("in/r.jsonl").upload_from_string(json.dumps(line))
        jobs = aiplatform_v1.JobServiceClient(
            transport="rest",
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options={"api_endpoint": env["VERTEXBATCH_VERTEX_ENDPOINT"]},
        )
        job = jobs.create_batch_prediction_job(
            parent=f"projects/{env['GOOGLE_CLOUD_PROJECT']}/locations/us-central1",
            batch_prediction_job={
                "display_name": "across-restarts",
                "model": "publishers/google/models/gemini-2.5-flash",
                "input_config": {
                    "instances_format": "jsonl",
                    "gcs_source": {"uris": ["gs://restart-bucket/in/r.jsonl"]},
                },
                "output_config": {
                    "predictions_format": "jsonl",
                    "gcs_destination": {"output_uri_prefix": "gs://restart-bucket/out"},
                },
            },
        )
        state = jobs.get_batch_prediction_job(name=job.name).state
        while state != aiplatform_v1.JobState.JOB_STATE_SUCCEEDED:  # no sleep: each get waits
            state = jobs.get_batch_prediction_job(name=job.name).state
    finally:
        _stop(process)
    process, env = _start(args, tmp_path / "stack.env")
    try:
        again = jobs.get_batch_prediction_job(name=job.name)
        assert again.state == aiplatform_v1.JobState.JOB_STATE_SUCCEEDED
        names = [b.name for b in gcs.list_blobs("restart-bucket")]
        assert "in/r.jsonl" in names and any(n.endswith("/predictions.jsonl") for n in names)
    finally:
        _stop(process)


@pytest.mark.processes
def test_the_command_names_a_bad_state_dir(tmp_path: Path) -> None:
    """A state file of another format is the command's usage error naming --state-dir."""
    from click.testing import CliRunner

    from vertexbatch._command.cli import main

    (tmp_path / "vertex-jobs.json").write_text("[]")
    result = CliRunner().invoke(main, ["emulator", "--state-dir", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "--state-dir: " in result.output and "is not a local stack state file" in result.output
