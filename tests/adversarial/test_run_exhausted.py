"""A finished run's results say what is final: a key still retryable or missing when its shard
finished is ``exhausted`` on its ``Result`` (an ``ExhaustedError`` carrying the last attempt's
error), the same in ``results``, ``key_results``, ``status`` and the command."""

from __future__ import annotations

import json
import pickle

from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import CLAUDE, task
from vertexbatch._command.cli import main
from vertexbatch.emulator import LocalStack


def _rows() -> list[vb.ClaudeRequest]:
    """Four keys: key-1 fails with 503 on every attempt, key-2 is never answered."""
    return [task(0), task(1, "[[vb:error 503]]"), task(2, "[[vb:drop]]"), task(3)]


def _ended(client: vb.Client, stack: LocalStack, run_id: str, attempt: str) -> None:
    job = client.find(f"{run_id}.s0{attempt}")
    assert job is not None
    stack.wait_job(job.name)


def _finished_run(client: vb.Client, stack: LocalStack, run_id: str) -> vb.Run:
    """A one-shard run of two attempts whose second attempt has ended: finished, though no
    step has recorded it yet."""
    run = client.run_claude(run_id, CLAUDE, _rows(), max_attempts=2)
    _ended(client, stack, run_id, "")
    run.advance()  # resubmits key-1 and key-2 as .r1
    _ended(client, stack, run_id, ".r1")
    return run


def test_an_exhausted_key_is_exhausted_on_its_result(client: vb.Client, stack: LocalStack) -> None:
    """Once its shard is finished (status says done, before any step records it), each key
    the attempts left unsettled is ``exhausted``, its error an ``ExhaustedError`` that is not
    retryable and carries the last error; key_results agree, and so does every later pass."""
    run = _finished_run(client, stack, "spent")
    assert run.status().outcomes == {"exhausted": 2, "ok": 2}
    for _ in ("before the step records it", "after"):
        results = {r.key: r for r in run.results()}
        assert {k: r.outcome for k, r in results.items()} == {
            "key-0": "ok",
            "key-1": "exhausted",
            "key-2": "exhausted",
            "key-3": "ok",
        }
        for key, last in (("key-1", vb.LineError), ("key-2", vb.MissingError)):
            error = results[key].error
            assert isinstance(error, vb.ExhaustedError) and not vb.is_retryable(error)
            assert isinstance(error.last, last) and error.attempts == 2 and error.key == key
            assert type(pickle.loads(pickle.dumps(error)).last) is last
        assert isinstance(results["key-1"].error, vb.ExhaustedError)
        assert results["key-1"].error.last.transient  # type: ignore[attr-defined]
        items = {i.result.key: (i.outcome, i.result.outcome) for i in run.key_results()}
        assert all(outcome == shown for outcome, shown in items.values())
        assert run.advance().outcomes == {"exhausted": 2, "ok": 2}


def test_a_key_with_attempts_left_stays_retryable(client: vb.Client, stack: LocalStack) -> None:
    """Before its shard is finished, a key its attempt left retryable is still ``retryable``
    (another attempt will run it), and ``pending`` in key_results."""
    client.run_claude("spent-not-yet", CLAUDE, _rows(), max_attempts=2)
    _ended(client, stack, "spent-not-yet", "")
    run = client.open_run("spent-not-yet")
    assert {r.key: r.outcome for r in run.results()}["key-1"] == "retryable"
    assert {i.result.key: i.outcome for i in run.key_results()}["key-1"] == "pending"


def test_the_command_says_exhausted_as_python_does(
    client: vb.Client, stack: LocalStack, stack_env: str
) -> None:
    """`vertexbatch run results` prints an exhausted key's outcome as ``exhausted`` (its
    run_outcome too), its error the ExhaustedError with the last error's type, code and status;
    ``--only exhausted`` keeps exactly those keys."""
    _finished_run(client, stack, "spent-cli")
    shown = CliRunner().invoke(main, ["run", "results", "spent-cli", "--only", "exhausted"])
    assert shown.exit_code == 0, shown.output
    lines = {x["key"]: x for x in map(json.loads, shown.stdout.splitlines())}
    assert sorted(lines) == ["key-1", "key-2"]
    assert {(x["outcome"], x["run_outcome"]) for x in lines.values()} == {("exhausted",) * 2}
    assert lines["key-1"]["error"] == {
        "type": "ExhaustedError",
        "code": 503,
        "status": "UNAVAILABLE",
        "last": "LineError",
    }
    assert lines["key-2"]["error"]["last"] == "MissingError"
