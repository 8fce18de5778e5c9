"""The demo's "Next" lines run as printed, in a fresh shell, after the README's install.

The README installs into `.venv` and runs `.venv/bin/vertexbatch demo` without activating the
venv, so `vertexbatch` alone is not on the user's PATH. Here a directory stands for the clone,
its `.venv` is this test's environment, and every shell has a clean environment but a PATH
without the venv: the demo runs, the stack its first line names runs in the background (the
"second terminal"), and the other lines run one after another in one shell, each checked. The
demo is the run the tests that read its output share (``readme_demo``,
tests/install_fixtures.py): typed so in such a folder and shell, on the README's install.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.install_fixtures import Ran, fresh_shell


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_demos_next_lines_run_as_printed(tmp_path: Path, readme_demo: Ran) -> None:
    """Each command the demo prints after "Next" works, typed as printed, from the clone."""
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / ".venv").symlink_to(Path(sys.prefix))  # the README's install
    env = fresh_shell()

    def shell(script: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", script],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    assert shell("command -v vertexbatch").returncode == 1  # as in the user's own shell
    demo = readme_demo  # `.venv/bin/vertexbatch demo --fast`, in a clone and shell like these
    assert demo.returncode == 0, demo.stderr
    after = demo.stdout.split("\nNext, ", 1)[1]
    commands = [line[4:] for line in after.splitlines() if line.startswith("    ")]
    assert commands[0] == ".venv/bin/vertexbatch emulator --env-file local.env"
    assert all(c.startswith((".venv/bin/vertexbatch ", ". ", "echo ")) for c in commands)

    with open(tmp_path / "emulator.err", "w") as errors:
        emulator = subprocess.Popen(
            ["bash", "-c", f"exec {commands[0]}"],
            cwd=clone,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
    try:
        deadline = time.monotonic() + 60
        while not (clone / "local.env").exists():
            assert emulator.poll() is None, (tmp_path / "emulator.err").read_text()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # One shell, as the user's second one: each command, then its exit status on stderr.
        script = "\n".join(f'{c}\necho "status $? of {i}" >&2' for i, c in enumerate(commands[1:]))
        ran = shell(script, timeout=180)
    finally:
        emulator.send_signal(signal.SIGTERM)
        assert emulator.wait(timeout=20) == 0, (tmp_path / "emulator.err").read_text()

    statuses = [line for line in ran.stderr.splitlines() if line.startswith("status ")]
    assert len(statuses) == len(commands) - 1, ran.stderr
    for i, command in enumerate(commands[1:]):
        allowed = {"0", "10"} if " run advance " in command else {"0"}  # 10: run not done yet
        assert statuses[i].split()[1] in allowed, (command, ran.stderr)
    lines = [json.loads(line) for line in ran.stdout.splitlines() if line.startswith("{")]
    retryable = [line["key"] for line in lines if "run_outcome" not in line]
    assert retryable[-1:] == ["b"]  # `results my-batch-1 --only retryable`
    assert sorted(line["key"] for line in lines if "run_outcome" in line) == ["a", "b"]
