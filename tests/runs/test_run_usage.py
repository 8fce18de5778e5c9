"""A finished shard's usage per tier: added up as its results stream, kept in its done record
and in the progress record's entry, and priced into a run's spend as the answers are (pure)."""

from __future__ import annotations

import datetime
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vertexbatch as vb
from tests.helpers import examples
from vertexbatch._plans.spend import SpendMeter
from vertexbatch._runs.done import Done, _record, parse_done
from vertexbatch._runs.ledger import Shard
from vertexbatch._runs.records import _cached_done
from vertexbatch._runs.usage import (
    MAX_TIERS,
    OTHER,
    RunSpend,
    Tally,
    decode_day,
    decode_usage,
    encode_usage,
    parse_usage,
    usage_json,
)

MODEL = "claude-opus-5-5@default"  # priced in the catalogue
_SHARD = Shard("run.s0", 4)
_DAY = datetime.date(2026, 12, 1)  # a day its jobs were created


def _answer(key: str, **usage: int) -> vb.Result:
    return vb.Result(key=key, text="x", usage=vb.Usage(**usage))


def test_a_tally_counts_what_a_spend_meter_counts_per_tier() -> None:
    tally = Tally()
    tally.add(_answer("a", input=10, output=5), "batch")
    tally.add(_answer("b", input=20, output=7, cache_read=3, cache_write=1), "batch")
    tally.add(_answer("c", input=1, output=2), "standard")
    tally.add(vb.Result(key="d", text="x", usage=vb.Usage(input=9), cached=True), "batch")
    tally.add(vb.Result(key="e", text="x", usage=vb.Usage(input=9), shared=True), "batch")
    tally.add(vb.Result(key="f", error=vb.MissingError("gone", key="f")), "batch")
    assert tally.usage() == {"batch": (2, 30, 12, 3, 1), "standard": (1, 1, 2, 0, 0)}


def test_a_tally_keeps_at_most_max_tiers_and_short_names() -> None:
    tally = Tally()
    names = [f"t{i}" for i in range(MAX_TIERS + 3)] + ["ON DEMAND", "x" * 40]
    for name in names:
        tally.add(_answer(name, input=1, output=1), name)
    usage = tally.usage()
    assert len(usage) == MAX_TIERS
    assert usage[OTHER][0] == len(names) - (MAX_TIERS - 1)
    assert parse_usage(usage_json(usage), len(names)) == usage


def test_summed_usage_prices_as_each_answer() -> None:
    """The spend of a shard's sums equals a meter's over its answers (tokens are linear)."""
    answers = [
        (_answer("a", input=1200, output=340, cache_read=100), "batch"),
        (_answer("b", input=999, output=1, cache_write=50), "batch"),
        (_answer("c", input=77, output=800), "standard"),
        (_answer("d", input=5, output=9), "flex"),
    ]
    meter = SpendMeter("anthropic", MODEL)
    tally = Tally()
    for result, tier in answers:
        meter.add(result, tier)
        tally.add(result, tier, _DAY)
    spent = RunSpend("anthropic", MODEL)
    spent.add("run.s0", tally.usage(), tally.day)
    spend = spent.spend(1)
    assert spend is not None and meter.spend.dollars is not None
    assert spend.dollars == pytest.approx(meter.spend.dollars) and spend.dollars > 0
    assert (spend.answers, spend.tiers) == (meter.spend.answers, meter.spend.tiers)
    assert (spend.input, spend.output, spend.cache_read, spend.cache_write) == (
        meter.spend.input,
        meter.spend.output,
        meter.spend.cache_read,
        meter.spend.cache_write,
    )
    assert spend.notes == meter.spend.notes


def test_a_run_spend_over_shards() -> None:
    spent = RunSpend("anthropic", MODEL)
    assert spent.spend(3) is None  # no shard finished: nothing recorded yet
    spent.add("run.s0", {"batch": (2, 1000, 200, 0, 0)})
    spent.add("run.s1", {})  # finished, nothing paid (the answer cache answered it)
    partial = spent.spend(3)
    assert partial is not None and partial.dollars is not None and partial.dollars > 0
    assert "the 2 finished shard(s) of 3" in partial.notes[-1]
    assert partial.summary().startswith("spend $")
    spent.add("run.s2", None)  # finished by an earlier version: no usage in its record
    unknown = spent.spend(3)
    assert unknown is not None and unknown.dollars is None and unknown.answers == 2
    assert unknown.notes[0].startswith("run.s2 finished under an earlier vertexbatch")
    assert unknown.summary() == (
        "spend unknown (run.s2 finished under an earlier vertexbatch, whose done record "
        "holds no usage)"
    )
    unpriced = RunSpend("anthropic", "claude-none-such")
    unpriced.add("run.s0", {"batch": (1, 10, 10, 0, 0)})
    assert (spend := unpriced.spend(1)) is not None and spend.dollars is None


@settings(max_examples=examples(300))
@given(
    st.none()
    | st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9_]{0,31}", fullmatch=True),
        st.tuples(*[st.integers(0, 10**15)] * 4),
        max_size=MAX_TIERS,
    )
)
def test_a_progress_token_holds_the_record_s_usage(
    sums: dict[str, tuple[int, int, int, int]] | None,
) -> None:
    usage = None if sums is None else {tier: (1, *tokens) for tier, tokens in sums.items()}
    keys = MAX_TIERS
    token = encode_usage(usage)
    assert " " not in token
    assert decode_usage(token, keys) == (True, usage)
    if usage is not None:
        assert parse_usage(json.loads(json.dumps(usage_json(usage))), keys) == usage


