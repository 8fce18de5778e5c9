"""The command's progress on stderr: click's bar when stderr is a terminal (a real pty), nothing
when it is not; stdout stays machine-readable either way. Each command runs as a process."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.helpers import CLAUDE, request_line, write_lines
from vertexbatch.emulator import LocalStack

COMMAND = [sys.executable, "-m", "vertexbatch"]


def _run(
    args: list[str], *, stderr_tty: bool, stdout_tty: bool = False, stdin: Path | None = None
) -> tuple[int, str, str]:
    """Run the command with stderr (and stdout, if asked) on a pty; its exit code, stdout and
    everything its terminal showed (or its piped stderr)."""
    if not stderr_tty:
        ran = subprocess.run(
            [*COMMAND, *args], capture_output=True, text=True, timeout=300, check=False
        )
        return ran.returncode, ran.stdout, ran.stderr
    master, slave = pty.openpty()
    shown: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every end of the slave is closed
                return
            if not data:
                return
            shown.append(data)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        process = subprocess.Popen(
            [*COMMAND, *args],
            stdin=subprocess.PIPE if stdin is not None else None,
            stdout=slave if stdout_tty else subprocess.PIPE,
            stderr=slave,
            env={**os.environ, "COLUMNS": "120"},
        )
        os.close(slave)
        given = stdin.read_bytes() if stdin is not None else None
        out, _ = process.communicate(given, timeout=300)
    finally:
        reader.join(timeout=60)
        os.close(master)
    return process.returncode, (out or b"").decode(), b"".join(shown).decode()


def _requests(tmp_path: Path, n: int) -> Path:
    return write_lines(tmp_path / "requests.jsonl", [request_line(f"k{i}") for i in range(n)])


def test_submit_draws_clicks_bar_on_a_terminal(tmp_path: Path, stack_env: str) -> None:
    """On a pty: the bar with the requests, their bytes, a rate and the percentage of the file
    (its size is known); stdout holds the job lines only."""
    file = _requests(tmp_path, 300)
    code, out, shown = _run(
        ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "tty-1", str(file)],
        stderr_tty=True,
    )
    assert code == 0, shown
    assert "staging" in shown and "300 requests" in shown
    assert "100%" in shown and "/s" in shown
    assert "kB" in shown  # the file's bytes, in a person's units
    assert out.splitlines()[0].split() == ["id", "tty-1"]


def test_submit_from_a_pipe_draws_a_bar_of_unknown_total(tmp_path: Path, stack_env: str) -> None:
    """stdin from a pipe has no size: the requests and their bytes, no percentage."""
    file = _requests(tmp_path, 120)
    code, out, shown = _run(
        ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "tty-pipe", "-"],
        stderr_tty=True,
        stdin=file,
    )
    assert code == 0, shown
    assert "120 requests" in shown and "%" not in shown
    assert out.splitlines()[0].split() == ["id", "tty-pipe"]


def test_submit_shows_nothing_when_stderr_is_not_a_terminal(tmp_path: Path, stack_env: str) -> None:
    """Piped stderr: no bar, no progress line; stdout the same job lines."""
    file = _requests(tmp_path, 300)
    code, out, err = _run(
        ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "pipe-1", str(file)],
        stderr_tty=False,
    )
    assert code == 0, err
    assert err == ""
    assert out.splitlines()[0].split() == ["id", "pipe-1"]


def test_run_submit_draws_the_bar_on_a_terminal(tmp_path: Path, stack_env: str) -> None:
    """``run submit`` stages its shards under the same bar."""
    file = _requests(tmp_path, 50)
    code, out, shown = _run(
        [
            "run",
            "submit",
            "--provider",
            "claude",
            "--model",
            CLAUDE,
            "--id",
            "tty-run",
            "--shard-size",
            "20",
            str(file),
        ],
        stderr_tty=True,
    )
    assert code == 0, shown
    assert "50 requests" in shown and "100%" in shown
    assert out.startswith("run tty-run: 50 keys")


@pytest.fixture
def finished(tmp_path: Path, stack: LocalStack, stack_env: str) -> str:
    """A finished job of 200 keys, submitted through the command."""
    file = _requests(tmp_path, 200)
    code, out, err = _run(
        ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "res-1", "--json", str(file)],
        stderr_tty=False,
    )
    assert code == 0, err
    stack.wait_job(json.loads(out)["name"])
    return "res-1"


def test_results_draw_the_bar_when_stdout_goes_elsewhere(finished: str) -> None:
    """stderr a terminal, stdout a pipe: the bar of the output's bytes, then the summary line;
    stdout is one JSON object per key."""
    code, out, shown = _run(["results", finished], stderr_tty=True)
    assert code == 0, shown
    assert "results" in shown and "200 keys" in shown and "100%" in shown
    assert "vertexbatch: 200 of 200 keys" in shown
    assert len([json.loads(line) for line in out.splitlines()]) == 200


def test_results_draw_nothing_between_result_lines_on_a_terminal(finished: str) -> None:
    """stdout on the same terminal: the result lines are the progress, no bar among them."""
    code, _, shown = _run(["results", finished], stderr_tty=True, stdout_tty=True)
    assert code == 0, shown
    assert "%" not in shown and "\r" not in shown.replace("\r\n", "\n")
    assert shown.count('"key"') == 200


def test_results_show_nothing_when_stderr_is_not_a_terminal(finished: str) -> None:
    """Piped stderr: the summary line alone."""
    code, out, err = _run(["results", finished], stderr_tty=False)
    assert code == 0, err
    assert err.splitlines() == [
        line for line in err.splitlines() if line.startswith("vertexbatch: 200 of 200 keys")
    ]
    assert len(err.splitlines()) == 1
    assert len(out.splitlines()) == 200
