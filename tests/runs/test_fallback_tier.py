"""A run's ``fallback_tier``: checked before any cloud call, kept in the ledger, sent by every
online call past the deadline, and each answer's billed tier recorded (online.jsonl rows,
``Result.tier``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import (
    CLAUDE,
    advance_until_done,
    claude_requests,
    client_in,
    gemini_requests,
    past,
    shard_object,
)
from vertexbatch._catalogue import Model, Source, catalogue_of
from vertexbatch._catalogue import catalogue as shipped_rows
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode
from vertexbatch._runs.ledger import Ledger, Shard, encoded_size, ledger_size
from vertexbatch.emulator import LocalStack

FLEX = "gemini-2.5-flash"  # served by the stack; the rows below mark it Flex
RIGID = "gemini-3.8-flash"
_SOURCE = (Source("https://docs.cloud.google.com/vertex-ai/generative-ai/docs/flex-paygo", "x"),)


@pytest.fixture(autouse=True)
def catalogue() -> Iterator[None]:
    """Catalogue rows: one Gemini model served at Flex, one not (models.toml is data another
    change fills), each at models.toml's rates (prices read the rows in place)."""
    shipped = {model.id: model.rates for model in shipped_rows()}
    rows = tuple(
        Model(
            id=model,
            publisher="google",
            batch=True,
            locations=frozenset({"global", "us-central1"}),
            rates=shipped.get(model),
            flex=flex,
            sources=_SOURCE,
        )
        for model, flex in ((FLEX, True), (RIGID, False))
    )
    with catalogue_of(rows):
        yield


def _client(stack: LocalStack, bucket: str, location: str) -> vb.Client:
    stack.create_bucket(bucket)
    return client_in(stack, bucket, location)


@pytest.fixture
def world(stack: LocalStack, bucket: str) -> vb.Client:
    """A client of the stack in location ``global``, where Flex is served."""
    return _client(stack, bucket, "global")


def _late(client: vb.Client, stack: LocalStack, run_id: str, model: str, **options: Any) -> vb.Run:
    """A run of one shard whose job stays PENDING: past the deadline, every key goes online."""
    stack.faults.hold(display_name=f"{run_id}.s0", state="PENDING")
    return client.run_gemini(run_id, model, gemini_requests(3), **options)


def _rows(stack: LocalStack, bucket: str, run_id: str) -> list[dict[str, Any]]:
    data = shard_object(stack, bucket, run_id, "online.jsonl").download_as_bytes()
    return [json.loads(line) for line in data.splitlines()]


def _ledger(stack: LocalStack, bucket: str, run_id: str) -> dict[str, Any]:
    blob = stack.storage_client().bucket(bucket).blob(f"jobs/{run_id}/run.json")
    return dict(json.loads(blob.download_as_bytes()))


@pytest.mark.parametrize(("tier", "billed"), [("flex", "flex"), ("priority", "priority")])
def test_the_online_answers_are_asked_and_billed_at_the_run_s_tier(
    world: vb.Client, stack: LocalStack, bucket: str, tier: str, billed: str
) -> None:
    run = _late(world, stack, f"tier-{tier}", FLEX, fallback_tier=tier)
    assert run.fallback_tier == tier
    assert _ledger(stack, bucket, f"tier-{tier}")["fallback_tier"] == tier
    stack.reset_calls()
    # A step of a process that opened the run from GCS alone asks at the same tier.
    summary = world.open_run(f"tier-{tier}").advance(deadline=past(), fallback="online")
    assert summary.done and summary.outcomes == {"ok": 3}
    assert stack.calls()["generateContent"] == 3
    rows = _rows(stack, bucket, f"tier-{tier}")
    assert [row["tier"] for row in rows] == [billed] * 3
    traffic = {row["response"]["usageMetadata"]["trafficType"] for row in rows}
    assert traffic == {f"ON_DEMAND_{tier.upper()}"}
    results = list(run.results())
    assert [r.tier for r in results] == [billed] * 3 and all(r.ok for r in results)
    assert {k.result.tier for k in run.key_results()} == {billed}


