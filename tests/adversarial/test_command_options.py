"""Every numeric option of the command refuses what is not a usable number as a usage error.

``inf``, ``nan`` and ``1e300`` parse as floats; each must end in exit 2 naming the option and
the rule (before any cloud call, ``--dry-run`` included), never "a bug in vertexbatch".
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers import write_lines
from vertexbatch._command.cli import main
from vertexbatch.emulator import LocalStack

BAD = ["inf", "-inf", "nan", "1e300", "-1"]
LINE = '{"key": "a", "params": {"max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}}'


def _commands(path: str) -> dict[str, list[str]]:
    submit = ["--provider", "claude", "--model", "claude-opus-5-5@default", "--id", "n"]
    return {
        "--cache-ttl": ["submit", *submit, "--cache", "--dry-run", path, "--cache-ttl"],
        "run --cache-ttl": ["run", "submit", *submit, "--cache", "--dry-run", path, "--cache-ttl"],
        "watch --floor": ["watch", "n", "--floor"],
        "watch --ceiling": ["watch", "n", "--ceiling"],
        "watch --timeout": ["watch", "n", "--timeout"],
        "emulator --row-seconds": ["emulator", "--row-seconds"],
        "probe --interval": ["probe", "--out", "report.json", "--interval"],
        "probe --timeout": ["probe", "--out", "report.json", "--timeout"],
    }


@pytest.mark.parametrize("value", BAD)
@pytest.mark.parametrize("option", list(_commands("")))
def test_a_number_no_duration_can_be_is_a_usage_error(
    stack: LocalStack, bucket: str, tmp_path: Path, option: str, value: str
) -> None:
    """Exit 2 with the option named, nothing staged, no job made."""
    path = str(write_lines(tmp_path / "r.jsonl", [LINE]))
    args = [*_commands(path)[option], value]
    before = len(stack.jobs())
    result = CliRunner().invoke(main, args, env=stack.environment(bucket, prefix="jobs"))
    assert result.exit_code == 2, result.output
    assert "a bug" not in result.output
    assert option.split()[-1] in result.output and "finite number of seconds" in result.output
    assert len(stack.jobs()) == before
    assert list(stack.storage_client().list_blobs(bucket, prefix="jobs/n")) == []
