"""Prices in bands by prompt size: a request's band at, just below and just above the
threshold, in plans, in an answer's spend and in the sums a record keeps (pure)."""

from __future__ import annotations

import pytest

import vertexbatch as vb
from vertexbatch._plans.bands import band_cost, banded_tier, base_tier, rates_at, summed_rates
from vertexbatch._plans.canary import canary_cost
from vertexbatch._plans.prices import price_of
from vertexbatch._plans.spend import SpendMeter, count_tiers, prompt_tokens, usage_cost
from vertexbatch._runs.usage import Tally

# Claude Haiku 5.5 as Anthropic's model page prices it (the catalogue's row): up to 100,000
# prompt tokens, and over.
HAIKU = vb.Price(
    "claude-haiku-5-5", 0.10, 0.50, cache_write=0.125,
    above=vb.PriceBand(100_000, input=0.50, output=2.50, cache_write=0.625),
)  # fmt: skip
# A Gemini Pro price whose band over 200,000 prompt tokens no page we read gives.
PRO = vb.Price("gemini-2.5-pro", 1.25, 10.0, cache_read=0.125, above=vb.PriceBand(200_000))
T = 100_000


def test_the_shipped_haiku_5_5_price_is_the_catalogue_s_two_bands() -> None:
    assert price_of("claude-haiku-5-5@default") == HAIKU
    assert price_of("gemini-2.5-pro") == PRO
    assert price_of("claude-opus-5-5").above is None  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("prompt", "rates"),
    [(0, (0.10, 0.50)), (T - 1, (0.10, 0.50)), (T, (0.10, 0.50)), (T + 1, (0.50, 2.50))],
)
def test_a_request_is_in_the_band_of_its_prompt(prompt: int, rates: tuple[float, float]) -> None:
    """ "Up to 100,000" holds 100,000 itself; one token more is the band over it, whose cache
    rates are its own (the band gives no cache read: none, never the lower band's)."""
    found = rates_at(HAIKU, prompt)
    assert found is not None and (found.input, found.output) == rates
    assert found.above is None
    assert found.cache_write == (0.625 if prompt > T else 0.125)
    assert rates_at(PRO, 200_000) is not None and rates_at(PRO, 200_001) is None


def test_a_plan_prices_each_request_in_its_own_band() -> None:
    """Low: input only; high: plus the output ceiling; each at its band's rates, batch half."""
    requests = [(T - 1, 10), (T, 10), (T + 1, 10)]
    low, high, over = band_cost(HAIKU, requests, 0.5)
    assert over == 1
    expected_low = ((T - 1) * 0.10 + T * 0.10 + (T + 1) * 0.50) * 0.5 / 1e6
    assert low == pytest.approx(expected_low)
    assert high == pytest.approx(expected_low + (10 * 0.50 * 2 + 10 * 2.50) * 0.5 / 1e6)
    # Not the flat arithmetic on the sum: that would price the third at a fifth.
    assert low != pytest.approx(sum(p for p, _ in requests) * 0.10 * 0.5 / 1e6)
    # A request in a band whose rates are unknown: the cost is unknown, never the lower band's.
    assert band_cost(PRO, [(200_000, 5)], 0.5)[:2] != (None, None)
    assert band_cost(PRO, [(200_000, 5), (200_001, 5)], 0.5) == (None, None, 1)
    assert canary_cost([(T + 1, 0)], HAIKU) == pytest.approx(((T + 1) * 0.5 / 1e6,) * 2)


def test_an_answer_s_prompt_counts_its_cached_tokens() -> None:
    """Claude: input plus cache reads and writes; Gemini: promptTokenCount already holds them."""
    usage = vb.Usage(input=T - 10, output=0, cache_read=6, cache_write=4)
    assert prompt_tokens("anthropic", usage) == T
    assert prompt_tokens("anthropic", vb.Usage(input=T - 10, cache_read=11)) == T + 1
    assert prompt_tokens("google", vb.Usage(input=T, cache_read=50_000)) == T


@pytest.mark.parametrize("input_tokens", [T - 1, T, T + 1])
def test_an_answer_s_spend_is_at_its_band_batch_share_applied(input_tokens: int) -> None:
    usage = vb.Usage(input=input_tokens, output=1_000)
    rates = (0.50, 2.50) if input_tokens > T else (0.10, 0.50)
    expected = (input_tokens * rates[0] + 1_000 * rates[1]) * 0.5 / 1e6
    assert usage_cost("anthropic", usage, HAIKU) == pytest.approx(expected)
    assert usage_cost("anthropic", usage, HAIKU, "standard") == pytest.approx(expected * 2)


def test_cache_tokens_are_at_the_band_s_cache_rates() -> None:
    """A write of a prompt over the threshold at the band's write rate; a read with no rate in
    the band at the band's input rate (the spend says so), both halved in Claude's batch."""
    usage = vb.Usage(input=T - 500, output=0, cache_read=300, cache_write=201)  # prompt T+1
    expected = ((T - 500) * 0.50 + 300 * 0.50 + 201 * 0.625) * 0.5 / 1e6
    assert usage_cost("anthropic", usage, HAIKU) == pytest.approx(expected)
    below = vb.Usage(input=T - 500, output=0, cache_read=300, cache_write=200)  # prompt T
    expected = ((T - 500) * 0.10 + 300 * 0.10 + 200 * 0.125) * 0.5 / 1e6
    assert usage_cost("anthropic", below, HAIKU) == pytest.approx(expected)


