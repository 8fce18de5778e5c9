"""One meaning for a price everywhere: the online list price per million tokens; batch is half.

Issue 38, item 12: ``--price M=7.5,37.5`` was read as the batch price and ``vb.Price(M, 7.5,
37.5)`` as the list price, so the same numbers gave costs 2x apart; ``nan``, ``inf`` and
negative prices were accepted and ``--dry-run --json`` printed ``NaN``, which is not JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import vertexbatch as vb
from tests.helpers import request_line, write_lines
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode
from vertexbatch.emulator import LocalStack

MODEL = "claude-opus-5-5@default"  # priced by the shipped table; --price / prices= come first
FAMILY = "claude-opus-5-5"


def _strict(text: str) -> Any:
    """JSON as JSON has it: NaN and Infinity are not numbers."""

    def refuse(token: str) -> Any:
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def dry_run(stack: LocalStack, bucket: str, tmp_path: Path) -> Callable[..., Result]:
    env = stack.environment(bucket, prefix="jobs")
    path = write_lines(tmp_path / "in.jsonl", [request_line("a"), request_line("b")])

    def invoke(*args: str) -> Result:
        base = ["submit", "--provider", "claude", "--model", MODEL, "--id", "price-1", "--dry-run"]
        return CliRunner().invoke(main, [*base, *args, str(path)], env=env)

    return invoke


def test_the_same_numbers_give_the_same_cost_in_the_command_and_in_python(
    dry_run: Callable[..., Result], client: vb.Client
) -> None:
    """``--price M=7.5,37.5`` and ``vb.Price(M, 7.5, 37.5)`` are both list prices: one cost."""
    shown = dry_run("--json", "--price", f"{FAMILY}=7.5,37.5")
    assert shown.exit_code == 0, shown.output
    command = _strict(shown.stdout)
    requests = [vb.ClaudeRequest(k, json.loads(request_line(k))["params"]) for k in ("a", "b")]
    python = client.plan_claude("price-1", MODEL, requests, prices=[vb.Price(FAMILY, 7.5, 37.5)])
    assert command["price"] == {
        "match": FAMILY,
        "input": 7.5,
        "output": 37.5,
        "cache_read": None,
        "cache_write": None,
        "above": None,  # no band over a prompt size (--price gives one rate)
        "until": None,  # no last day (--price gives none)
    }
    assert command["cost_low"] == pytest.approx(python.cost_low)
    assert command["cost_high"] == pytest.approx(python.cost_high)
    # Batch bills half the list price.
    assert command["cost_low"] == pytest.approx(command["input_tokens"] * 7.5 * 0.5 / 1e6)


@pytest.mark.parametrize(
    "rates", ["nan,1", "1,nan", "inf,1", "1,-inf", "-1,1", "1,-0.5", "1e400,1", "2e6,1"]
)
def test_a_price_that_is_no_amount_of_dollars_is_a_usage_error(
    dry_run: Callable[..., Result], rates: str
) -> None:
    """NaN, infinite, negative or absurd: exit 2 naming --price and the rule, never NaN."""
    result = dry_run("--json", "--price", f"{FAMILY}={rates}")
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "--price" in result.output and "list price" in result.output
    assert "NaN" not in result.output and "a bug" not in result.output


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), -float("inf"), -1, -0.01, 10**400, 1e300, 2_000_000],
    ids=["nan", "inf", "-inf", "-1", "-0.01", "10**400", "1e300", "2e6"],
)
@pytest.mark.parametrize("side", ["input", "output"])
def test_price_refuses_what_is_no_amount_of_dollars(value: float, side: str) -> None:
    """``vb.Price`` refuses it: InvalidRequestError(field="prices") naming the side and rule."""
    rates = {"input": 1.0, "output": 1.0, side: value}
    with pytest.raises(vb.InvalidRequestError) as info:
        vb.Price(FAMILY, **rates)
    assert info.value.field == "prices"
    assert side in str(info.value) and "per million" in str(info.value)


def test_the_json_plan_is_strict_json_at_the_largest_prices_and_ceilings(
    stack: LocalStack, bucket: str, tmp_path: Path
) -> None:
    """The largest price and max_tokens taken: the --json plan is finite, strict JSON."""
    params = {"max_tokens": 2**31 - 1, "messages": [{"role": "user", "content": "hi"}]}
    lines = [json.dumps({"key": f"k{i}", "params": params}) for i in range(50)]
    path = write_lines(tmp_path / "in.jsonl", lines)
    args = ["submit", "--provider", "claude", "--model", MODEL, "--id", "p", "--dry-run", "--json"]
    args += ["--price", f"{FAMILY}=1000000,1000000", str(path)]
    result = CliRunner().invoke(main, args, env=stack.environment(bucket, prefix="jobs"))
    assert result.exit_code == 0, result.output
    plan = _strict(result.stdout)
    assert plan["cost_high"] == pytest.approx(50 * (2**31 - 1) * 1e6 * 0.5 / 1e6, rel=1e-3)


def test_the_option_and_the_field_name_the_unit() -> None:
    """``--price``'s help and ``Price``'s docstring say list price per million tokens."""
    result = CliRunner().invoke(main, ["submit", "--help"])
    help_text = " ".join(result.output.split())
    assert "list price" in help_text and "per million" in help_text
    assert "batch" in help_text and "half" in help_text
    doc = " ".join((vb.Price.__doc__ or "").split())
    assert "list price" in doc and "per million" in doc
