"""The canary's answers in the spend: recorded with the id's manifest (a run's: its ledger) and
counted, at the tier they were billed at (Standard), by the readers that show a job's or a
run's spend; once, however often the id is submitted again."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import CLAUDE, advance_until_done, claude_request, claude_requests, task
from vertexbatch._command.cli import main
from vertexbatch._plans.prices import price_of
from vertexbatch._plans.spend import usage_cost
from vertexbatch._runs.ledger import Ledger, Shard, read_ledger
from vertexbatch._staged.manifest import Manifest, read_manifest
from vertexbatch._staged.usage import MAX_TIERS, OTHER, summed
from vertexbatch.emulator import LocalStack


def _summary(stack: LocalStack, bucket: str, id: str) -> dict[str, Any]:
    """``vertexbatch results ID --json``: its summary object (stderr's last line)."""
    printed = CliRunner().invoke(
        main, ["results", id, "--json"], env=stack.environment(bucket, prefix="jobs")
    )
    assert printed.exit_code == 0, printed.output
    summary: dict[str, Any] = json.loads(printed.stderr.strip().splitlines()[-1])
    return summary


def test_the_results_summary_counts_the_canary_once_at_standard(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """canary=2: the manifest records the two online answers' usage at Standard, and
    `vertexbatch results` counts them beside the batch answers; submitting the id again adopts
    its job, sends no canary and leaves the record: they are counted once."""
    requests = claude_requests(3)
    job = client.submit_claude("cs-1", CLAUDE, requests, canary=2)
    assert stack.calls()["rawPredict"] == 2
    manifest = read_manifest(client._cloud.staging, "cs-1")
    assert manifest is not None
    (recorded,) = manifest.canary.items()
    tier, (answers, input, output, *cache) = recorded
    assert (tier, answers, cache) == ("standard", 2, [0, 0]) and input > 0 and output > 0
    stack.wait_job(job.name)
    meter = vb.SpendMeter(job.provider, job.model)
    batch = list(meter.counted(client.results(job)))
    assert meter.spend.tiers == {"batch": 3}

    summary = _summary(stack, bucket, "cs-1")
    spend = summary["spend"]
    assert spend["tiers"] == {"batch": 3, "standard": 2} and spend["answers"] == 5
    assert spend["input"] == meter.spend.input + input
    assert spend["output"] == meter.spend.output + output
    price = price_of(CLAUDE)  # the shipped catalogue's, as the command prices
    assert price is not None
    canary_cost = usage_cost("anthropic", vb.Usage(input, output), price, "standard")
    assert canary_cost is not None and meter.spend.dollars is not None
    assert spend["dollars"] == pytest.approx(meter.spend.dollars + canary_cost)
    assert len(batch) == 3
    words = CliRunner().invoke(
        main, ["results", "cs-1"], env=stack.environment(bucket, prefix="jobs")
    )
    assert "at batch, standard prices" in words.stderr, words.stderr

    again = client.submit_claude("cs-1", CLAUDE, requests, canary=2)
    assert again == job and stack.calls()["rawPredict"] == 2
    assert read_manifest(client._cloud.staging, "cs-1") == manifest
    assert _summary(stack, bucket, "cs-1")["spend"] == spend


def test_a_submission_without_a_canary_records_none(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    job = client.submit_claude("cs-2", CLAUDE, claude_requests(2))
    manifest = read_manifest(client._cloud.staging, "cs-2")
    assert manifest is not None and manifest.canary == {}
    raw = stack.storage_client().bucket(bucket).blob("jobs/cs-2/manifest.json")
    assert "canary" not in json.loads(raw.download_as_bytes())
    stack.wait_job(job.name)
    assert _summary(stack, bucket, "cs-2")["spend"]["tiers"] == {"batch": 2}


def test_a_retry_after_staging_failed_records_its_own_canary(
    client: vb.Client, stack: LocalStack
) -> None:
    """The canary passes, then staging stops at a bad request further on: no manifest, no
    record. The corrected retry sends its canary again and records that one only."""
    bad = vb.ClaudeRequest("key-2", {"max_tokens": 64, "messages": [], "no_such_field": 1})
    requests = [*claude_requests(2), bad]
    with pytest.raises(vb.InvalidRequestError):
        client.submit_claude("cs-3", CLAUDE, requests, canary=2)
    assert stack.calls()["rawPredict"] == 2
    assert read_manifest(client._cloud.staging, "cs-3") is None
    requests[2] = claude_request("key-2", "Fine.")
    client.submit_claude("cs-3", CLAUDE, requests, canary=2)
    assert stack.calls()["rawPredict"] == 4
    manifest = read_manifest(client._cloud.staging, "cs-3")
    assert manifest is not None and manifest.canary["standard"][0] == 2


def test_a_run_counts_its_canary_in_its_spend_once(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A run's canary is recorded in its ledger: the status's spend (from the first finished
    shard on) and `run results` count it at Standard; a rejoin sends none and keeps it."""
    requests = [task(i) for i in range(4)]
    run = client.run_claude("csr", CLAUDE, requests, shard_size=2, canary=2)
    assert stack.calls()["rawPredict"] == 2
    ledger = read_ledger(client._cloud.staging, "csr")
    assert ledger is not None and ledger.canary["standard"][0] == 2
    summary = advance_until_done(stack, run)
    assert summary.done and summary.spend is not None
    assert summary.spend.tiers == {"batch": 4, "standard": 2}
    rejoined = client.run_claude("csr", CLAUDE, requests, shard_size=2, canary=2)
    assert stack.calls()["rawPredict"] == 2
    spend = rejoined.status().spend
    assert spend is not None and spend.tiers == {"batch": 4, "standard": 2}
    assert spend.dollars == pytest.approx(summary.spend.dollars)
    printed = CliRunner().invoke(
        main, ["run", "results", "csr"], env=stack.environment(bucket, prefix="jobs")
    )
    assert printed.exit_code == 0, printed.output
    assert f"; spend {spend} at batch, standard prices" in printed.stderr, printed.stderr


def test_a_run_of_tasks_sums_its_tasks_canaries_in_its_ledger(
    client: vb.Client, stack: LocalStack
) -> None:
    """Each task's canary goes in its record; the ledger, made once both registered, holds
    their sum, and the run's spend counts it; a task retried before the ledger is made sends
    its canary again and keeps the first one's record."""
    rows = [task(i) for i in range(4)]
    client.run_claude("cst", CLAUDE, rows[:2], task=vb.Task(0, 2), shard_size=2, canary=1)
    client.run_claude("cst", CLAUDE, rows[:2], task=vb.Task(0, 2), shard_size=2, canary=1)
    assert stack.calls()["rawPredict"] == 2  # the retry's canary: the ledger is not made yet
    run = client.run_claude("cst", CLAUDE, rows[2:], task=vb.Task(1, 2), shard_size=2, canary=2)
    assert stack.calls()["rawPredict"] == 4
    ledger = read_ledger(client._cloud.staging, "cst")
    assert ledger is not None and ledger.canary["standard"][0] == 3
    summary = advance_until_done(stack, run)
    assert summary.done and summary.spend is not None
    assert summary.spend.tiers == {"batch": 4, "standard": 3}


# ---- the records (no cloud call) ----

_USAGE = {"standard": (2, 30, 40, 0, 0)}


def test_a_manifest_keeps_the_canary_and_refuses_one_it_did_not_write() -> None:
    manifest = Manifest("anthropic", CLAUDE, 3, 300, "0" * 32, canary=_USAGE)
    data = manifest.to_json()
    assert data["canary"] == {"standard": [2, 30, 40, 0, 0]}
    assert Manifest.from_json(json.loads(json.dumps(data)), "m") == manifest
    assert manifest.claims_same(Manifest("anthropic", CLAUDE, 3, 300, "0" * 32))
    for bad in ({}, {"standard": [2, 30]}, {"standard": [9, 1, 1, 0, 0]}, {"Std!": [1] * 5}):
        with pytest.raises(vb.InvalidRequestError, match="'canary' is not"):
            Manifest.from_json({**data, "canary": bad}, "m")


def test_a_ledger_keeps_the_canary_apart_from_what_the_run_is() -> None:
    shards = (Shard("r.s0", 2), Shard("r.s1", 2))
    ledger = Ledger("r", "anthropic", CLAUDE, 3, shards, True, canary=_USAGE)
    data = ledger.to_json()
    assert data["canary"] == {"standard": [2, 30, 40, 0, 0]}
    back = Ledger.from_json(json.loads(json.dumps(data)), "r", "l")
    assert back.canary == _USAGE and back == Ledger("r", "anthropic", CLAUDE, 3, shards, True)
    with pytest.raises(vb.InvalidRequestError, match="'canary' is not"):
        Ledger.from_json({**data, "canary": {"standard": [5, 1, 1, 0, 0]}}, "r", "l")


def test_summed_canaries_keep_at_most_max_tiers() -> None:
    usages = [{f"t{i}": (1, 1, 1, 0, 0)} for i in range(MAX_TIERS + 2)]
    total = summed([_USAGE, _USAGE, *usages])
    assert len(total) == MAX_TIERS and total["standard"] == (4, 60, 80, 0, 0)
    assert total[OTHER] == (4, 4, 4, 0, 0)  # t6 to t9: past the first seven tiers
