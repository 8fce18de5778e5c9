"""Every duration the command or the Python API takes: a clear refusal for what no wait can be.

Issue 38, item 13: ``--cache-ttl 1e-300`` passed the option's check, became ``timedelta(0)``
and exited 3 with a Python repr. The siblings: a timeout of ``1e300`` seconds overflowed
``timedelta`` in ``Client.wait``, and ``RetryPolicy(initial=10**400)`` raised OverflowError.
Each is now a usage error (exit 2 naming the option) or an ``InvalidRequestError`` naming the
parameter and the rule.
"""

from __future__ import annotations

import asyncio
import warnings
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import CLAUDE, claude_requests, write_lines
from vertexbatch._command.cli import main
from vertexbatch.emulator import LocalStack

LINE = '{"key": "a", "params": {"max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}}'
HUGE = 10**400
BAD = [0.0, -1.0, 1e-300, float("nan"), float("inf"), -float("inf"), 1e300, HUGE, -HUGE]
BAD_IDS = ["0", "-1", "1e-300", "nan", "inf", "-inf", "1e300", "10**400", "-10**400"]


@pytest.mark.parametrize("value", ["1e-300", "5e-7", "1e-7"])
@pytest.mark.parametrize(
    "option", ["--cache-ttl", "run --cache-ttl", "watch --floor", "watch --ceiling"]
)
def test_a_duration_below_a_microsecond_is_a_usage_error(
    stack: LocalStack, bucket: str, tmp_path: Path, option: str, value: str
) -> None:
    """Exit 2 naming the option and the rule: a duration more than 0 is at least 1e-06 s."""
    path = str(write_lines(tmp_path / "r.jsonl", [LINE]))
    submit = ["--provider", "claude", "--model", CLAUDE, "--id", "d", "--cache", "--dry-run"]
    commands = {
        "--cache-ttl": ["submit", *submit, path, "--cache-ttl"],
        "run --cache-ttl": ["run", "submit", *submit, path, "--cache-ttl"],
        "watch --floor": ["watch", "d", "--floor"],
        "watch --ceiling": ["watch", "d", "--floor", "1e-06", "--ceiling"],
    }
    args = [*commands[option], value]
    result = CliRunner().invoke(main, args, env=stack.environment(bucket, prefix="jobs"))
    assert result.exit_code == 2, result.output
    assert option.split()[-1] in result.output and "1e-06" in result.output, result.output
    assert "timedelta" not in result.output and "a bug" not in result.output


def test_a_microsecond_cache_ttl_is_taken(stack: LocalStack, bucket: str, tmp_path: Path) -> None:
    """The smallest duration a timedelta holds is a valid --cache-ttl."""
    path = str(write_lines(tmp_path / "r.jsonl", [LINE]))
    args = ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "d", "--cache"]
    args += ["--dry-run", "--cache-ttl", "1e-06", path]
    result = CliRunner().invoke(main, args, env=stack.environment(bucket, prefix="jobs"))
    assert result.exit_code == 0, result.output


def _deprecated_wait(client: vb.Client, job: vb.Job, **kwargs: Any) -> vb.Status:
    """``vertexbatch.wait(client, job)``, its DeprecationWarning let pass (tested elsewhere)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return vb.wait(client, job, **kwargs)


@pytest.mark.parametrize("value", BAD, ids=BAD_IDS)
@pytest.mark.parametrize("name", ["timeout", "floor", "ceiling"])
def test_wait_refuses_a_number_no_wait_can_be(client: vb.Client, name: str, value: float) -> None:
    """``Client.wait``, ``vertexbatch.wait`` (deprecated) and ``client.aio.wait``:
    InvalidRequestError naming the parameter, before any poll (0 and 1e-300 are valid timeouts:
    give up at once)."""
    if name == "timeout" and value in (0, 1e-300):
        return
    job = client.submit_claude("dur", CLAUDE, claude_requests(1))
    kwargs = {"ceiling": 1e9} if name == "floor" else {}
    kwargs[name] = value

    async def aio() -> object:
        return await client.aio.wait(job, **kwargs)

    calls = [
        lambda: client.wait(job, **kwargs),
        lambda: _deprecated_wait(client, job, **kwargs),
        lambda: asyncio.run(aio()),
    ]
    for call in calls:
        with pytest.raises(vb.InvalidRequestError) as info:
            call()
        assert info.value.field == name, str(info.value)
        assert "1e9" in str(info.value) or "1,000,000,000" in str(info.value), str(info.value)


def test_wait_takes_the_largest_timeout(client: vb.Client, stack: LocalStack) -> None:
    """A timeout of 1e9 seconds (about 31 years) waits as any other."""
    job = client.submit_claude("dur-ok", CLAUDE, claude_requests(1))
    stack.wait_job(job.name)
    status = client.wait(job, timeout=1e9, floor=0.01, ceiling=1e9)
    assert status.terminal


@pytest.mark.parametrize("value", BAD[1:], ids=BAD_IDS[1:])
@pytest.mark.parametrize("name", ["initial", "maximum", "jitter", "deadline", "timeout"])
def test_retry_policy_refuses_a_number_no_pause_can_be(name: str, value: float) -> None:
    """InvalidRequestError(field="retry") naming the field, never OverflowError."""
    if value == 1e-300 and name in ("initial", "maximum", "jitter"):
        return  # a pause of 1e-300 s is a pause of none, as 0 is for these
    with pytest.raises(vb.InvalidRequestError) as info:
        vb.RetryPolicy(**{name: value})
    assert info.value.field == "retry"
    assert f"RetryPolicy.{name}" in str(info.value)


@pytest.mark.parametrize(
    "ttl", [timedelta(0), timedelta(seconds=-1), timedelta(microseconds=-1), 1.0]
)
def test_cache_ttl_refuses_what_is_no_positive_duration(client: vb.Client, ttl: object) -> None:
    """``cache_ttl=`` takes a positive timedelta: anything else is InvalidRequestError."""
    with pytest.raises(vb.InvalidRequestError) as info:
        client.plan_claude("ttl", CLAUDE, claude_requests(1), cache=True, cache_ttl=ttl)  # type: ignore[arg-type]
    assert info.value.field == "cache_ttl"


def test_the_largest_cache_ttl_is_taken(client: vb.Client) -> None:
    """``timedelta.max`` is any age: a plan, no overflow."""
    plan = client.plan_claude(
        "ttl-max", CLAUDE, claude_requests(1), cache=True, cache_ttl=timedelta.max
    )
    assert plan.requests == 1
