"""``vertexbatch run submit|advance|status|results`` through click's runner, on the local stack."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import vertexbatch as vb
from tests.helpers import CLAUDE, GEMINI, jobs_in, one_error_line, request_line, write_lines
from vertexbatch._command import demo as _demo
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode
from vertexbatch.emulator import LocalStack

SECRET = "quokka-secret-prompt-words"  # request content that must never reach an error line


@pytest.fixture(autouse=True)
def _environment(stack_env: str) -> str:
    """Every command here reads its configuration from the environment set for this test."""
    return stack_env


def cli(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=stdin, catch_exceptions=False)


def advance_until_done(stack: LocalStack, run_id: str, steps: int = 6) -> list[Result]:
    """`run advance` until it exits 0; every earlier step exits 10."""
    seen = []
    for _ in range(steps):
        stack.settle()
        result = cli("run", "advance", run_id)
        seen.append(result)
        if result.exit_code == ExitCode.OK:
            return seen
        assert result.exit_code == ExitCode.NOT_TERMINAL, result.output
    raise AssertionError(f"run {run_id} not done after {steps} steps")


def records(result: Result) -> dict[str, dict[str, Any]]:
    return {r["key"]: r for r in map(json.loads, result.stdout.splitlines())}


def test_run_with_retries_submit_advance_status_results(
    stack: LocalStack, client: vb.Client, tmp_path: Path
) -> None:
    """A run over 3 shards resubmits only its retryable and dropped keys; exit 10 until done."""
    lines = [request_line(f"k{i}") for i in range(5)] + [
        request_line("k5", "x [[vb:error 503]]"),
        request_line("k6", "x [[vb:drop]]"),
    ]
    path = write_lines(tmp_path / "in.jsonl", lines)
    args = ["run", "submit", "--provider", "claude", "--model", CLAUDE, "--id", "cr-1"]
    submitted = cli(*args, "--shard-size", "3", "--attempts", "2", str(path))
    assert submitted.exit_code == 0, submitted.output
    # Not done: shards 1 and 2 still need their retries, whatever the jobs' progress.
    assert submitted.stdout.startswith("run cr-1: 7 keys, ") and "pending" in submitted.stdout
    assert "'vertexbatch run advance cr-1'" in submitted.stdout
    again = cli(*args, "--shard-size", "3", "--attempts", "2", "--json", str(path))
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["shards"] == 3
    # Rejoining took a step of the same run: no shard or attempt has a second job.
    names = Counter(j["displayName"] for j in jobs_in(stack, client.bucket))
    assert set(names) >= {"cr-1.s0", "cr-1.s1", "cr-1.s2"} and set(names.values()) == {1}

    steps = advance_until_done(stack, "cr-1")
    assert re.fullmatch(
        r"run cr-1: 7 keys, done; exhausted 2, ok 5; spend \$\d+\.\d{4} at batch prices; "
        r"created 0 job\(s\)\n",
        steps[-1].stdout,
    ), steps[-1].stdout
    # Only k5 (shard 1) and k6 (shard 2) went again; shard 0 needed no retry.
    for retry_id in ("cr-1.s1.r1", "cr-1.s2.r1"):
        retry = client.find(retry_id)
        assert retry is not None and retry.keys == 1
    assert client.find("cr-1.s0.r1") is None

    status = cli("run", "status", "cr-1", "--json")
    assert status.exit_code == 0, status.output
    summary = json.loads(status.stdout)
    spend = summary.pop("spend")  # the five answers' (the exhausted keys' lines paid nothing)
    assert spend["dollars"] > 0 and spend["tiers"] == {"batch": 5}
    assert summary == {
        "id": "cr-1",
        "done": True,
        "keys": 7,
        "outcomes": {"exhausted": 2, "ok": 5},
        "live_jobs": 0,
        "created": 0,
        "shards": 3,
        "exit_code": 0,
    }

    results = cli("run", "results", "cr-1")
    assert results.exit_code == 0, results.output
    got = records(results)
    assert sorted(got) == [f"k{i}" for i in range(7)]
    assert got["k5"]["error"] == {
        "type": "ExhaustedError",
        "code": 503,
        "status": "UNAVAILABLE",
        "last": "LineError",
    }
    assert got["k6"]["outcome"] == "exhausted" and got["k6"]["error"]["last"] == "MissingError"
    # The summary counts as run status does.
    assert results.stderr.startswith("vertexbatch: 7 of 7 keys, run done: exhausted 2, ok 5; ")
    assert results.stderr.partition("; ")[2].startswith("spend ")  # the keys' spend
    only = cli("run", "results", "cr-1", "--only", "exhausted")
    assert sorted(records(only)) == ["k5", "k6"] and "7 of 7 keys" in only.stderr
    assert records(cli("run", "results", "cr-1", "--only", "missing")) == {}  # none is final


def test_retry_recovers_a_failed_shard(stack: LocalStack, client: vb.Client) -> None:
    """A shard whose job failed is answered by its retry; the retry's answers win."""
    stack.faults.fail_job("cr-2.s1", code=13, message="Internal error")
    stdin = "\n".join(request_line(f"k{i}") for i in range(4))
    args = ["run", "submit", "--provider", "claude", "--model", CLAUDE, "--id", "cr-2"]
    assert cli(*args, "--shard-size", "2", "-", stdin=stdin).exit_code == 0
    stack.settle()
    pending = cli("run", "status", "cr-2")
    assert pending.exit_code == ExitCode.NOT_TERMINAL
    assert re.fullmatch(
        r"run cr-2: 4 keys, 0 live job\(s\); ok 2, pending 2; finished shards: spend "
        r"\$\d+\.\d{4} at batch prices; waiting for 'vertexbatch run advance cr-2'\n",
        pending.stdout,
    ), pending.stdout
    # Read-only: status resubmits nothing even though shard 1 failed.
    assert client.find("cr-2.s1.r1") is None
    assert "4 of 4 keys, run not done (results so far): ok 2, pending 2" in (
        cli("run", "results", "cr-2").stderr
    )
    advance_until_done(stack, "cr-2")
    retry = client.find("cr-2.s1.r1")
    assert retry is not None and retry.keys == 2
    results = cli("run", "results", "cr-2")
    assert Counter(r["outcome"] for r in records(results).values()) == {"ok": 4}
    assert results.stderr.startswith("vertexbatch: 4 of 4 keys, run done: ok 4; spend ")


