"""`--price` takes what `vb.Price` takes: the cache rates, a last day and a band over a prompt
size (`MODEL=IN,OUT[,cache_read=R][,cache_write=W][,until=YYYY-MM-DD][,above=N:IN,OUT[,...]]`);
a plan through the command prices each request in its band, and a malformed word is exit 2
naming its bad part and the rule, before any cloud call."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import free_ports, request_line, write_lines
from vertexbatch._command.cli import main
from vertexbatch._command.cli_price import parse_price
from vertexbatch._command.cli_render import ExitCode
from vertexbatch.emulator import LocalStack

# Outside the catalogue: only --price prices it (a dry run reaches no model).
MODEL = "claude-opus-5-6@default"
FAMILY = "claude-opus-5-6"
HAIKU = "claude-haiku-5-5=0.1,0.5,cache_write=0.125,above=100000:0.5,2.5,cache_write=0.625"


@pytest.mark.parametrize(
    ("word", "price"),
    [
        ("m=5,25", vb.Price("m", 5, 25)),
        ("m=0,1000000", vb.Price("m", 0, 1_000_000)),
        ("m=3,15,cache_read=0.3", vb.Price("m", 3, 15, cache_read=0.3)),
        ("m=3,15,cache_write=3.75", vb.Price("m", 3, 15, cache_write=3.75)),
        (
            "m=3,15,cache_write=3.75,cache_read=0.3",
            vb.Price("m", 3, 15, cache_read=0.3, cache_write=3.75),
        ),
        (
            "gemini-2.5-pro=1.25,10,above=200000:2.5,15",
            vb.Price("gemini-2.5-pro", 1.25, 10, above=vb.PriceBand(200_000, 2.5, 15)),
        ),
        (
            HAIKU,
            vb.Price(
                "claude-haiku-5-5", 0.1, 0.5, cache_write=0.125,
                above=vb.PriceBand(100_000, input=0.5, output=2.5, cache_write=0.625),
            ),
        ),
        (
            "m=1,2,cache_read=0.1,above=1:3,4,cache_read=0.3,cache_write=5",
            vb.Price(
                "m", 1, 2, cache_read=0.1,
                above=vb.PriceBand(1, 3, 4, cache_read=0.3, cache_write=5),
            ),
        ),
        ("m=3,15,until=2026-12-31", vb.Price("m", 3, 15, until=datetime.date(2026, 12, 31))),
        ("m=3,15,until=2028-02-29", vb.Price("m", 3, 15, until=datetime.date(2028, 2, 29))),
        (
            "m=1,2,until=2027-01-01,cache_read=0.1,above=9:3,4",
            vb.Price(
                "m", 1, 2, cache_read=0.1, above=vb.PriceBand(9, 3, 4),
                until=datetime.date(2027, 1, 1),
            ),
        ),
    ],
)  # fmt: skip
def test_each_form_is_the_price_the_python_call_makes(word: str, price: vb.Price) -> None:
    """The word read is equal to `vb.Price(...)` with the same numbers, band and cache rates."""
    assert parse_price(word) == price


# Each malformed word, and what its message names: the bad part, and the rule's words.
MALFORMED = [
    ("m", "no '=' between MODEL and its rates"),
    ("=1,2", "no MODEL before '='"),
    ("m=1", "INPUT,OUTPUT come first, two numbers, got '1'"),
    ("m=1,cache_read=2", "INPUT,OUTPUT come first, two numbers, got '1,cache_read=2'"),
    ("m=1,2,3", "'3' is not named: after INPUT,OUTPUT a rate is cache_read=R or cache_write=W"),
    ("m=1,2,", "an empty rate (a comma too many)"),
    ("m=x,2", "'x' (INPUT) is not a number"),
    ("m=nan,2", "'nan' (INPUT) is not a list price from 0 to 1,000,000"),
    ("m=1,-2", "'-2' (OUTPUT) is not a list price from 0 to 1,000,000"),
    ("m=1,2,cache_read=inf", "'inf' (cache_read) is not a list price from 0 to 1,000,000"),
    ("m=1,2,cache_hit=0.1", "'cache_hit' is no rate --price takes: cache_read, cache_write"),
    ("m=1,2,Cache_read=0.1", "'Cache_read' is no rate --price takes"),
    ("m=1,2,cache_read=1,cache_read=2", "cache_read is given twice"),
    ("m=1,2,above=0:3,4", "above='0' is no threshold: a whole number of prompt tokens from 1"),
    ("m=1,2,above=-5:3,4", "above='-5' is no threshold"),
    ("m=1,2,above=1.5:3,4", "above='1.5' is no threshold"),
    ("m=1,2,above=2e5:3,4", "above='2e5' is no threshold"),
    ("m=1,2,above=200000", "above=200000 has no rates: above=N:INPUT,OUTPUT"),
    ("m=1,2,above=200,000:3,4", "above=200 has no rates"),
    ("m=1,2,above=200000:3", "INPUT,OUTPUT of the band over 200000 prompt tokens come first"),
    ("m=1,2,above=200000:", "INPUT,OUTPUT of the band over 200000 prompt tokens come first"),
    ("m=1,2,above=9:3,2e6", "'2e6' (OUTPUT of the band over 9 prompt tokens) is not a list price"),
    ("m=1,2,above=9:3,4,cache_hit=1", "'cache_hit' of the band over 9 prompt tokens is no rate"),
    ("m=1,2,above=9:3,4,cache_write=x", "'x' (cache_write of the band over 9 prompt tokens)"),
    ("m=1,2,above=9:3,4,above=10:5,6", "one band only: a second above="),
    ("m=1,2,until=2026-12-32", "until='2026-12-32' is no day: the price's last day (UTC) as"),
    ("m=1,2,until=2027-02-29", "until='2027-02-29' is no day"),
    ("m=1,2,until=20261231", "until='20261231' is no day"),
    ("m=1,2,until=2026-W53-4", "until='2026-W53-4' is no day"),
    ("m=1,2,until=2026-12-31T00:00", "until='2026-12-31T00:00' is no day"),
    ("m=1,2,until=", "until='' is no day"),
    ("m=1,2,until=2026-12-31,until=2027-01-01", "until is given twice"),
    (
        "m=1,2,above=9:3,4,until=2026-12-31",
        "until='2026-12-31' of the band over 9 prompt tokens: until= is the whole price's last "
        "day, a band has none of its own: give it before above=",
    ),
]


@pytest.mark.parametrize(("word", "said"), MALFORMED, ids=[word for word, _ in MALFORMED])
def test_a_malformed_price_is_a_usage_error_naming_its_part_and_the_rule(
    tmp_path: Path, word: str, said: str
) -> None:
    """Exit 2 naming --price, the bad part and the whole form, with nothing listening where the
    command's cloud would be: the word is refused before any cloud call."""
    vertex, storage = (f"http://127.0.0.1:{port}" for port in free_ports(2))
    env = {
        "GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "us-central1",
        "VERTEXBATCH_BUCKET": "b", "VERTEXBATCH_VERTEX_ENDPOINT": vertex,
        "STORAGE_EMULATOR_HOST": storage,
    }  # fmt: skip
    path = write_lines(tmp_path / "in.jsonl", [request_line("a")])
    args = ["submit", "--provider", "claude", "--model", MODEL, "--id", "p-1", "--dry-run"]
    result = CliRunner().invoke(main, [*args, "--price", word, str(path)], env=env)
    assert result.exit_code == ExitCode.USAGE, result.output
    shown = " ".join(result.output.split())
    assert "Invalid value for --price" in shown and said in shown, shown
    form = "MODEL=INPUT,OUTPUT[,cache_read=R][,cache_write=W][,until=YYYY-MM-DD][,above=N:"
    assert f"--price is {form}" in shown
    assert "online list prices in US dollars per million tokens" in shown