def test_a_token_trims_cache_tokens_only_when_none() -> None:
    assert encode_usage({}) == "u"
    assert encode_usage({"batch": (2, 30, 12, 0, 0)}) == "ubatch:2,30,12"
    assert encode_usage({"batch": (2, 30, 12, 3, 0), "flex": (1, 1, 1, 0, 4)}) == (
        "ubatch:2,30,12,3;flex:1,1,1,0,4"
    )


@pytest.mark.parametrize(
    "token",
    ["", "x", "ubatch", "ubatch:1,2", "ubatch:1,2,3,4,5,6", "ubatch:1,-2,3", "uBATCH:1,2,3",
     "ubatch:1,2,3;batch:1,2,3", "ubatch:9,1,1", "ubatch:1,2,3;", "ubatch:\u0661,2,3"],
)  # fmt: skip
def test_a_token_that_does_not_hold_is_read_again(token: str) -> None:
    assert decode_usage(token, 4) == (False, None)


@pytest.mark.parametrize(
    "usage",
    [
        [],
        {"batch": [1, 2, 3, 4]},
        {"batch": [1, 2, 3, 4, -1]},
        {"batch": [1, 2, 3, 4, True]},
        {"batch": [5, 0, 0, 0, 0]},  # more answers than the shard's 4 keys
        {"Batch": [1, 0, 0, 0, 0]},
        {f"t{i}": [0, 0, 0, 0, 0] for i in range(MAX_TIERS + 1)},
    ],
)
def test_a_damaged_usage_field_is_refused(usage: object) -> None:
    assert parse_usage(usage, 4) is None
    record = {"shard": "run.s0", "outcomes": {"ok": 4}, "online": False, "usage": usage}
    with pytest.raises(vb.InvalidRequestError, match="not a vertexbatch shard record") as info:
        parse_done(record, _SHARD, "gs://b/run.s0/done.json")
    assert info.value.field == "staging"


def test_a_done_record_with_and_without_usage() -> None:
    record = {"shard": "run.s0", "outcomes": {"ok": 4}, "online": False}
    assert parse_done(record, _SHARD, "x") == Done({"ok": 4}, None)  # an earlier version's
    record["usage"] = {"batch": [4, 100, 20, 0, 0]}
    assert parse_done(record, _SHARD, "x") == Done({"ok": 4}, {"batch": (4, 100, 20, 0, 0)})
    record["priced_on"] = "2026-12-01"
    done = Done({"ok": 4}, {"batch": (4, 100, 20, 0, 0)}, _DAY)
    assert parse_done(record, _SHARD, "x") == done
    assert parse_done(json.loads(json.dumps(_record(_SHARD, done, False))), _SHARD, "x") == done


def test_a_progress_entry_of_an_earlier_version_is_not_used() -> None:
    """An entry without a usage token, or without the day token, may stand for a record with
    them: it is read again."""
    assert _cached_done("17 0 0 4 0 0", 17, 4) is None
    assert _cached_done("17 0 0 4 0 0 -", 17, 4) is None
    assert _cached_done("17 0 0 4 0 0 ubatch:4,100,20", 17, 4) is None
    assert _cached_done("17 0 0 4 0 0 - -", 17, 4) == Done({"ok": 4}, None)
    assert _cached_done("17 0 0 4 0 0 ubatch:4,100,20 -", 17, 4) == Done(
        {"ok": 4}, {"batch": (4, 100, 20, 0, 0)}
    )
    assert _cached_done("17 0 0 4 0 0 ubatch:4,100,20 2026-12-01", 17, 4) == Done(
        {"ok": 4}, {"batch": (4, 100, 20, 0, 0)}, _DAY
    )
    assert _cached_done("18 0 0 4 0 0 u -", 17, 4) is None  # another generation
    assert _cached_done("17 0 0 3 0 0 u -", 17, 4) is None  # counts not of the shard's keys


@pytest.mark.parametrize("token", ["", "x", "20261201", "2026-W49-2", "2026-13-01", "2026-12-1"])
def test_a_day_token_or_field_that_does_not_hold(token: str) -> None:
    """A progress entry's day that is not YYYY-MM-DD is read again; a record's is refused, as
    is a day in a record without usage (an edit: records with a day always have usage)."""
    assert decode_day(token) == (False, None)
    assert _cached_done(f"17 0 0 4 0 0 ubatch:4,100,20 {token}", 17, 4) is None
    record = {"shard": "run.s0", "outcomes": {"ok": 4}, "online": False, "priced_on": token}
    record["usage"] = {"batch": [4, 100, 20, 0, 0]}
    with pytest.raises(vb.InvalidRequestError, match="the day it is priced on"):
        parse_done(record, _SHARD, "gs://b/run.s0/done.json")
    del record["usage"]
    record["priced_on"] = "2026-12-01"
    with pytest.raises(vb.InvalidRequestError, match="not a vertexbatch shard record"):
        parse_done(record, _SHARD, "gs://b/run.s0/done.json")
