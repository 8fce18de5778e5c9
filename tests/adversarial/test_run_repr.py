"""A run's repr counts the shards its tasks staged, and says when its ledger is not made yet."""

from __future__ import annotations

import json

from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import CLAUDE, task
from vertexbatch._command.cli import main


def test_a_task_s_run_repr_counts_the_shards_it_staged(client: vb.Client) -> None:
    """Task 0 of 2 staged two shards: its run's repr says so, and that task 1 has not
    registered; once task 1 has and the ledger is made, the repr counts all three shards."""
    rows = [task(i) for i in range(5)]
    first = client.run_claude("repr-tasks", CLAUDE, rows[:4], task=vb.Task(0, 2), shard_size=2)
    assert repr(first) == (
        "Run(id='repr-tasks', provider='anthropic', shards=2, made=False, waiting=(1,))"
    )
    opened = client.open_run("repr-tasks")
    assert "shards=0" not in repr(opened) and "made=False" in repr(opened)
    second = client.run_claude("repr-tasks", CLAUDE, rows[4:], task=vb.Task(1, 2), shard_size=2)
    assert repr(second) == "Run(id='repr-tasks', provider='anthropic', shards=3)"
    opened.status()
    assert repr(opened) == "Run(id='repr-tasks', provider='anthropic', shards=3)"


def test_the_command_counts_a_waiting_run_s_staged_shards(
    client: vb.Client, stack_env: str
) -> None:
    """`vertexbatch run status --json` of a run waiting for task 1 counts task 0's two shards,
    as ``run.shards`` does."""
    rows = [task(i) for i in range(4)]
    run = client.run_claude("repr-cli", CLAUDE, rows, task=vb.Task(0, 2), shard_size=2)
    assert [s.id for s in run.shards] == ["repr-cli.s0", "repr-cli.s2"]
    shown = CliRunner().invoke(main, ["run", "status", "repr-cli", "--json"])
    assert shown.exit_code == 10, shown.output
    record = json.loads(shown.stdout)
    assert record["shards"] == 2 and record["made"] is False and record["waiting"] == [1]