@pytest.fixture
def dry_run(stack: LocalStack, bucket: str, tmp_path: Path) -> Callable[..., dict[str, Any]]:
    """The --dry-run --json plan of one Claude request, with these extra arguments."""
    env = stack.environment(bucket, prefix="jobs")
    path = write_lines(tmp_path / "in.jsonl", [request_line("a")])

    def invoke(*args: str) -> dict[str, Any]:
        base = ["submit", "--provider", "claude", "--model", MODEL, "--id", "band-1", "--dry-run"]
        shown = CliRunner().invoke(main, [*base, "--json", *args, str(path)], env=env)
        assert shown.exit_code == 0, shown.output
        return dict(json.loads(shown.stdout))

    return invoke


@pytest.mark.parametrize("offset", [-1, 0, 1], ids=["just-above", "at", "just-below"])
def test_a_plan_prices_its_request_in_its_band_as_python_does(
    dry_run: Callable[..., dict[str, Any]], client: vb.Client, offset: int
) -> None:
    """Threshold one under the request's prompt: the band's rates; at it or one over: the
    lower rates (a prompt of exactly N is "up to N"). The command's plan is Python's."""
    prompt = dry_run()["input_tokens"]  # this request's estimated prompt tokens
    threshold = prompt + offset
    plan = dry_run("--price", f"{FAMILY}=1,2,cache_read=0.1,above={threshold}:10,20,cache_write=25")
    assert plan["price"] == {
        "match": FAMILY, "input": 1.0, "output": 2.0, "cache_read": 0.1, "cache_write": None,
        "above": {
            "prompt_tokens": threshold, "input": 10.0, "output": 20.0, "cache_read": None,
            "cache_write": 25.0,
        },
        "until": None,
    }  # fmt: skip
    over = offset < 0
    rates = (10, 20) if over else (1, 2)
    assert plan["cost_low"] == pytest.approx(prompt * rates[0] * 0.5 / 1e6)
    assert plan["cost_high"] == pytest.approx(plan["cost_low"] + 64 * rates[1] * 0.5 / 1e6)
    assert f"{int(over)} request(s) here are over it" in " ".join(plan["assumptions"])
    band = vb.PriceBand(threshold, 10, 20, cache_write=25)
    price = vb.Price(FAMILY, 1, 2, cache_read=0.1, above=band)
    request = vb.ClaudeRequest("a", json.loads(request_line("a"))["params"])
    python = client.plan_claude("band-1", MODEL, [request], prices=[price])
    assert (plan["cost_low"], plan["cost_high"]) == (python.cost_low, python.cost_high)
    assert plan["price"] == python.to_dict()["price"]