def test_the_meter_prices_each_answer_in_its_band_and_an_unknown_band_is_unknown() -> None:
    meter = SpendMeter("anthropic", "claude-haiku-5-5", [HAIKU])
    for key, tokens in (("a", T), ("b", T + 1)):
        meter.add(vb.Result(key=key, text="x", usage=vb.Usage(input=tokens, output=10)))
    spend = meter.spend
    assert spend.dollars == pytest.approx((T * 0.10 + 10 * 0.5 + (T + 1) * 0.5 + 10 * 2.5) / 2e6)
    assert "over 100,000 tokens at $0.5 input / $2.5 output" in spend.notes[0]
    assert spend.tiers == {"batch": 2}
    gemini = SpendMeter("google", "gemini-2.5-pro", [PRO])
    gemini.add(vb.Result(key="a", text="x", usage=vb.Usage(input=200_000, output=1)))
    assert gemini.spend.dollars is not None
    gemini.add(vb.Result(key="b", text="x", usage=vb.Usage(input=200_001, output=1)))
    assert gemini.spend.dollars is None and "over 200,000 tokens" in str(gemini.spend)


def test_a_record_sums_a_banded_model_s_answers_per_band() -> None:
    """A shard's (or canary's) tally splits a banded model's answers by band, so its sums
    price as the answers do; a model without bands keeps the plain tier names."""
    results = [
        vb.Result(key=str(i), text="x", usage=vb.Usage(input=tokens, output=100))
        for i, tokens in enumerate((T - 1, T, T + 1, T + 2))
    ]
    tally = Tally("anthropic", "claude-haiku-5-5")
    for result in results:
        tally.add(result, "batch")
    usage = tally.usage()
    assert set(usage) == {"batch_upto_100000", "batch_over_100000"}
    assert usage["batch_over_100000"][:2] == (2, 2 * T + 3)
    summed = SpendMeter("anthropic", "claude-haiku-5-5")
    count_tiers(summed, usage)
    each = SpendMeter("anthropic", "claude-haiku-5-5")
    for result in results:
        each.add(result)
    assert summed.spend.dollars == pytest.approx(each.spend.dollars)
    assert summed.spend.tiers == each.spend.tiers == {"batch": 4}
    plain = Tally("anthropic", "claude-opus-5-5")
    plain.add(results[0], "standard")
    assert set(plain.usage()) == {"standard"}


def test_a_sum_whose_answers_band_cannot_be_told_is_unknown() -> None:
    """Unsplit sums (an earlier record) price only when the sum itself is within the lower
    band; a split at another threshold only when it lies wholly in one of the price's bands."""
    two_short = vb.Usage(input=T, output=10)  # two answers whose prompts add up to T
    assert summed_rates(HAIKU, "batch", T, 2)[0] == rates_at(HAIKU, 0)
    rates, why = summed_rates(HAIKU, "batch", T + 1, 2)
    assert rates is None and "cannot be told" in why
    assert summed_rates(HAIKU, "batch_upto_50000", 3 * T, 4)[0] == rates_at(HAIKU, 0)
    assert summed_rates(HAIKU, "batch_over_150000", 3 * T, 2)[0] == rates_at(HAIKU, T + 1)
    assert summed_rates(HAIKU, "batch_upto_150000", 3 * T, 4)[0] is None
    assert summed_rates(HAIKU, "batch_over_50000", 3 * T, 2)[0] is None
    meter = SpendMeter("anthropic", "claude-haiku-5-5", [HAIKU])
    meter.add_usage(two_short, "batch", 2)
    assert meter.spend.dollars == pytest.approx((T * 0.10 + 10 * 0.5) / 2e6)
    meter.add_usage(vb.Usage(input=3 * T), "batch", 3)
    assert meter.spend.dollars is None and "cannot be told" in str(meter.spend)
    # A price without bands prices any sum; names are read for their tier.
    assert summed_rates(vb.Price("x", 1, 2), "flex_over_100000", 9 * T, 9)[0] == vb.Price("x", 1, 2)
    assert base_tier("flex_over_100000") == "flex" and base_tier("batch") == "batch"
    assert banded_tier("batch", T, T) == "batch_upto_100000"
    assert banded_tier("batch", T, T + 1) == "batch_over_100000"


def test_a_band_is_checked() -> None:
    for bad, said in (
        ({"prompt_tokens": 0}, "whole number from 1"),
        ({"prompt_tokens": True}, "whole number from 1"),
        ({"prompt_tokens": 10, "input": 1.0}, "input and output both"),
        ({"prompt_tokens": 10, "cache_read": 1.0}, "cache rates without"),
        ({"prompt_tokens": 10, "input": -1.0, "output": 1.0}, "input must be"),
    ):
        with pytest.raises(vb.InvalidRequestError, match=said) as err:
            vb.PriceBand(**bad)  # type: ignore[arg-type]
        assert err.value.field == "prices"
    with pytest.raises(vb.InvalidRequestError, match=r"above must be a vertexbatch\.PriceBand"):
        vb.Price("x", 1, 2, above={"prompt_tokens": 5})  # type: ignore[arg-type]