def test_a_standard_run_is_as_before_and_says_so(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """No header (the stack reports ON_DEMAND), no ledger field; batch answers say ``batch``."""
    run = _late(client, stack, "tier-standard", RIGID)
    assert run.fallback_tier == "standard"
    assert "fallback_tier" not in _ledger(stack, bucket, "tier-standard")
    assert run.advance(deadline=past(), fallback="online").done
    assert [row["tier"] for row in _rows(stack, bucket, "tier-standard")] == ["standard"] * 3
    assert {r.tier for r in run.results()} == {"standard"}
    batch = client.run_gemini("tier-batch", RIGID, gemini_requests(2))
    assert advance_until_done(stack, batch).done
    assert {r.tier for r in batch.results()} == {"batch"}


@pytest.mark.parametrize(
    ("location", "model", "tier", "said"),
    [
        ("us-central1", FLEX, "flex", "served only on the global endpoint"),
        ("global", RIGID, "flex", "is not one of the models Google's Flex PayGo page lists"),
        ("global", "gemini-9-unknown", "flex", "is not in vertexbatch's model catalogue"),
        ("us-central1", RIGID, "priority", "not in location 'us-central1'"),
        ("global", FLEX, "turbo", "fallback_tier must be one of"),
    ],
)
def test_a_tier_not_served_is_refused_before_any_cloud_call(
    stack: LocalStack, bucket: str, location: str, model: str, tier: str, said: str
) -> None:
    client = _client(stack, bucket, location)
    stack.reset_calls()
    with pytest.raises(vb.InvalidRequestError) as info:
        client.run_gemini("refused", model, gemini_requests(2), fallback_tier=tier)  # type: ignore[arg-type]
    assert info.value.field == "fallback_tier" and said in str(info.value)
    assert not stack.calls()
    assert not list(stack.storage_client().list_blobs(bucket, prefix="jobs/"))


def test_claude_is_refused_flex_and_priority(stack: LocalStack, bucket: str) -> None:
    """In ``us``, where Priority is served (Claude batch takes no ``global``)."""
    client = _client(stack, bucket, "us")
    for tier in ("flex", "priority"):
        with pytest.raises(vb.InvalidRequestError, match="Gemini models only") as info:
            client.run_claude("claude-flex", CLAUDE, claude_requests(2), fallback_tier=tier)  # type: ignore[arg-type]
        assert info.value.field == "fallback_tier"
    assert not stack.calls()


def test_a_rejoin_with_another_tier_is_refused(world: vb.Client, stack: LocalStack) -> None:
    stack.faults.hold(display_name="tier-rejoin.s0", state="PENDING")
    world.run_gemini("tier-rejoin", FLEX, gemini_requests(2), fallback_tier="flex")
    with pytest.raises(vb.InvalidRequestError, match="started with fallback_tier='flex'"):
        world.run_gemini("tier-rejoin", FLEX, gemini_requests(2))
    again = world.run_gemini("tier-rejoin", FLEX, gemini_requests(2), fallback_tier="flex")
    assert again.fallback_tier == "flex"


def test_a_step_from_a_client_where_the_tier_is_not_served_is_refused(
    world: vb.Client, stack: LocalStack, bucket: str
) -> None:
    _late(world, stack, "tier-elsewhere", FLEX, fallback_tier="flex")
    regional = _client(stack, bucket, "us-central1").open_run("tier-elsewhere")
    stack.reset_calls()
    with pytest.raises(vb.InvalidRequestError, match="'flex' is served only on the global"):
        regional.advance(deadline=past(), fallback="online")
    assert stack.calls()["generateContent"] == 0
    assert not regional.status().done  # and a step without the fallback goes on as before


def test_the_tasks_of_a_run_keep_its_tier(world: vb.Client, stack: LocalStack, bucket: str) -> None:
    requests = gemini_requests(4)
    tasks = [vb.Task(i, 2) for i in range(2)]
    for task in tasks:
        stack.faults.hold(display_name=f"tier-tasks.s{task.index}", state="PENDING")
    world.run_gemini(
        "tier-tasks", FLEX, tasks[0].slice(requests), task=tasks[0], fallback_tier="flex"
    )
    with pytest.raises(
        vb.InvalidRequestError, match="given fallback_tier='standard', but task 0 says 'flex'"
    ):
        world.run_gemini("tier-tasks", FLEX, tasks[1].slice(requests), task=tasks[1])
    run = world.run_gemini(
        "tier-tasks", FLEX, tasks[1].slice(requests), task=tasks[1], fallback_tier="flex"
    )
    run.advance()
    assert _ledger(stack, bucket, "tier-tasks")["fallback_tier"] == "flex"
    summary = world.open_run("tier-tasks").advance(deadline=past(), fallback="online")
    assert summary.done and summary.outcomes == {"ok": 4}
    assert {r.tier for r in run.results()} == {"flex"}


def test_the_async_view_takes_the_tier(stack: LocalStack, bucket: str) -> None:
    regional = _client(stack, bucket, "us-central1")
    with pytest.raises(vb.InvalidRequestError, match="not in location 'us-central1'"):
        asyncio.run(
            regional.aio.run_gemini("aio-tier", RIGID, gemini_requests(1), fallback_tier="priority")
        )
    assert not stack.calls()


def test_the_command_takes_the_tier(stack_env: str, stack: LocalStack, tmp_path: Path) -> None:
    """``run submit --fallback-tier``: refused where the tier is not served (exit 3, the rule
    named), kept in the ledger where it is."""
    lines = [json.dumps({"key": f"k{i}", "contents": f"Say {i}"}) for i in range(2)]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n")
    args = ["run", "submit", "--provider", "gemini", "--model", RIGID, "--id", "cli-tier"]
    refused = CliRunner().invoke(main, [*args, "--fallback-tier", "priority", str(path)])
    assert refused.exit_code == ExitCode.INVALID_REQUEST, refused.output
    assert "fallback_tier 'priority' is served only on the eu, global, us" in refused.output
    assert not stack.calls()
    stack.faults.hold(display_name="cli-tier.s0", state="PENDING")
    plain = CliRunner().invoke(main, [*args, str(path)])
    assert plain.exit_code == ExitCode.OK, plain.output
    assert "fallback_tier" not in _ledger(stack, stack_env, "cli-tier")


@pytest.mark.parametrize("tier", ["standard", "flex", "priority"])
def test_the_ledger_keeps_the_tier_and_its_size_counts_it(tier: str) -> None:
    shards = tuple(Shard(f"run-1.s{i}", 7) for i in range(3))
    ledger = Ledger("run-1", "google", FLEX, 3, shards, True, fallback_tier=tier)
    assert Ledger.from_json(json.loads(json.dumps(ledger.to_json())), "run-1", "x") == ledger
    assert ("fallback_tier" in ledger.to_json()) is (tier != "standard")
    size = ledger_size("run-1", "google", FLEX, 3, 3, 7, tier=tier)
    assert size == encoded_size(ledger)


@pytest.mark.parametrize("written", ["standard", "turbo", 3, None])
def test_a_ledger_s_tier_edited_by_hand_is_refused(written: object) -> None:
    ledger = Ledger("run-1", "google", FLEX, 3, (Shard("run-1.s0", 1),), True)
    data = {**ledger.to_json(), "fallback_tier": written}
    with pytest.raises(vb.InvalidRequestError, match="'fallback_tier' is not one of flex"):
        Ledger.from_json(data, "run-1", "gs://b/jobs/run-1/run.json")


def test_the_command_prints_each_key_s_tier_and_prices_flex_at_its_share(
    stack_env: str, stack: LocalStack, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``run submit --fallback-tier flex`` in ``global``, then ``run advance --fallback online``
    past the deadline: ``run results`` prints ``"tier": "flex"``, its spend at flex prices."""
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "global")
    path = tmp_path / "in.jsonl"
    path.write_text(
        "".join(json.dumps({"key": f"k{i}", "contents": f"Say {i}"}) + "\n" for i in range(2))
    )
    stack.faults.hold(display_name="cli-flex.s0", state="PENDING")
    args = ["run", "submit", "--provider", "gemini", "--model", FLEX, "--id", "cli-flex"]
    started = CliRunner().invoke(main, [*args, "--fallback-tier", "flex", str(path)])
    assert started.exit_code == ExitCode.OK, started.output
    deadline = "2000-01-01T00:00:00Z"
    advance = ["run", "advance", "cli-flex", "--deadline", deadline, "--fallback", "online"]
    assert CliRunner().invoke(main, advance).exit_code == ExitCode.OK
    results = CliRunner().invoke(main, ["run", "results", "cli-flex"])
    assert results.exit_code == ExitCode.OK, results.output
    lines = [json.loads(line) for line in results.stdout.splitlines()]
    assert [line["tier"] for line in lines] == ["flex", "flex"]
    assert "run done: ok 2; spend $" in results.stderr and "at flex prices" in results.stderr


def _unbucketed(stack: LocalStack, location: str) -> vb.Client:
    """A client of the stack whose bucket does not exist: any GCS call would fail."""
    return vb.Client.for_endpoints(
        vertex_endpoint=stack.vertex_endpoint,
        storage_endpoint=stack.storage_endpoint,
        project=stack.project,
        location=location,
        bucket="no-such-bucket-for-plans",
        prefix="jobs",
        retry=vb.RetryPolicy.no_wait(),
    )


@pytest.mark.parametrize(
    ("location", "model", "tier", "said"),
    [
        ("us-central1", FLEX, "flex", "served only on the global endpoint"),
        ("global", RIGID, "flex", "is not one of the models Google's Flex PayGo page lists"),
        ("global", "gemini-9-unknown", "flex", "is not in vertexbatch's model catalogue"),
        ("us-central1", RIGID, "priority", "not in location 'us-central1'"),
        ("global", FLEX, "turbo", "fallback_tier must be one of"),
    ],
)
def test_a_plan_refuses_the_tier_the_run_would_before_any_cloud_call(
    stack: LocalStack, location: str, model: str, tier: str, said: str
) -> None:
    """``plan_gemini(..., shard_size=, fallback_tier=)`` refuses what ``run_gemini`` refuses,
    with its message, before any Vertex or GCS call (the client's bucket does not exist)."""
    client = _unbucketed(stack, location)
    stack.reset_calls()
    requests = gemini_requests(2)
    with pytest.raises(vb.InvalidRequestError) as planned:
        client.plan_gemini("refused", model, requests, shard_size=1, fallback_tier=tier)  # type: ignore[typeddict-item]
    with pytest.raises(vb.InvalidRequestError) as ran:
        client.run_gemini("refused", model, requests, fallback_tier=tier)  # type: ignore[arg-type]
    assert planned.value.field == "fallback_tier" and said in str(planned.value)
    assert str(planned.value) == str(ran.value)
    with pytest.raises(vb.InvalidRequestError, match="Gemini models only"):
        _unbucketed(stack, "us").plan_claude(
            "refused", CLAUDE, claude_requests(2), shard_size=1, fallback_tier="priority"
        )
    with pytest.raises(vb.InvalidRequestError, match="give shard_size too") as single:
        client.plan_gemini("refused", FLEX, requests, fallback_tier="standard")
    assert single.value.field == "fallback_tier"
    assert not stack.calls()
    with pytest.raises(vb.InvalidRequestError, match="give shard_size too"):
        asyncio.run(client.aio.plan_gemini("refused", FLEX, requests, fallback_tier="standard"))


def test_a_plan_takes_a_served_tier_and_holds_it_to_the_run_the_id_holds(
    world: vb.Client, stack: LocalStack
) -> None:
    requests = gemini_requests(2)
    planned = world.plan_gemini("plan-tier", FLEX, requests, shard_size=1, fallback_tier="flex")
    assert planned.requests == 2 and not planned.submitted
    stack.faults.hold(display_name="plan-tier.s0", state="PENDING")
    world.run_gemini("plan-tier", FLEX, requests, shard_size=1, fallback_tier="flex")
    again = world.plan_gemini("plan-tier", FLEX, requests, shard_size=1, fallback_tier="flex")
    assert again.submitted == "run:plan-tier"
    assert world.plan_gemini("plan-tier", FLEX, requests, shard_size=1).submitted  # not asked
    with pytest.raises(vb.InvalidRequestError, match="started with fallback_tier='flex'") as info:
        world.plan_gemini("plan-tier", FLEX, requests, shard_size=1, fallback_tier="standard")
    assert str(info.value).startswith("run 'plan-tier' was started with fallback_tier='flex', not")


def test_a_task_s_plan_is_held_to_the_run_s_tier(world: vb.Client, stack: LocalStack) -> None:
    requests = gemini_requests(4)
    first, second = vb.Task(0, 2), vb.Task(1, 2)
    stack.faults.hold(display_name="plan-tasks.s0", state="PENDING")
    world.run_gemini("plan-tasks", FLEX, first.slice(requests), task=first, fallback_tier="flex")
    for task, part in ((first, first.slice(requests)), (second, second.slice(requests))):
        with pytest.raises(vb.InvalidRequestError, match="fallback_tier") as info:
            world.plan_gemini("plan-tasks", FLEX, part, shard_size=100_000, task=task,
                              fallback_tier="standard")  # fmt: skip
        assert info.value.field in ("fallback_tier", "id")
        planned = world.plan_gemini(
            "plan-tasks", FLEX, part, shard_size=100_000, task=task, fallback_tier="flex"
        )
        assert planned.requests == 2


def test_the_command_s_dry_run_refuses_what_the_run_would(
    stack_env: str, stack: LocalStack, tmp_path: Path
) -> None:
    """``run submit --dry-run --fallback-tier``: the tier checked before any call (exit 3), and
    the dry run of a run the id holds with another tier refused as the run would be."""
    path = tmp_path / "in.jsonl"
    path.write_text(
        "".join(json.dumps({"key": f"k{i}", "contents": f"Say {i}"}) + "\n" for i in range(2))
    )
    args = ["run", "submit", "--provider", "gemini", "--model", RIGID, "--id", "cli-dry-tier"]
    stack.reset_calls()
    refused = CliRunner().invoke(
        main, [*args, "--dry-run", "--fallback-tier", "priority", str(path)]
    )
    assert refused.exit_code == ExitCode.INVALID_REQUEST, refused.output
    assert "fallback_tier 'priority' is served only on the eu, global, us" in refused.output
    assert not stack.calls()
    claude = ["run", "submit", "--provider", "claude", "--model", CLAUDE, "--id", "cli-dry-c"]
    claude_path = tmp_path / "claude.jsonl"
    line = {"key": "k0", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8}
    claude_path.write_text(json.dumps(line) + "\n")
    flex = CliRunner().invoke(
        main, [*claude, "--dry-run", "--fallback-tier", "flex", str(claude_path)]
    )
    assert flex.exit_code == ExitCode.INVALID_REQUEST, flex.output
    assert "Gemini models only" in flex.output
    planned = CliRunner().invoke(main, [*args, "--dry-run", str(path)])
    assert planned.exit_code == ExitCode.OK, planned.output
    assert "dry run of run 'cli-dry-tier'" in planned.output