def test_status_and_results_agree_and_only_exhausted(stack: LocalStack, tmp_path: Path) -> None:
    """run results counts what run status counts, before and after done; --only exhausted keeps
    the keys that ran out of attempts, and each key says how many attempts held it."""
    lines = [request_line(f"k{i}") for i in range(4)] + [
        request_line("k4", "x [[vb:error 503]]"),
        request_line("k5", "x [[vb:drop]]"),
    ]
    path = write_lines(tmp_path / "in.jsonl", lines)
    args = ["run", "submit", "--provider", "claude", "--model", CLAUDE, "--id", "agree"]
    assert cli(*args, "--shard-size", "3", "--attempts", "3", str(path)).exit_code == 0

    def agree() -> dict[str, dict[str, Any]]:
        stack.settle()
        status = json.loads(cli("run", "status", "agree", "--json").stdout)
        results = cli("run", "results", "agree")
        got = records(results)
        counted = Counter(r["run_outcome"] for r in got.values())
        counted["pending"] += status["keys"] - len(got)  # keys with no result yet
        assert +counted == status["outcomes"]
        listed = ", ".join(f"{k} {v}" for k, v in status["outcomes"].items())
        assert f": {listed}; spend " in results.stderr
        return got

    before = agree()  # shard 1 waits for its retry: every key of it is pending
    assert {r["run_outcome"] for k, r in before.items() if k in ("k3", "k4", "k5")} == {"pending"}
    assert {r["attempts"] for r in before.values()} == {1}
    advance_until_done(stack, "agree")
    after = agree()
    exhausted = records(cli("run", "results", "agree", "--only", "exhausted"))
    assert sorted(exhausted) == ["k4", "k5"]
    assert {k: (r["outcome"], r["attempts"]) for k, r in exhausted.items()} == {
        "k4": ("exhausted", 3),
        "k5": ("exhausted", 3),
    }
    assert {r["attempts"] for k, r in after.items() if k not in exhausted} == {1}
    assert {r["run_outcome"] for k, r in after.items() if k not in exhausted} == {"ok"}


def test_run_status_waits_for_jobs_then_advance(stack: LocalStack) -> None:
    """A run with a job still going says it waits for it, then for run advance."""
    stack.faults.hold("wait-1.s0")
    args = ["run", "submit", "--provider", "claude", "--model", CLAUDE, "--id", "wait-1", "-"]
    submitted = cli(*args, stdin=request_line("k0"))
    assert submitted.stdout == (
        "run wait-1: 1 keys, 1 live job(s); pending 1; waiting for its jobs, then "
        "'vertexbatch run advance wait-1'\n"
    )
    assert cli("run", "status", "wait-1").stdout == submitted.stdout


def test_gemini_run_from_stdin_json(stack: LocalStack) -> None:
    """A Gemini run reads submit's Gemini lines from stdin; --json prints the summary."""
    stack.faults.hold("gr-1.s0")  # the run's job stays PENDING: not done, exit 10
    stdin = "\n".join(
        json.dumps({"key": f"t{i}", "contents": f"Classify ticket {i}.", "config": None})
        for i in range(3)
    )
    args = ["run", "submit", "--provider", "gemini", "--model", GEMINI, "--id", "gr-1", "--json"]
    result = cli(*args, "-", stdin=stdin)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["keys"] == 3 and data["shards"] == 1 and data["done"] is False
    assert data["outcomes"] == {"pending": 3} and data["exit_code"] == ExitCode.NOT_TERMINAL


