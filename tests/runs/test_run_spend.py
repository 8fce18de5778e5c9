"""A run's spend: batch answers at batch prices, online answers at the tier they were billed at."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import task
from vertexbatch._command.cli import main
from vertexbatch._plans.spend import usage_cost
from vertexbatch.emulator import LocalStack

MODEL = "claude-opus-5-5@default"
_PRICE = vb.Price("claude-opus-5-5", 5.0, 25.0)


def test_online_answers_are_billed_at_their_tier(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Shard 0 answered by its batch job, shard 1 online past the deadline: each key says the
    tier its answer was billed at, and the run's spend prices each at it."""
    stack.faults.hold(display_name="spent.s1", state="PENDING")
    run = client.run_claude("spent", MODEL, [task(i) for i in range(4)], shard_size=2)
    job = client.find("spent.s0")
    assert job is not None
    stack.wait_job(job.name)
    run.advance()  # finishes shard 0 from its job
    summary = run.advance(deadline=datetime.now(UTC) - timedelta(seconds=1), fallback="online")
    assert summary.done and summary.outcomes == {"ok": 4}
    items = list(run.key_results())
    tiers = {item.result.key: item.tier for item in items}
    assert tiers == {"key-0": "batch", "key-1": "batch", "key-2": "standard", "key-3": "standard"}
    meter = vb.SpendMeter(run.provider, run.model, [_PRICE])
    for item in items:
        meter.add(item.result, item.tier)
    spend = meter.spend
    assert spend.tiers == {"batch": 2, "standard": 2}
    expected = sum(usage_cost("anthropic", i.result.usage, _PRICE, i.tier) or 0 for i in items)
    assert spend.dollars == pytest.approx(expected) and expected > 0
    online = [i.result.usage for i in items if i.tier == "standard"]
    assert usage_cost("anthropic", online[0], _PRICE, "standard") == pytest.approx(
        2 * (usage_cost("anthropic", online[0], _PRICE) or 0)
    )
    printed = CliRunner().invoke(
        main, ["run", "results", "spent"], env=stack.environment(bucket, prefix="jobs")
    )
    assert printed.exit_code == 0, printed.output
    assert "run done: ok 4; spend " in printed.stderr, printed.stderr
