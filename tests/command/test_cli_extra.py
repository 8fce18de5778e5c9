"""The command's extra and its client: without click it says how to install the extra; with it,
each command closes the client it built."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import CLAUDE, claude_request
from vertexbatch._command.cli import main
from vertexbatch.emulator import LocalStack

_NO_CLICK = "raise ImportError('No module named click (blocked by the test)')\n"


@pytest.fixture
def no_click(tmp_path: Path) -> dict[str, str]:
    """An environment whose ``import click`` fails: a shim ``click.py`` first on the path."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "click.py").write_text(_NO_CLICK)
    return {"PYTHONPATH": str(shim), "PATH": str(Path(sys.executable).parent)}


@pytest.mark.parametrize(
    "command",
    [
        pytest.param([sys.executable, "-m", "vertexbatch"], id="python -m vertexbatch"),
        pytest.param([str(Path(sys.executable).parent / "vertexbatch")], id="console script"),
    ],
)
@pytest.mark.processes
def test_without_click_the_command_says_how_to_install_the_extra(
    no_click: dict[str, str], command: list[str]
) -> None:
    """Without click the command prints one line naming ``pip install '.[cli]'`` on
    stderr and exits 2, with no traceback (the console script needs ``pip install -e .`` once
    its entry point has moved)."""
    ran = subprocess.run(
        [*command, "status", "some-id"], env=no_click, capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 2, ran.stderr
    assert ran.stdout == ""
    assert ran.stderr.splitlines() == [
        "vertexbatch: the command needs the cli extra, which is not installed; "
        "install it from a checkout of vertexbatch: pip install '.[cli]' "
        "(or 'WHEEL[cli]' for a wheel built from it)"
    ]


@pytest.mark.processes
def test_with_click_the_entry_point_runs_the_command(no_click: dict[str, str]) -> None:
    """With click importable the same entry point runs the command (its version here)."""
    env = {"PATH": no_click["PATH"]}
    ran = subprocess.run(
        [sys.executable, "-m", "vertexbatch", "--version"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert "version" in ran.stdout


def test_each_command_closes_its_client(
    client: vb.Client, stack: LocalStack, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each command closes the client it built once it is done, also when it ends with a
    non-zero exit code (the public ``Client.close`` is watched, and still runs)."""
    closed: list[vb.Client] = []
    close = vb.Client.close

    def watched(self: vb.Client) -> None:
        closed.append(self)
        close(self)

    monkeypatch.setattr(vb.Client, "close", watched)
    client.submit_claude("closing", CLAUDE, [claude_request("a", "hi")])
    env = stack.environment(bucket, prefix="jobs")
    for args, code in ((["find", "closing"], 0), (["results", "closing"], 0), (["find", "x"], 4)):
        closed.clear()
        ran = CliRunner().invoke(main, args, env=env)
        assert ran.exit_code == code, ran.output
        [built] = closed
        assert built is not client
        with pytest.raises(RuntimeError, match="closed"):
            built.find("closing")
