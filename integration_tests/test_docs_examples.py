"""The code the docs include runs as written, each file as a reader would run it.

The scripts run as `python FILE` with the environment `vertexbatch emulator` prints (here
`stack.environment(bucket)`, on the session's stack); the testing page's three files run under
pytest in a folder of their own, as a reader's project would hold them. tests/docs/test_docs.py
checks that the pages include exactly these files.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vertexbatch.emulator import LocalStack

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"
TESTING = ("conftest.py", "my_pipeline.py", "test_my_pipeline.py")
# What configures a client: a reader's shell has only what the emulator printed.
_CONFIG = ("GOOGLE_CLOUD_", "VERTEXBATCH_", "STORAGE_EMULATOR_HOST", "PYTEST_")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def _environment(extra: dict[str, str]) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(_CONFIG)}
    return {**base, **extra}


def _run(script: str, env: dict[str, str], cwd: Path) -> list[str]:
    """Run docs/examples/SCRIPT as `python SCRIPT` in cwd; its output lines."""
    shutil.copy(EXAMPLES / script, cwd / script)
    result = subprocess.run(
        [sys.executable, script],
        cwd=cwd,
        env=_environment(env),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.splitlines()


def _keys_and_outcomes(lines: list[str]) -> list[tuple[str, str]]:
    return sorted((line.split()[0], line.split()[1]) for line in lines)


def test_quickstart_prints_every_answer(stack: LocalStack, bucket: str, tmp_path: Path) -> None:
    """quickstart.py waits for its job and prints each key's answer; run again, the same."""
    for _ in range(2):
        lines = _run("quickstart.py", stack.environment(bucket), tmp_path)
        assert lines[0] == "review-0a1b2c JOB_STATE_SUCCEEDED"
        assert _keys_and_outcomes(lines[1:]) == [("skill-a", "ok"), ("skill-b", "ok")]
        assert all("Local model answer" in line and "Usage(" in line for line in lines[1:])
    assert stack.calls()["create"] == 1  # the second run adopted the job


def test_local_stack_starts_runs_a_job_and_stops(tmp_path: Path) -> None:
    """local_stack.py needs no environment: it starts its own stack, and stops it."""
    lines = _run("local_stack.py", {}, tmp_path)
    assert lines[:3] == ["JOB_STATE_SUCCEEDED", "greeting truncated", "['local-1']"]
    assert "vertexbatch/local-1/manifest.json" in lines[3]


def test_point_clients_drives_the_stack(stack: LocalStack, bucket: str, tmp_path: Path) -> None:
    """point_clients.py stages, creates and reads a job with the Google clients alone."""
    lines = _run("point_clients.py", stack.environment(bucket), tmp_path)
    assert len(lines) == 1
    assert re.fullmatch(r"\S+ publishers/google/models/gemini-2.5-flash JOB_STATE_\w+", lines[0])


def test_telemetry_prints_metrics(stack: LocalStack, bucket: str, tmp_path: Path) -> None:
    """telemetry.py prints its result, then a token point per type and an outcome point."""
    lines = _run("telemetry.py", stack.environment(bucket), tmp_path)
    assert lines[0].startswith("a ok Usage(")
    points = sorted(line.split(" ", 1)[0] for line in lines[1:])
    assert points == ["gen_ai.client.token.usage"] * 2 + ["vertexbatch.results"]
    assert "'gen_ai.token.type': 'input'" in "".join(lines)
    assert "'vertexbatch.outcome': 'ok'" in "".join(lines)


def test_run_in_one_process_answers_every_key(
    stack: LocalStack, bucket: str, tmp_path: Path
) -> None:
    """run_in_one_process.py advances its run until done and prints every key's outcome."""
    lines = _run("run_in_one_process.py", stack.environment(bucket), tmp_path)
    answers = [line for line in lines if not line.startswith("{")]
    assert _keys_and_outcomes(answers) == [(f"q{i}", "ok") for i in range(6)]


def test_testing_page_files_pass_under_pytest(tmp_path: Path) -> None:
    """The testing page's conftest.py, my_pipeline.py and test_my_pipeline.py pass as they are."""
    assert sorted(p.name for p in (EXAMPLES / "testing").glob("*.py")) == sorted(TESTING)
    for name in TESTING:
        shutil.copy(EXAMPLES / "testing" / name, tmp_path / name)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)]
    # No config file, a root of their own: the project's conftest.py and settings stay out.
    command += ["-c", os.devnull, "--rootdir", str(tmp_path)]
    result = subprocess.run(
        command,
        cwd=tmp_path,
        env=_environment({}),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout, result.stdout


def test_pay_once_plans_then_answers_from_the_cache(
    stack: LocalStack, bucket: str, tmp_path: Path
) -> None:
    """pay_once.py: night 1 sends two of three requests; night 2 sends only the new one."""
    lines = _run("pay_once.py", stack.environment(bucket), tmp_path)
    assert lines[0] == "eval-night-1: 3 requests, 2 distinct, 0 cached, 2 to send, 1 job(s)"
    assert sorted(lines[1:4]) == [
        "suite-a/q0 ok paid",
        "suite-a/q1 ok paid",
        "suite-b/q0 ok shared",
    ]
    assert lines[4] == "eval-night-2: 4 requests, 3 distinct, 3 cached, 1 to send, 1 job(s)"
    assert sorted(lines[5:]) == [
        "suite-a/q0 ok cached",
        "suite-a/q1 ok cached",
        "suite-b/q0 ok cached",
        "suite-b/q1 ok paid",
    ]
