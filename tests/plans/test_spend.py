"""Spend: what answers cost from their usage, at the tier they were billed at (pure)."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import CLAUDE, claude_request
from vertexbatch._command.cli import main
from vertexbatch._plans.prices import price_of
from vertexbatch._plans.spend import (
    CACHE_BILLING,
    TIER_SOURCES,
    TIERS,
    SpendMeter,
    spend_of,
    tier_share,
    usage_cost,
)
from vertexbatch._providers import PROVIDERS
from vertexbatch.emulator import LocalStack

_PRICE = vb.Price("claude-opus-5-5", 5.0, 25.0)
_GEMINI = vb.Price("gemini-3.8-flash", 0.5, 3.0)


def _ok(key: str, **usage: int) -> vb.Result:
    return vb.Result(key=key, text="x", usage=vb.Usage(**usage))


def test_claude_usage_at_batch_prices() -> None:
    """Claude: input, output, cache reads and writes each at their rate, all at half."""
    usage = vb.Usage(input=1_000_000, output=100_000)
    assert usage_cost("anthropic", usage, _PRICE) == pytest.approx((5.0 + 2.5) * 0.5)
    assert usage_cost("anthropic", usage, _PRICE, "standard") == pytest.approx(7.5)
    assert usage_cost("anthropic", usage, _PRICE, "flex") == pytest.approx(3.75)
    cached = vb.Usage(input=0, output=0, cache_read=1_000_000, cache_write=1_000_000)
    rates = vb.Price("claude-opus-5-5", 5.0, 25.0, cache_read=0.5, cache_write=6.25)
    assert usage_cost("anthropic", cached, rates) == pytest.approx((0.5 + 6.25) * 0.5)
    # No cache rate known: the input rate (the spend's notes say so).
    assert usage_cost("anthropic", cached, _PRICE) == pytest.approx(10.0 * 0.5)


def test_gemini_cached_tokens_are_inside_input_at_the_cache_rate_not_halved() -> None:
    """Gemini's input holds its cached tokens; in batch they cost the cache rate, which takes
    precedence over the batch discount (the two do not stack)."""
    usage = vb.Usage(input=1_000_000, output=0, cache_read=400_000)
    rates = vb.Price("gemini-3.8-flash", 0.5, 3.0, cache_read=0.05)
    plain = 600_000 * 0.5 * 0.5 / 1e6
    assert usage_cost("google", usage, rates) == pytest.approx(plain + 400_000 * 0.05 / 1e6)
    online = 600_000 * 0.5 / 1e6 + 400_000 * 0.05 / 1e6
    assert usage_cost("google", usage, rates, "standard") == pytest.approx(online)


def test_the_meter_skips_cached_and_shared_answers_and_sums_the_rest() -> None:
    """Cached answers were paid by an earlier job, shared ones by their first key's line."""
    meter = SpendMeter("anthropic", "claude-opus-5-5@default", [_PRICE])
    results = [
        _ok("a", input=1000, output=100),
        vb.Result(key="b", text="x", usage=vb.Usage(input=1000, output=100), shared=True),
        vb.Result(key="c", text="x", usage=vb.Usage(input=1000, output=100), cached=True),
        vb.Result(key="d"),  # no usage: a missing key, nothing billed
        _ok("e", input=3000, output=300),
    ]
    assert [r.key for r in meter.counted(results)] == ["a", "b", "c", "d", "e"]
    spend = meter.spend
    assert (spend.answers, spend.input, spend.output) == (2, 4000, 400)
    assert spend.dollars == pytest.approx((4000 * 5 + 400 * 25) * 0.5 / 1e6)
    assert spend.tiers == {"batch": 2}
    assert str(spend).startswith("$") and spend.to_dict()["dollars"] == spend.dollars
    assert spend_of("anthropic", "claude-opus-5-5", results, prices=[_PRICE]) == spend