def test_unknown_run_is_not_found(stack_env: str) -> None:
    """Every run command exits 4 for an id without a run, with one line naming it."""
    for command in ("advance", "status", "results"):
        result = cli("run", command, "no-such-run")
        assert result.exit_code == ExitCode.NOT_FOUND, result.output
        line = one_error_line(result)
        assert f"no run under id 'no-such-run' (no gs://{stack_env}/jobs/no-such-run/run.json)" in (
            line
        )


def test_invalid_run_id_is_invalid_request_not_not_found() -> None:
    """An id no run could have is exit 3, not 4: only a missing ledger is 'not found'."""
    result = cli("run", "status", "Bad_Id!")
    assert result.exit_code == ExitCode.INVALID_REQUEST
    assert "invalid request: submission id 'Bad_Id!' is invalid" in one_error_line(result)
    result = cli("run", "advance", "r" * 60)
    assert result.exit_code == ExitCode.INVALID_REQUEST
    assert "over 52 characters" in one_error_line(result)


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--deadline", "2026-11-30T06:00:00"], "--deadline '2026-11-30T06:00:00' has no timezone"),
        (["--deadline", "tomorrow"], "--deadline 'tomorrow' is not an ISO 8601 date and time"),
        (["--fallback", "online"], "--fallback online needs --deadline"),
    ],
)
def test_bad_deadline_is_usage_error_naming_the_flag(flags: list[str], expected: str) -> None:
    """A deadline without a timezone (or not a date) is exit 2 naming the flag, before any call."""
    result = cli("run", "advance", "any-run", *flags)
    assert result.exit_code == ExitCode.USAGE
    assert expected in one_error_line(result)


