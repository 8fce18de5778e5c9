"""`--dry-run --price MODEL=INPUT,OUTPUT` prices a model the table lacks, and the plan the
command prints names the command's flags, never Python's keywords."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tests.helpers import request_line, write_lines
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode
from vertexbatch.emulator import LocalStack

# Outside the catalogue on purpose: a model the shipped table does not price (a dry run reaches
# no model, so the stack need not serve it).
MODEL = "claude-opus-5-6@default"


@pytest.fixture
def dry_run(stack: LocalStack, bucket: str, tmp_path: Path) -> Callable[..., Result]:
    env = stack.environment(bucket, prefix="jobs")
    path = write_lines(tmp_path / "in.jsonl", [request_line("a"), request_line("b")])

    def invoke(*args: str, command: tuple[str, ...] = ("submit",)) -> Result:
        base = [*command, "--provider", "claude", "--model", MODEL, "--id", "plan-1"]
        return CliRunner().invoke(main, [*base, *args, str(path)], env=env, catch_exceptions=False)

    return invoke


@pytest.mark.parametrize("command", [("submit",), ("run", "submit")])
def test_the_plan_names_flags_not_keywords(
    dry_run: Callable[..., Result], command: tuple[str, ...]
) -> None:
    """Without a price the plan says to pass --price; no `=True` or `prices=` in sight."""
    shown = dry_run("--dry-run", command=command)
    assert shown.exit_code == 0, shown.output
    assert "unknown (no price known)" in shown.stdout
    assert "pass --price MODEL=INPUT,OUTPUT" in shown.stdout
    assert "--count-tokens counts them exactly" in shown.stdout
    for keyword in ("prices=", "count_tokens", "dedupe=", "=True"):
        assert keyword not in shown.stdout, keyword
    as_json = json.loads(dry_run("--dry-run", "--json", command=command).stdout)
    assert not [a for a in as_json["assumptions"] if "prices=" in a or "=True" in a]


def test_price_gives_the_cost_at_half_those_list_prices(dry_run: Callable[..., Result]) -> None:
    """--price takes online list dollars per million tokens, as Price does: batch is half."""
    plan = json.loads(dry_run("--dry-run", "--json", "--price", "claude-opus-5-6=5,25").stdout)
    assert plan["price"] == {
        "match": "claude-opus-5-6",
        "input": 5.0,
        "output": 25.0,
        "cache_read": None,
        "cache_write": None,
        "above": None,  # no band over a prompt size (--price gives one rate)
        "until": None,  # no last day (--price gives none)
    }
    assert plan["cost_low"] == pytest.approx(plan["input_tokens"] * 2.5 / 1e6)
    assert plan["cost_high"] == pytest.approx(
        plan["cost_low"] + plan["max_output_tokens"] * 12.5 / 1e6
    )


@pytest.mark.parametrize(
    "args", [("--dry-run", "--price", "claude-opus-5-6=2.5"), ("--price", "claude-opus-5-6=1,2")]
)
def test_a_bad_or_idle_price_is_a_usage_error(
    dry_run: Callable[..., Result], args: tuple[str, ...]
) -> None:
    """A malformed --price, or one without --dry-run, is exit 2 naming --price."""
    result = dry_run(*args)
    assert result.exit_code == ExitCode.USAGE
    assert "--price" in result.output
