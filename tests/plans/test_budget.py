"""budget=: a submission whose plan may cost more is refused before any cloud call."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import (
    CLAUDE,
    claude_request,
    jobs_in,
    request_line,
    run_docs_example,
    write_lines,
)
from vertexbatch._command.cli import main
from vertexbatch.emulator import LocalStack

_PRICE = vb.Price("claude-opus-5-5", 5.0, 25.0)
# Outside any price table (the catalogue's included): its cost is unknown.
_UNPRICED = "claude-future-9@default"


def _requests(n: int = 4) -> list[vb.ClaudeRequest]:
    return [claude_request(f"k{i}", f"Review diff {i}.", max_tokens=1000) for i in range(n)]


def _nothing_done(stack: LocalStack, bucket: str) -> None:
    """No object in the bucket, no Vertex call of any kind, no job."""
    assert list(stack.storage_client().list_blobs(bucket)) == []
    assert sum(stack.calls().values()) == 0, stack.calls()
    assert jobs_in(stack, bucket) == []


def test_a_submission_over_budget_is_refused_before_any_cloud_call(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """The plan's upper bound over the budget: InvalidRequestError(field="budget") naming both
    figures; nothing staged, no call to Vertex. Within the budget the same submission goes on."""
    plan = client.plan_claude("b1", CLAUDE, _requests(), prices=[_PRICE])
    assert plan.cost_high is not None and plan.cost_high > 0.01
    stack.reset_calls()
    with pytest.raises(vb.InvalidRequestError) as err:
        client.submit_claude("b1", CLAUDE, _requests(), budget=0.01, prices=[_PRICE])
    assert err.value.field == "budget"
    assert f"${plan.cost_high:,.4f}" in str(err.value) and "$0.01" in str(err.value)
    assert "Review diff" not in str(err.value)
    # A plan with the budget refuses as the submit would (exact counts or not), before any call.
    with pytest.raises(vb.InvalidRequestError, match="over the budget"):
        client.plan_claude(
            "b1", CLAUDE, _requests(), budget=0.01, prices=[_PRICE], count_tokens=True
        )
    _nothing_done(stack, bucket)
    # A generator is read whole to plan, then staged: the job holds every key.
    job = client.submit_claude(
        "b1", CLAUDE, (r for r in _requests()), budget=plan.cost_high, prices=[_PRICE]
    )
    assert job.keys == 4


def test_an_unpriced_model_with_a_budget_is_refused(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """No price known: the cost is unknown, so a budget cannot hold; the error says how to
    pass prices=."""
    stack.reset_calls()
    with pytest.raises(vb.InvalidRequestError, match="no price is known") as err:
        client.submit_claude("b2", _UNPRICED, _requests(), budget=100.0)
    assert err.value.field == "budget" and "prices=[vertexbatch.Price(" in str(err.value)
    _nothing_done(stack, bucket)


@pytest.mark.parametrize(
    "start",
    [
        lambda c: c.run_claude("r1", CLAUDE, _requests(), budget=0.01, prices=[_PRICE]),
        lambda c: c.run_claude(
            "r1", CLAUDE, _requests(), budget=0.01, prices=[_PRICE], task=vb.Task(0, 2)
        ),
        lambda c: asyncio.run(
            c.aio.submit_claude("r1", CLAUDE, _requests(), budget=0.01, prices=[_PRICE])
        ),
        lambda c: asyncio.run(
            c.aio.run_claude("r1", CLAUDE, _requests(), budget=0.01, prices=[_PRICE])
        ),
    ],
    ids=["run", "tasked-run", "aio-submit", "aio-run"],
)
def test_runs_tasks_and_the_async_view_are_held_to_the_budget(
    client: vb.Client, stack: LocalStack, bucket: str, start: Callable[[vb.Client], object]
) -> None:
    """A run (its whole plan; a task: its part), and client.aio, refuse as submit does."""
    stack.reset_calls()
    with pytest.raises(vb.InvalidRequestError, match="over the budget") as err:
        start(client)
    assert err.value.field == "budget"
    _nothing_done(stack, bucket)


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), True, "5"])
def test_a_budget_that_is_not_dollars_is_refused(client: vb.Client, bad: object) -> None:
    with pytest.raises(vb.InvalidRequestError, match="budget must be a number") as err:
        client.submit_claude("b3", CLAUDE, _requests(), budget=bad)  # type: ignore[arg-type]
    assert err.value.field == "budget"


def test_the_command_s_budget(stack: LocalStack, bucket: str, tmp_path: Path) -> None:
    """`--budget` refuses over the plan (exit 3) and an unpriced model; --price prices it."""
    path = write_lines(tmp_path / "in.jsonl", [request_line("a"), request_line("b")])
    env = stack.environment(bucket)
    base = ["submit", "--provider", "claude", "--id", "c1", str(path)]
    stack.reset_calls()
    over = CliRunner().invoke(
        main, [*base, "--model", CLAUDE, "--budget", "0", "--price", "claude-opus-5-5=5,25"],
        env=env,
    )  # fmt: skip
    assert over.exit_code == 3, over.output
    assert "over the budget of $0.00" in over.output
    unpriced = CliRunner().invoke(main, [*base, "--model", _UNPRICED, "--budget", "5"], env=env)
    assert unpriced.exit_code == 3 and "no price is known" in unpriced.output
    run = ["run", "submit", "--provider", "claude", "--model", CLAUDE, "--id", "r2", str(path)]
    over_run = CliRunner().invoke(
        main, [*run, "--budget", "0.001", "--price", "claude-opus-5-5=5,25"], env=env
    )
    assert over_run.exit_code == 3 and "run 'r2': its plan costs up to $" in over_run.output
    _nothing_done(stack, bucket)
    bad = CliRunner().invoke(main, [*base, "--model", CLAUDE, "--budget", "-2"], env=env)
    assert bad.exit_code == 2 and "--budget" in bad.output
    ok = CliRunner().invoke(
        main, [*base, "--model", CLAUDE, "--budget", "5", "--price", "claude-opus-5-5=5,25"],
        env=env,
    )  # fmt: skip
    assert ok.exit_code == 0, ok.output


@pytest.mark.timeout(120)
def test_the_docs_example_runs_as_written(stack: LocalStack, bucket: str) -> None:
    """docs/examples/spend_and_budget.py runs as `python FILE` with the stack's environment."""
    stdout = run_docs_example(stack, bucket, "spend_and_budget.py")
    plan, refused, spent = stdout.splitlines()
    assert plan == "plan: up to $0.2504", plan
    assert refused == "refused: budget"
    assert re.fullmatch(r"20 answers paid, \$0\.\d{4} at batch prices", spent), spent
    assert len(jobs_in(stack, bucket)) == 1
