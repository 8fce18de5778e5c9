"""The command's help and docs/cli.md's synopsis say what click declares: each flag in the
synopsis is an option of its command, `--json` is shown wherever a command takes it, and every
flag with a variable names it as `[env: VARIABLE]`."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import CLAUDE, claude_request
from vertexbatch._command.cli import main
from vertexbatch.emulator import LocalStack

CLI_PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def _commands(group: click.Group = main, path: str = "") -> Iterator[tuple[str, click.Command]]:
    for name, command in sorted(group.commands.items()):
        full = f"{path} {name}".strip()
        if isinstance(command, click.Group):
            yield from _commands(command, full)
        else:
            yield full, command


def _synopses() -> dict[str, str]:
    """Each command's synopsis in docs/cli.md's first block, continuation lines joined."""
    block = CLI_PAGE.read_text().split("```\n", 2)[1]
    found: dict[str, str] = {}
    current = ""
    for line in block.splitlines():
        if line.startswith("vertexbatch "):
            words = line.removeprefix("vertexbatch ").split()
            current = " ".join(words[:2]) if words[0] == "run" else words[0]
            found[current] = line
        else:
            found[current] += " " + line.strip()
    return found


COMMANDS = dict(_commands())


def test_the_synopsis_lists_every_command() -> None:
    """docs/cli.md's synopsis has a line for each command and no other."""
    assert set(_synopses()) == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_synopsis_flags_are_the_commands_options(name: str) -> None:
    """Every flag of a synopsis is an option of its command, and `--json` is shown where the
    command takes it."""
    command = COMMANDS[name]
    declared = {opt for param in command.params for opt in param.opts if opt.startswith("--")}
    shown = set(re.findall(r"(--[a-z][a-z-]*)", _synopses()[name]))
    assert shown <= declared, shown - declared
    assert ("--json" in declared) == ("--json" in shown), name


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_names_variables_as_env(name: str) -> None:
    """Each command's --help writes a flag's variable as `[env: VARIABLE]`, never `env var`."""
    args = [*name.split(), "--help"]
    shown = CliRunner().invoke(main, args, terminal_width=200, catch_exceptions=False).stdout
    assert "env var" not in shown
    for param in COMMANDS[name].params:
        if isinstance(param, click.Option) and param.envvar:
            assert f"[env: {param.envvar}]" in shown, (name, param.name)


def test_results_json_summary(stack: LocalStack, bucket: str, client: vb.Client) -> None:
    """`results --json` prints the same JSON lines and its summary on stderr as one object."""
    job = client.submit_claude(
        "res-json",
        CLAUDE,
        [claude_request("a", "Review."), claude_request("b", "x [[vb:error 429]]")],
    )
    stack.wait_job(job.name)
    env = stack.environment(bucket, prefix="jobs")
    args = ["results", "res-json", "--json", "--only", "retryable"]
    result = CliRunner().invoke(main, args, env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["key"] for line in result.stdout.splitlines()] == ["b"]
    summary = json.loads(result.stderr)
    spend = summary.pop("spend")  # what the answers read cost: null dollars when unpriced
    assert spend["answers"] == 1 and spend["input"] > 0 and spend["tiers"] == {"batch": 1}
    assert summary == {
        "id": "res-json",
        "keys": 2,
        "state": "JOB_STATE_SUCCEEDED",
        "terminal": True,
        "read": 2,
        "outcomes": {
            "ok": 1,
            "refused": 0,
            "truncated": 0,
            "retryable": 1,
            "failed": 0,
            "missing": 0,
        },
    }