def test_an_unpriced_model_spends_unknown_never_zero() -> None:
    """No price: the spend is unknown (None), with how to give one, even with no answers."""
    for results in ([], [_ok("a", input=10, output=1)]):
        spend = spend_of("anthropic", "claude-future-9@default", results)
        assert spend.dollars is None
        assert str(spend).startswith("unknown (no price known for model 'claude-future-9")
        assert "prices=" in spend.notes[0]
        assert spend.to_dict()["dollars"] is None


def test_online_tiers_and_an_unknown_tier() -> None:
    """A run's online answers at their tier; Priority's share is not known: unknown."""
    meter = SpendMeter("google", "gemini-3.8-flash", [_GEMINI])
    meter.add(_ok("a", input=1_000_000, output=0))  # batch
    meter.add(_ok("b", input=1_000_000, output=0), "standard")
    meter.add(_ok("c", input=1_000_000, output=0), "flex")
    spend = meter.spend
    assert spend.dollars == pytest.approx(0.25 + 0.5 + 0.25)
    assert spend.tiers == {"batch": 1, "standard": 1, "flex": 1}
    meter.add(_ok("d", input=1, output=1), "priority")
    assert meter.spend.dollars is None and "priority" in str(meter.spend)
    # A traffic type Vertex names that no page prices (provisioned, a new one): unknown, and
    # the results pass goes on.
    assert tier_share("provisioned") is None and tier_share("gold") is None
    meter.add(_ok("e", input=1), "gold")
    assert meter.spend.dollars is None and "gold" in str(meter.spend)
    with pytest.raises(vb.InvalidRequestError) as err:
        tier_share(None)
    assert err.value.field == "tier"


def test_tiers_have_sources_and_cache_billing_has_the_provider_table_s_rows() -> None:
    """Every tier says where its share comes from; one cache-billing row per provider."""
    assert set(TIER_SOURCES) == set(TIERS)
    assert all("http" in TIER_SOURCES[t] for t, share in TIERS.items() if share not in (None, 1.0))
    assert set(CACHE_BILLING) == set(PROVIDERS)
    assert all("http" in row.source for row in CACHE_BILLING.values())
    assert all(share is None or math.isfinite(share) for share in TIERS.values())


def test_a_job_s_spend_from_its_results_pass(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Through the stack: the meter counts the usage the results carry (cache reads and writes
    at their rate), once per paid line, as they stream; `vertexbatch results` says it."""
    requests = [
        claude_request("a", "Review one. [[vb:cached 40]] [[vb:cache_write 8]]"),
        claude_request("b", "Review two."),
        claude_request("c", "Review one. [[vb:cached 40]] [[vb:cache_write 8]]"),  # shared
        claude_request("d", "Gone. [[vb:drop]]"),
    ]
    job = client.submit_claude("sp1", CLAUDE, requests, dedupe=True)
    stack.wait_job(job.name)
    meter = SpendMeter(job.provider, job.model, [_PRICE])
    results = list(meter.counted(client.results(job)))
    paid = [r for r in results if not r.shared and r.usage != vb.Usage()]
    assert len(paid) == 2 and meter.spend.answers == 2
    assert meter.spend.cache_read == 40 and meter.spend.cache_write == 8
    expected = sum(usage_cost("anthropic", r.usage, _PRICE) or 0 for r in paid)
    assert meter.spend.dollars == pytest.approx(expected) and expected > 0
    assert any("cache_read or cache_write rate" in note for note in meter.spend.notes)

    env = stack.environment(bucket, prefix="jobs")
    printed = CliRunner().invoke(main, ["results", "sp1"], env=env)
    assert printed.exit_code == 0, printed.output
    # The stack's model is unpriced in the shipped table until the catalogue prices it.
    unpriced = price_of(CLAUDE) is None
    assert ("; spend unknown (no price" in printed.stderr) == unpriced, printed.stderr
    as_json = CliRunner().invoke(main, ["results", "sp1", "--json"], env=env)
    summary = json.loads(as_json.stderr.strip().splitlines()[-1])
    assert summary["spend"]["answers"] == 2 and summary["spend"]["cache_read"] == 40
    assert (summary["spend"]["dollars"] is None) == unpriced
