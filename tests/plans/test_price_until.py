"""A price's last day (``Price.until``, the catalogue's ``rates_until``): a plan made on it is
priced, one made after it is unknown and says why, a budget refuses it naming the day, and a
spend is priced on the day it is given (pure: the day is handed in)."""

from __future__ import annotations

import datetime
import json

import pytest
from google.genai.types import GenerateContentConfigDict

import vertexbatch as vb
from vertexbatch._command.cli_plan import plan_lines
from vertexbatch._plans.budget import budgeted
from vertexbatch._plans.estimate import Plan, build_plan, submitted_plan
from vertexbatch._plans.spend import SpendMeter
from vertexbatch._requests.lines import StagedLine, gemini_line

FLASH = "gemini-3.8-flash"  # the catalogue's: $0.75 / $3.75, "through December 31, 2026"
LAST = datetime.date(2026, 12, 31)
AFTER = datetime.date(2027, 1, 1)
SAID = "the price read holds until 2026-12-31"


def _lines() -> list[StagedLine]:
    config: GenerateContentConfigDict = {"max_output_tokens": 100}
    return [gemini_line(vb.GeminiRequest(f"k{i}", f"Ticket {i}.", config)) for i in range(3)]


def _plan(today: datetime.date) -> Plan:
    return build_plan("google", FLASH, _lines(), dedupe=False, today=today)


def test_a_plan_on_the_last_day_is_priced_at_the_catalogue_s_rates() -> None:
    plan = _plan(LAST)
    assert plan.price is not None and (plan.price.input, plan.price.output) == (0.75, 3.75)
    assert plan.price_until == ""
    assert f"{SAID}: a plan made after it prices the model unknown" in plan.assumptions
    low = plan.input_tokens * 0.75 * 0.5 / 1e6
    assert plan.cost_low == pytest.approx(low)
    assert plan.cost_high == pytest.approx(low + 300 * 3.75 * 0.5 / 1e6)
    # Its JSON names the day as a string (what --dry-run --json prints).
    assert json.loads(json.dumps(plan.to_dict()))["price"]["until"] == "2026-12-31"


def test_a_plan_the_day_after_is_unknown_and_says_why() -> None:
    """Never the old figure: no price, no cost; the assumptions and the command's table say the
    price read holds until 2026-12-31."""
    plan = _plan(AFTER)
    assert plan.price is None and plan.price_until == "2026-12-31"
    assert (plan.cost_low, plan.cost_high) == (None, None)
    (said,) = [a for a in plan.assumptions if SAID in a]
    assert f"model {FLASH!r} on 2027-01-01 (UTC" in said and "pass prices=" in said
    assert not any("$0.75" in a or "0.75" in a for a in plan.assumptions)
    assert f"unknown ({SAID})" in "\n".join(plan_lines(plan, "submission 'x'"))
    assert json.loads(json.dumps(plan.to_dict()))["price_until"] == "2026-12-31"
    # A plan of requests already submitted says the same.
    held = submitted_plan("google", FLASH, _lines(), "jobs/1", 0, today=AFTER)
    assert held.price is None and held.price_until == "2026-12-31"


def test_a_budget_the_day_after_is_refused_naming_the_day() -> None:
    with pytest.raises(vb.InvalidRequestError) as err:
        budgeted("google", FLASH, _lines(), 100.0, "submission 's'", today=AFTER)
    assert err.value.field == "budget"
    assert f"the price read for model {FLASH!r} holds until 2026-12-31" in str(err.value)
    assert "nothing was staged" in str(err.value) and "Ticket" not in str(err.value)
    # On the last day the same budget holds, and today's own price passes after it.
    assert len(list(budgeted("google", FLASH, _lines(), 100.0, "s", today=LAST))) == 3
    mine = [vb.Price(FLASH, 1.5, 7.5)]
    assert len(list(budgeted("google", FLASH, _lines(), 100.0, "s", prices=mine, today=AFTER))) == 3


def test_a_caller_s_own_price_with_a_last_day_holds_to_it_too() -> None:
    mine = [vb.Price(FLASH, 1.5, 7.5, until=AFTER)]
    assert build_plan("google", FLASH, _lines(), dedupe=False, prices=mine, today=AFTER).price
    later = build_plan(
        "google", FLASH, _lines(), dedupe=False, prices=mine, today=datetime.date(2027, 1, 2)
    )
    assert later.price is None and later.price_until == "2027-01-01"


def test_a_spend_is_priced_on_the_day_it_is_given() -> None:
    """The day the job was created: on the last day at the rates; after it unknown, its note
    naming the day, never 0 nor the old figure."""
    usage = vb.Result(key="k", text="x", usage=vb.Usage(input=1_000_000, output=100_000))
    on_time = SpendMeter("google", FLASH, priced_on=LAST)
    on_time.add(usage)
    assert on_time.spend.dollars == pytest.approx((0.75 + 0.375) * 0.5)
    late = SpendMeter("google", FLASH, priced_on=AFTER)
    late.add(usage)
    spend = late.spend
    assert spend.dollars is None and spend.price is None and spend.input == 1_000_000
    assert spend.notes[0].startswith(f"the price read for model {FLASH!r} holds until 2026-12-31")
    assert "2027-01-01" in spend.notes[0]
    assert spend.summary().startswith("spend unknown (the price read for model")
