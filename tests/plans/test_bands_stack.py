"""A model priced in bands by prompt size through the local stack: a plan prices each request in
its band, a budget holds the banded figure, and a job's (and a run's) spend prices each answer
by the prompt its usage reports, cached tokens counted (Claude Haiku 5.5, the catalogue's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import advance_until_done, claude_request, client_in
from vertexbatch._command.cli import main
from vertexbatch._plans.spend import SpendMeter, prompt_tokens, usage_cost
from vertexbatch.emulator import LocalStack

HAIKU = "claude-haiku-5-5@default"
T = 100_000
# 4 characters a token in the plan's estimate (plus 3): at the threshold, and one token over.
AT = "x" * (4 * (T - 3))
OVER = AT + "y"


@pytest.fixture
def us(stack: LocalStack, bucket: str) -> vb.Client:
    """A client of the stack in the ``us`` multi-region, where the catalogue serves Haiku 5.5."""
    return client_in(stack, bucket, "us")


def _batch(tokens: int, ceiling: int, over: bool) -> float:
    rates = (0.50, 2.50) if over else (0.10, 0.50)
    return (tokens * rates[0] + ceiling * rates[1]) * 0.5 / 1e6


def test_a_plan_and_a_budget_price_each_request_in_its_band(
    us: vb.Client, stack: LocalStack, bucket: str
) -> None:
    client = us
    requests = [
        claude_request("at", AT, max_tokens=100),
        claude_request("over", OVER, max_tokens=100),
    ]
    plan = client.plan_claude("bands-plan", HAIKU, requests)
    assert plan.input_tokens == 2 * T + 1 and plan.price is not None
    assert plan.price.above is not None and plan.price.above.prompt_tokens == T
    assert plan.cost_low == pytest.approx(_batch(T, 0, False) + _batch(T + 1, 0, True))
    assert plan.cost_high == pytest.approx(_batch(T, 100, False) + _batch(T + 1, 100, True))
    assert any("1 request(s) here are over it" in a for a in plan.assumptions)
    # Counted exactly, the stack's count (a quarter of the characters, rounded down, plus 3)
    # puts both at the threshold: both in the lower band.
    counted = client.plan_claude("bands-plan", HAIKU, requests, count_tokens=True)
    assert counted.input_tokens == 2 * T
    assert counted.cost_low == pytest.approx(2 * _batch(T, 0, False))
    # The flat lower band would pass $0.015; the banded figure (about $0.03) does not.
    with pytest.raises(vb.InvalidRequestError, match=r"over the budget of \$0\.02") as err:
        client.submit_claude("bands-plan", HAIKU, requests, budget=0.02)
    assert err.value.field == "budget"
    assert not list(stack.storage_client().list_blobs(bucket))


def test_a_job_s_and_a_run_s_spend_price_each_answer_in_its_band(
    us: vb.Client, stack: LocalStack
) -> None:
    """The answer whose prompt is over the threshold only with its cache reads counted is in
    the band over it; the run's status (from its shard's recorded sums, split by band) says
    what the results pass says."""
    client = us
    short = "x" * (4 * (T - 40))
    requests = [
        claude_request("under", short),
        claude_request("cached-over", short + " [[vb:cached 60]]"),
    ]
    job = client.submit_claude("bands-job", HAIKU, requests)
    stack.wait_job(job.name)
    meter = SpendMeter(job.provider, job.model)  # the shipped catalogue's price
    results = {r.key: r for r in meter.counted(client.results(job))}
    under, over = results["under"].usage, results["cached-over"].usage
    assert prompt_tokens("anthropic", under) <= T < prompt_tokens("anthropic", over)
    assert over.input <= T and over.cache_read == 60  # over only with its cache reads
    price = meter.spend.price
    assert price is not None and price.above is not None
    expected = (
        _batch(under.input, under.output, False)
        + (
            (over.input + over.cache_read) * 0.50 + over.output * 2.50  # no cache-read rate known
        )
        * 0.5
        / 1e6
    )
    assert meter.spend.dollars == pytest.approx(expected)
    assert meter.spend.dollars == pytest.approx(
        sum(usage_cost("anthropic", u, price) or 0 for u in (under, over))
    )

    run = client.run_claude("bands-run", HAIKU, requests, shard_size=2)
    summary = advance_until_done(stack, run)
    assert summary.spend is not None and summary.spend.dollars is not None
    assert summary.spend.tiers == {"batch": 2}
    each = SpendMeter(run.provider, run.model)
    for item in run.key_results():
        each.add(item.result, item.tier)
    assert summary.spend.dollars == pytest.approx(each.spend.dollars)
    assert summary.spend.dollars == pytest.approx(expected)


def test_a_request_in_a_band_no_page_prices_is_priced_unknown(
    client: vb.Client, stack: LocalStack, bucket: str, tmp_path: Path
) -> None:
    """Gemini 2.5 Pro over 200,000 prompt tokens: the plan's cost is unknown (never the lower
    band's), a budget refuses it naming the band, and `--dry-run` says why; a request at the
    threshold is priced."""
    at = "x" * (4 * (200_000 - 3))
    plan = client.plan_gemini("pro-at", "gemini-2.5-pro", [vb.GeminiRequest("a", at)])
    at = at[: -4 * (plan.input_tokens - 200_000)]  # less the staged body's other text
    plan = client.plan_gemini("pro-at", "gemini-2.5-pro", [vb.GeminiRequest("a", at)])
    assert plan.input_tokens == 200_000 and plan.cost_low is not None
    over = [vb.GeminiRequest("a", at + "y" * 4)]  # one token more
    plan = client.plan_gemini("pro-over", "gemini-2.5-pro", over)
    assert plan.input_tokens == 200_001 and plan.price is not None
    assert plan.cost_low is None and plan.cost_high is None
    assert any("rates no page we read gives" in a for a in plan.assumptions)
    with pytest.raises(vb.InvalidRequestError, match="over 200,000 tokens") as err:
        client.submit_gemini("pro-over", "gemini-2.5-pro", over, budget=100.0)
    assert err.value.field == "budget"
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"key": "a", "contents": at + "y" * 4}) + "\n")
    printed = CliRunner().invoke(
        main,
        ["submit", "--provider", "gemini", "--model", "gemini-2.5-pro", "--id", "pro-over",
         "--dry-run", str(path)],
        env=stack.environment(bucket, prefix="jobs"),
    )  # fmt: skip
    assert printed.exit_code == 0, printed.output
    assert "unknown (requests over 200,000 prompt tokens: rates not known)" in printed.stdout
    assert not list(stack.storage_client().list_blobs(bucket))
