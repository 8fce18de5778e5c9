"""Runs across tasks: the Task value, one run staged by many tasks, checked whole, read by many."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

import vertexbatch as vb
from tests.helpers import jobs_in, task
from vertexbatch._runs.run import summary_line
from vertexbatch.emulator import LocalStack

MODEL = "claude-opus-5-5@default"


# The Task value


@pytest.mark.parametrize(
    ("index", "count", "attempt", "message"),
    [
        (0, 0, 0, "task count must be a whole number from 1 to 10000, got 0"),
        (2, 2, 0, r"task index must be below the task count \(2\), got 2"),
        (-1, 2, 0, "task index must be at least 0, got -1"),
        (0, 2, -1, "task attempt must be at least 0, got -1"),
        ("0", 2, 0, "task index must be at least 0, got '0'"),
        (True, 2, 0, "task index must be at least 0, got True"),
    ],
)
def test_a_task_is_checked(index: object, count: object, attempt: object, message: str) -> None:
    with pytest.raises(vb.InvalidRequestError, match=message) as info:
        vb.Task(index, count, attempt)  # type: ignore[arg-type]
    assert info.value.field == "task"


def test_a_task_is_a_frozen_value() -> None:
    one = vb.Task(1, 4, 2)
    assert one == vb.Task(1, 4, 2) and hash(one) == hash(vb.Task(1, 4, 2))
    with pytest.raises(AttributeError):
        one.index = 2  # type: ignore[misc]
    assert str(one) == "task 1 of 4"


def test_from_env_reads_cloud_run_variables() -> None:
    env = {"CLOUD_RUN_TASK_INDEX": "3", "CLOUD_RUN_TASK_COUNT": "8", "CLOUD_RUN_TASK_ATTEMPT": "1"}
    assert vb.Task.from_env(env) == vb.Task(3, 8, 1)
    assert vb.Task.from_env({"CLOUD_RUN_TASK_INDEX": "0", "CLOUD_RUN_TASK_COUNT": "1"}) == vb.Task(
        0, 1, 0
    )
    assert vb.Task.from_env({}) is None  # outside Cloud Run: a run staged by one process


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"CLOUD_RUN_TASK_INDEX": "1"}, "CLOUD_RUN_TASK_INDEX is set but CLOUD_RUN_TASK_COUNT"),
        ({"CLOUD_RUN_TASK_COUNT": "2"}, "CLOUD_RUN_TASK_COUNT is set but CLOUD_RUN_TASK_INDEX"),
        (
            {"CLOUD_RUN_TASK_INDEX": "x", "CLOUD_RUN_TASK_COUNT": "2"},
            "CLOUD_RUN_TASK_INDEX must be a whole number, got 'x'",
        ),
        (
            {
                "CLOUD_RUN_TASK_INDEX": "0",
                "CLOUD_RUN_TASK_COUNT": "2",
                "CLOUD_RUN_TASK_ATTEMPT": "",
            },
            "CLOUD_RUN_TASK_ATTEMPT must be a whole number, got ''",
        ),
        (
            {"CLOUD_RUN_TASK_INDEX": "5", "CLOUD_RUN_TASK_COUNT": "2"},
            r"task index must be below the task count \(2\), got 5",
        ),
    ],
)
def test_from_env_refuses_malformed_variables(env: dict[str, str], message: str) -> None:
    with pytest.raises(vb.InvalidRequestError, match=message):
        vb.Task.from_env(env)


@pytest.mark.parametrize("length", [0, 1, 3, 10, 101])
@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_the_parts_of_n_tasks_partition_the_input(length: int, count: int) -> None:
    items = list(range(length))
    sliced = [vb.Task(i, count).slice(items) for i in range(count)]
    assert [x for part in sliced for x in part] == items  # contiguous, in order, each once
    assert max(map(len, sliced)) - min(map(len, sliced)) <= 1
    taken = [list(vb.Task(i, count).take(iter(items))) for i in range(count)]
    assert sorted(x for part in taken for x in part) == items


def test_take_streams_without_holding_the_iterable() -> None:
    def endless():  # type: ignore[no-untyped-def]
        n = 0
        while True:
            yield n
            n += 1

    taken = vb.Task(1, 3).take(endless())
    assert [next(taken) for _ in range(3)] == [1, 4, 7]
    with pytest.raises(vb.InvalidRequestError, match=r"Task\.slice takes a sequence"):
        vb.Task(0, 2).slice(iter([1]))  # type: ignore[arg-type]


# One run staged by many tasks


def _requests(n: int) -> list[vb.ClaudeRequest]:
    return [task(i) for i in range(n)]


def test_tasks_stage_one_run_and_jobs_wait_for_every_task(
    client: vb.Client, stack: LocalStack
) -> None:
    """Four tasks stage one run; no job exists until the last registers; then it is one run."""
    rows = _requests(23)
    tasks = [vb.Task(i, 4) for i in range(4)]
    runs = []
    for t in tasks[:3]:
        runs.append(client.run_claude("fleet", MODEL, t.slice(rows), shard_size=2, task=t))
        assert jobs_in(stack, client.bucket) == []
    waiting = client.open_run("fleet").status()
    assert waiting.waiting == (3,) and not waiting.done and waiting.created == 0
    assert waiting.keys == sum(len(t.slice(rows)) for t in tasks[:3])
    assert client.open_run("fleet").advance().created == 0
    assert "waiting for task(s) 3 to register" in summary_line(waiting)
    with pytest.raises(vb.InvalidRequestError, match=r"tasks \[3\] have not registered"):
        client.open_run("fleet").results()
    last = client.run_claude("fleet", MODEL, tasks[3].slice(rows), shard_size=2, task=tasks[3])
    assert len(jobs_in(stack, client.bucket)) == 4  # the Claude live-job budget
    assert last.keys == 23
    # Shard ids interleave by task: task i's n-th shard is s{n*4+i}.
    assert [s.id for s in last.shards][:4] == [f"fleet.s{i}" for i in range(4)]
    for _ in range(12):
        stack.settle()
        summary = client.open_run("fleet").advance()
        if summary.done:
            break
    assert summary.done and summary.outcomes == {"ok": 23} and summary.keys == 23
    names = [j["displayName"] for j in jobs_in(stack, client.bucket)]
    assert len(names) == len(set(names)) == len(last.shards)  # no twin job
    keys = [r.key for r in client.open_run("fleet").results()]
    assert sorted(keys) == sorted(r.key for r in rows)
    # Three reading tasks share the keys: every key exactly once.
    shares = [
        [r.key for r in client.open_run("fleet").results(task=vb.Task(i, 3))] for i in range(3)
    ]
    assert all(shares) and Counter(k for s in shares for k in s) == Counter(keys)
    kr = [k.outcome for k in client.open_run("fleet").key_results(task=vb.Task(0, 3))]
    assert kr and set(kr) == {"ok"}
    # A task run again (its next attempt) rejoins: nothing more staged or created.
    again = client.run_claude(
        "fleet", MODEL, tasks[1].slice(rows), shard_size=2, task=vb.Task(1, 4, 1)
    )
    assert again.advance().done and len(jobs_in(stack, client.bucket)) == len(names)


def test_a_duplicate_key_across_tasks_is_refused_naming_it_and_both_tasks(
    client: vb.Client, stack: LocalStack
) -> None:
    client.run_claude("dupes", MODEL, _requests(5), task=vb.Task(0, 2))
    with pytest.raises(vb.InvalidRequestError) as info:
        client.run_claude("dupes", MODEL, [task(i) for i in range(4, 8)], task=vb.Task(1, 2))
    assert "request key 'key-4' is in the requests of both task 0 and task 1" in str(info.value)
    assert info.value.field == "key"
    assert jobs_in(stack, client.bucket) == []  # no job exists
    with pytest.raises(vb.InvalidRequestError, match="'key-4'"):
        client.open_run("dupes").advance()
    assert jobs_in(stack, client.bucket) == []


def test_a_task_with_other_rows_or_settings_is_refused(client: vb.Client) -> None:
    rows = _requests(6)
    client.run_claude("other", MODEL, rows[:3], shard_size=2, task=vb.Task(0, 2))
    with pytest.raises(vb.InvalidRequestError, match="task 0 of run 'other' was staged before"):
        client.run_claude("other", MODEL, rows[1:4], shard_size=2, task=vb.Task(0, 2, 1))
    with pytest.raises(vb.InvalidRequestError, match="was registered with shard_size 2"):
        client.run_claude("other", MODEL, rows[:3], shard_size=3, task=vb.Task(0, 2, 1))
    with pytest.raises(vb.InvalidRequestError, match="task 0 of run 'other' was staged before"):
        client.run_claude("other", MODEL, rows[:2], shard_size=2, task=vb.Task(0, 2, 1))
    # The other task with another model is refused once the run is checked whole.
    with pytest.raises(vb.InvalidRequestError, match="tasks 0 and 1 of run 'other' were started"):
        client.run_claude(
            "other", "claude-sonnet-4-5@default", rows[3:], shard_size=2, task=vb.Task(1, 2)
        )


def test_a_tasked_run_is_not_rejoined_untasked_nor_by_another_count(
    client: vb.Client, stack: LocalStack
) -> None:
    rows = _requests(4)
    for i in range(2):
        client.run_claude("mixed", MODEL, vb.Task(i, 2).slice(rows), task=vb.Task(i, 2))
    with pytest.raises(vb.InvalidRequestError, match="was staged by 2 tasks: rejoin it with task="):
        client.run_claude("mixed", MODEL, rows)
    with pytest.raises(vb.InvalidRequestError, match="was staged by 2 tasks, not by 3"):
        client.run_claude("mixed", MODEL, rows[:1], task=vb.Task(0, 3))
    client.run_claude("alone", MODEL, rows)
    with pytest.raises(vb.InvalidRequestError, match="was staged by one process, not by 2"):
        client.run_claude("alone", MODEL, rows[:2], task=vb.Task(0, 2))
    with pytest.raises(vb.InvalidRequestError, match=r"task must be a vertexbatch\.Task"):
        client.run_claude("bad", MODEL, rows, task=(0, 2))  # type: ignore[typeddict-item]


def test_an_empty_task_registers_and_the_run_goes_on(client: vb.Client, stack: LocalStack) -> None:
    rows = _requests(2)
    parts = [vb.Task(i, 3).slice(rows) for i in range(3)]
    assert [len(p) for p in parts] == [0, 1, 1]
    for i, part in enumerate(parts):
        run = client.run_claude("sparse", MODEL, part, task=vb.Task(i, 3))
    assert [s.id for s in run.shards] == ["sparse.s1", "sparse.s2"]
    stack.settle()
    assert run.advance().outcomes == {"ok": 2}


def test_gemini_and_aio_take_a_task(client: vb.Client, stack: LocalStack) -> None:
    gem = [vb.GeminiRequest(key=f"g{i}", contents=f"Say {i}") for i in range(4)]

    async def main() -> list[str]:
        async with client.aio as aio:
            for i in range(2):
                await aio.run_gemini(
                    "gem", "gemini-2.5-flash", vb.Task(i, 2).slice(gem), task=vb.Task(i, 2)
                )
            stack.settle()
            run = await aio.open_run("gem")
            await run.advance()
            return [r.key async for r in run.results(task=vb.Task(1, 2))]

    keys = asyncio.run(main())
    assert keys and set(keys) <= {f"g{i}" for i in range(4)}


def test_a_plan_of_a_task_says_it_rejoins_or_is_refused(client: vb.Client) -> None:
    rows = _requests(6)
    fresh = client.plan_claude("planned", MODEL, rows[:3], shard_size=2, task=vb.Task(0, 2))
    assert fresh.jobs == 2  # nothing staged yet: a plan of the task's own shards
    client.run_claude("planned", MODEL, rows[:3], shard_size=2, task=vb.Task(0, 2))
    again = client.plan_claude("planned", MODEL, rows[:3], shard_size=2, task=vb.Task(0, 2))
    assert again.submitted == "run:planned"
    assert "already holds these requests (2 shards)" in " ".join(again.assumptions)
    with pytest.raises(vb.InvalidRequestError, match="task 0 of run 'planned' was staged before"):
        client.plan_claude("planned", MODEL, rows[1:4], shard_size=2, task=vb.Task(0, 2))
    with pytest.raises(vb.InvalidRequestError, match="give shard_size too"):
        client.plan_claude("planned", MODEL, rows[:3], task=vb.Task(0, 2))
    for i in (1,):
        client.run_claude("planned", MODEL, rows[3:], shard_size=2, task=vb.Task(i, 2))
    with pytest.raises(vb.InvalidRequestError, match="was staged by 2 tasks: plan one task"):
        client.plan_claude("planned", MODEL, rows, shard_size=2)


def test_a_tasked_run_takes_the_fallback_and_the_cache(
    client: vb.Client, stack: LocalStack
) -> None:
    """Once made, a tasked run is a run: the online fallback past the deadline answers its
    keys (jobs PENDING), and its results fill the answer cache another tasked run reads."""
    from datetime import UTC, datetime, timedelta

    rows = _requests(6)
    for i in range(2):
        stack.faults.hold(display_name=f"late.s{i}", state="PENDING")
    for i in range(2):
        client.run_claude("late", MODEL, vb.Task(i, 2).slice(rows), task=vb.Task(i, 2))
    run = client.open_run("late")
    summary = run.advance(deadline=datetime.now(UTC) - timedelta(seconds=1), fallback="online")
    assert summary.done and summary.outcomes == {"ok": 6}
    assert stack.calls()["rawPredict"] == 6
    assert sorted(r.key for r in run.results()) == sorted(r.key for r in rows)

    cached = [task(i, "cached") for i in range(6)]
    for i in range(2):
        warm = client.run_claude(
            "warm", MODEL, vb.Task(i, 2).slice(cached), task=vb.Task(i, 2), cache=True
        )
    stack.settle()
    assert warm.advance().done
    assert len(list(warm.results())) == 6  # fills the answer cache
    before = len(jobs_in(stack, client.bucket))
    for i in range(2):
        again = client.run_claude(
            "cached", MODEL, vb.Task(i, 2).slice(cached), task=vb.Task(i, 2), cache=True
        )
    assert len(jobs_in(stack, client.bucket)) == before  # answered whole from the cache
    assert again.advance().outcomes == {"ok": 6}


def test_a_bad_first_request_is_refused_before_any_cloud_call(
    counted: tuple[vb.Client, list[str]], stack: LocalStack
) -> None:
    client, seen = counted
    stack.reset_calls()
    with pytest.raises(vb.InvalidRequestError, match="max_tokens"):
        client.run_claude(
            "badline", MODEL, [vb.ClaudeRequest("k", {"messages": []})], task=vb.Task(0, 2)
        )
    assert seen == [] and not stack.calls()


def test_dedupe_across_a_task_counts_every_key(client: vb.Client, stack: LocalStack) -> None:
    rows = [task(i % 3) for i in range(3)] + [
        vb.ClaudeRequest(f"copy-{i}", dict(task(i % 3).params)) for i in range(9)
    ]
    for i in range(2):
        run = client.run_claude(
            "deduped", MODEL, vb.Task(i, 2).slice(rows), task=vb.Task(i, 2), dedupe=True
        )
    assert run.keys == 12
    stack.settle()
    assert run.advance().outcomes == {"ok": 12}
    assert sorted(r.key for r in run.results()) == sorted(r.key for r in rows)


def test_a_tasked_ledger_reads_back_and_a_damaged_one_is_refused() -> None:
    from vertexbatch._runs.ledger import Ledger, Shard

    shards = (Shard("r.s1", 3), Shard("r.s2", 2), Shard("r.s5", 1))
    ledger = Ledger("r", "anthropic", MODEL, 3, shards, True, tasks=3)
    data = ledger.to_json()
    assert data["tasks"] == 3 and Ledger.from_json(data, "r", "run.json") == ledger
    assert ledger.span == 6
    untasked = {k: v for k, v in data.items() if k != "tasks"}
    with pytest.raises(vb.InvalidRequestError, match="shard 0 is not"):
        Ledger.from_json(untasked, "r", "run.json")  # gaps only in a tasked ledger
    swapped = {**data, "shards": [data["shards"][1], data["shards"][0], data["shards"][2]]}
    with pytest.raises(vb.InvalidRequestError, match="shard 1 is not"):
        Ledger.from_json(swapped, "r", "run.json")
    with pytest.raises(vb.InvalidRequestError, match="'tasks' is not a count"):
        Ledger.from_json({**data, "tasks": 0}, "r", "run.json")


def test_a_tasked_ledger_too_large_to_read_back_is_refused_before_any_job(
    client: vb.Client, stack: LocalStack
) -> None:
    from tests.helpers import with_staging_sizes
    from vertexbatch._rules import Limits

    with_staging_sizes(client, limits=Limits(record_bytes=2_500))
    rows = _requests(80)
    client.run_claude("huge", MODEL, rows[:40], shard_size=1, task=vb.Task(0, 2))
    with pytest.raises(vb.InvalidRequestError, match="use a larger shard_size") as info:
        client.run_claude("huge", MODEL, rows[40:], shard_size=1, task=vb.Task(1, 2))
    assert info.value.field == "shard_size"
    assert jobs_in(stack, client.bucket) == []


@pytest.mark.parametrize("method", ["run", "plan"])
def test_a_tasked_runs_sink_is_a_dataset_refused_as_a_table_before_any_cloud_call(
    counted: tuple[vb.Client, list[str]], stack: LocalStack, method: str
) -> None:
    """A tasked run takes ``dest=`` as a run does (tests/bigquery/test_tasks.py): a dataset; a
    table is refused naming the dataset to give, nothing asked of the cloud."""
    client, seen = counted
    stack.reset_calls()
    dest = "bq://my-project.answers.table"
    with pytest.raises(vb.InvalidRequestError, match="must name a dataset") as info:
        if method == "run":
            client.run_claude("tasked", MODEL, [task(0)], task=vb.Task(0, 2), dest=dest)
        else:
            client.plan_claude(
                "tasked", MODEL, [task(0)], shard_size=10, task=vb.Task(0, 2), dest=dest
            )
    assert info.value.field == "dest"
    assert seen == [] and not stack.calls()