def test_the_printed_plan_and_the_budget_see_the_band(
    stack: LocalStack, bucket: str, tmp_path: Path
) -> None:
    """The table names the band's rates; a budget between the two bands' costs lets the
    request at the threshold through and refuses it one token over (exit 3)."""
    env = stack.environment(bucket, prefix="jobs")
    path = write_lines(tmp_path / "in.jsonl", [request_line("a")])
    base = ["plan", "--provider", "claude", "--model", MODEL, "--id", "band-2", str(path)]
    prompt = json.loads(CliRunner().invoke(main, [*base, "--json"], env=env).stdout)["input_tokens"]

    def plan(threshold: int, *args: str) -> Any:
        word = f"{FAMILY}=1,2,above={threshold}:10,20"
        return CliRunner().invoke(main, [*base, "--price", word, *args], env=env)

    shown = plan(prompt - 1)
    assert shown.exit_code == 0, shown.output
    assert f"over {prompt - 1:,} tokens is billed wholly at $10 input / $20 output" in shown.stdout
    lower_high = (prompt * 1 + 64 * 2) * 0.5 / 1e6
    budget = f"{lower_high * 2:.10f}"  # over the lower band's upper bound, under the band's
    assert plan(prompt, "--budget", budget).exit_code == 0
    refused = plan(prompt - 1, "--budget", budget)
    assert refused.exit_code == ExitCode.INVALID_REQUEST, refused.output
    assert "budget" in refused.output


def test_a_dry_run_shows_the_price_s_last_day_and_holds_the_price_to_it(
    dry_run: Callable[..., dict[str, Any]],
) -> None:
    """`until=` is the plan's `price.until`; a day past it is today (UTC), and the plan's cost
    is unknown, naming the day, as for a catalogue price (never the old figure)."""
    today = datetime.datetime.now(datetime.UTC).date()
    holds = dry_run("--price", f"{FAMILY}=1,2,until={today.isoformat()}")
    assert holds["price"]["until"] == today.isoformat() and holds["cost_low"] > 0
    yesterday = (today - datetime.timedelta(days=1)).isoformat()
    lapsed = dry_run("--price", f"{FAMILY}=1,2,until={yesterday},above=5:3,4")
    assert lapsed["price"] is None and lapsed["cost_low"] is None
    assert lapsed["price_until"] == yesterday
    assert f"the price read holds until {yesterday}" in " ".join(lapsed["assumptions"])