def test_deadline_fallback_online_with_jobs_held_pending(
    stack: LocalStack, client: vb.Client
) -> None:
    """Past --deadline with --fallback online, PENDING jobs are cancelled, keys answered online."""
    stack.faults.hold(display_name="late-1.s0", state="PENDING")
    stdin = "\n".join(request_line(f"k{i}") for i in range(3))
    args = ["run", "submit", "--provider", "claude", "--model", CLAUDE, "--id", "late-1", "-"]
    assert cli(*args, stdin=stdin).exit_code == 0
    future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    before = cli("run", "advance", "late-1", "--deadline", future, "--fallback", "online")
    assert before.exit_code == ExitCode.NOT_TERMINAL
    assert "pending 3" in before.stdout
    past = (datetime.now(UTC) - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    after = cli("run", "advance", "late-1", "--deadline", past, "--fallback", "online", "--json")
    assert after.exit_code == 0, after.output
    assert json.loads(after.stdout)["outcomes"] == {"ok": 3}
    job = client.find("late-1.s0")
    assert job is not None
    assert stack.wait_job(job.name)["state"] == "JOB_STATE_CANCELLED"
    results = records(cli("run", "results", "late-1"))
    assert sorted(results) == ["k0", "k1", "k2"]
    assert all(r["outcome"] == "ok" and r["text"] for r in results.values())


def test_submit_bad_line_names_the_line_across_shards(client: vb.Client, tmp_path: Path) -> None:
    """A bad line is exit 3 naming its line number, even in a later shard; never its content."""
    lines = [request_line(f"k{i}", SECRET) for i in range(4)] + [request_line("k1", SECRET)]
    path = write_lines(tmp_path / "in.jsonl", lines)
    args = ["run", "submit", "--provider", "claude", "--model", CLAUDE, "--id", "bad-run"]
    result = cli(*args, "--shard-size", "2", str(path))
    assert result.exit_code == ExitCode.INVALID_REQUEST
    line = one_error_line(result)
    assert f"{path} line 5: request key 'k1' appears twice" in line
    assert SECRET not in result.output


def test_submit_other_rows_under_the_id_is_not_blamed_on_a_line(tmp_path: Path) -> None:
    """Other rows under a run id: exit 3 saying the id is taken, not naming a request line."""
    first = write_lines(tmp_path / "a.jsonl", [request_line(f"k{i}") for i in range(4)])
    other = write_lines(tmp_path / "b.jsonl", [request_line(f"k{i}", "other") for i in range(4)])
    args = ["run", "submit", "--provider", "claude", "--model", CLAUDE, "--id", "taken"]
    assert cli(*args, "--shard-size", "2", str(first)).exit_code == 0
    result = cli(*args, "--shard-size", "2", str(other))
    assert result.exit_code == ExitCode.INVALID_REQUEST
    line = one_error_line(result)
    assert "run id 'taken' already holds another run" in line and " line " not in line


@pytest.mark.parametrize(
    ("first", "again", "expected"),
    [
        (
            ["--shard-size", "2"],
            ["--shard-size", "3"],
            "run 'cut' was staged in shards of 2 rows; a shard size of 3 cuts these requests "
            "differently: rejoin it with the shard size it started with, or use a new run id; "
            "nothing staged was changed",
        ),
        (
            ["--shard-size", "2"],
            [],
            "run 'cut' was staged in shards of 2 rows; a shard size of 100000 cuts",
        ),
        ([], ["--shard-size", "2"], "run 'cut' was staged in one shard; a shard size of 2 cuts"),
        (
            ["--attempts", "2"],
            [],
            "run 'cut' was staged with at most 2 attempts per key, not 3: rejoin it with 2",
        ),
        (
            [],
            ["--model", "claude-sonnet-5@default"],
            f"run 'cut' was staged for model '{CLAUDE}', not 'claude-sonnet-5@default'",
        ),
        (
            ["--cache"],
            [],
            "run 'cut' was staged with cache=True, not cache=False: rejoin it with cache=True",
        ),
        (
            [],
            ["--cache"],
            "run 'cut' was staged with cache=False, not cache=True: rejoin it with cache=False",
        ),
    ],
)
def test_rejoin_with_other_options_is_a_run_level_error(
    tmp_path: Path, first: list[str], again: list[str], expected: str
) -> None:
    """Rejoining a run with another shard size, attempts, model or cache flag says which, at
    run level."""
    path = write_lines(tmp_path / "in.jsonl", [request_line(f"k{i}") for i in range(5)])
    args = ["run", "submit", "--provider", "claude", "--id", "cut"]
    assert cli(*args, "--model", CLAUDE, *first, str(path)).exit_code == 0
    model = [] if "--model" in again else ["--model", CLAUDE]
    result = cli(*args, *model, *again, str(path))
    assert result.exit_code == ExitCode.INVALID_REQUEST
    line = one_error_line(result)
    assert expected in line
    assert ".s0" not in line and "other rows" not in line and " line " not in line


def test_partly_staged_run_is_a_run_level_error(tmp_path: Path) -> None:
    """A start that stopped at a bad line, run again with another cut, gets a run-level error."""
    lines = [request_line(f"k{i}") for i in range(4)] + ['{"key": ']
    path = write_lines(tmp_path / "in.jsonl", lines)
    args = ["run", "submit", "--provider", "claude", "--model", CLAUDE, "--id", "part"]
    assert cli(*args, "--shard-size", "2", str(path)).exit_code == ExitCode.INVALID_REQUEST
    fixed = write_lines(tmp_path / "fixed.jsonl", lines[:4])
    result = cli(*args, "--shard-size", "3", str(fixed))
    assert result.exit_code == ExitCode.INVALID_REQUEST
    line = one_error_line(result)
    assert "run id 'part' was partly staged before, with other requests, model or shard size" in (
        line
    )
    assert "part.s0" not in line and " line " not in line
    assert cli(*args, "--shard-size", "2", str(fixed)).exit_code == 0  # the same cut carries on


@pytest.mark.parametrize(
    "flags", [["--shard-size", "0"], ["--attempts", "0"], ["--attempts", "100"]]
)
def test_submit_bad_sizes_are_usage_errors(flags: list[str], tmp_path: Path) -> None:
    """--shard-size below 1 or --attempts outside 1..99 is exit 2."""
    path = write_lines(tmp_path / "in.jsonl", [request_line("a")])
    args = ["run", "submit", "--provider", "claude", "--model", CLAUDE, "--id", "sizes"]
    assert cli(*args, *flags, str(path)).exit_code == ExitCode.USAGE


def test_demo_run_section(stack: LocalStack, client: vb.Client) -> None:
    """The demo's run: 3 shards, a retry per shard, 4 keys exhausted, nothing lost."""
    lines: list[str] = []
    summary = _demo._run_section(stack, client, lines.append, interval=0)
    assert summary.done and summary.outcomes == {"ok": 16, "exhausted": 4}
    out = "\n".join(lines)
    assert "demo-nightly-review  20 requests in 3 shards (8, 8, 4)" in out
    assert "demo-nightly-review       3        16         0         0         0         4" in out
    assert "demo-nightly-review.s0   first 8 keys, then .r1 2 keys" in out
    assert "4 keys ended exhausted" in out
    steps = [line for line in lines if line.lstrip().startswith("step")]
    assert steps and "done" in steps[-1]
    # Every step is shown, numbered as it happened; one that changed nothing says so.
    assert [int(line.split()[1]) for line in steps] == list(range(1, len(steps) + 1))
    assert all("created" in line or "nothing to do" in line for line in steps)
