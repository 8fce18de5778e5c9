"""A run's spend: batch answers at batch prices, online answers at the tier they were billed at."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import task
from vertexbatch._command.cli import main
from vertexbatch._plans.spend import usage_cost
from vertexbatch._runs.run import summary_line
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


def _priced_keys(run: vb.Run) -> vb.Spend:
    """What a results pass's meter gives: each key's answer at the tier it was billed at."""
    meter = vb.SpendMeter(run.provider, run.model)
    for item in run.key_results():
        meter.add(item.result, item.tier)
    return meter.spend


def _same_spend(seen: vb.Spend | None, counted: vb.Spend) -> None:
    assert seen is not None and seen.dollars is not None and counted.dollars is not None
    assert seen.dollars == pytest.approx(counted.dollars) and seen.dollars > 0
    assert seen.tiers == counted.tiers and seen.answers == counted.answers
    assert (seen.input, seen.output, seen.cache_read, seen.cache_write) == (
        counted.input,
        counted.output,
        counted.cache_read,
        counted.cache_write,
    )


def _late_run(client: vb.Client, stack: LocalStack, run_id: str) -> vb.Run:
    """Shard 0 finished from its batch job, shard 1 answered online past the deadline."""
    for index in range(2):
        stack.faults.hold(display_name=f"{run_id}.s{index}", state="PENDING")
    run = client.run_claude(run_id, MODEL, [task(i) for i in range(4)], shard_size=2)
    assert run.status().spend is None  # no shard finished: nothing recorded yet
    stack.faults.release(f"{run_id}.s0")
    job = client.find(f"{run_id}.s0")
    assert job is not None
    stack.wait_job(job.name)
    first = run.advance()  # finishes shard 0 from its job
    assert not first.done and first.spend is not None and first.spend.tiers == {"batch": 2}
    assert "the 1 finished shard(s) of 2" in first.spend.notes[-1]
    assert "finished shards: spend $" in summary_line(first)
    summary = run.advance(deadline=datetime.now(UTC) - timedelta(seconds=1), fallback="online")
    assert summary.done and summary.outcomes == {"ok": 4}
    return run


def test_status_shows_the_spend_a_results_pass_counts(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A run's status prices its finished shards from their done records (read through the
    progress record), at the tier each answer was billed at: the results pass's figure."""
    run = _late_run(client, stack, "spent-status")
    counted = _priced_keys(run)
    assert counted.tiers == {"batch": 2, "standard": 2}
    for summary in (run.status(), client.open_run("spent-status").status(), run.advance()):
        _same_spend(summary.spend, counted)
        assert summary.spend is not None and summary.spend.notes == counted.notes
    env = stack.environment(bucket, prefix="jobs")
    printed = CliRunner().invoke(main, ["run", "status", "spent-status"], env=env)
    assert printed.exit_code == 0, printed.output
    assert f"; spend {counted} at batch, standard prices\n" in printed.stdout, printed.stdout
    as_json = CliRunner().invoke(main, ["run", "status", "spent-status", "--json"], env=env)
    record = json.loads(as_json.stdout)["spend"]
    assert record["dollars"] == pytest.approx(counted.dollars)
    assert record["tiers"] == {"batch": 2, "standard": 2}


def test_a_shard_finished_by_an_earlier_version_makes_the_spend_unknown(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A done record without usage (as earlier versions wrote them): the spend is unknown,
    never 0, and says why; a progress entry without usage is read again, not trusted."""
    run = _late_run(client, stack, "spent-old")
    counted = _priced_keys(run)
    store = stack.storage_client().bucket(bucket)
    progress = store.blob("jobs/spent-old/progress.json")
    entries = json.loads(progress.download_as_bytes())
    # An earlier version's progress entries: counts only, no usage token.
    entries["done"] = {k: v.rsplit(" ", 1)[0] for k, v in entries["done"].items()}
    progress.upload_from_string(json.dumps(entries))
    _same_spend(run.status().spend, counted)  # the done records read again
    done = store.blob("jobs/spent-old.s1/done.json")
    record = json.loads(done.download_as_bytes())
    del record["usage"], record["priced_on"]  # an earlier version wrote neither
    done.upload_from_string(json.dumps(record))
    for summary in (run.status(), run.advance(), run.status()):
        spend = summary.spend
        assert spend is not None and spend.dollars is None and spend.tiers == {"batch": 2}
        assert spend.notes[0].startswith("spent-old.s1 finished under an earlier vertexbatch")
    printed = CliRunner().invoke(
        main, ["run", "status", "spent-old"], env=stack.environment(bucket, prefix="jobs")
    )
    assert "; spend unknown (spent-old.s1 finished under an earlier vertexbatch" in (
        printed.stdout
    ), printed.stdout
