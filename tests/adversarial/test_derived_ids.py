"""Ids vertexbatch derives (``ID.r1`` for a resubmission, ``RUN.s0`` for a run's shard) are
refused from callers in every entry point, naming ``resubmit``, before any cloud call; the
library's own derived ids still pass, and ``find`` still reads them."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import (
    CLAUDE,
    GEMINI,
    claude_request,
    claude_requests,
    gemini_requests,
    write_lines,
)
from vertexbatch._command.cli import main
from vertexbatch.emulator import LocalStack

DERIVED = ["paper.r1", "paper.r12", "paper.s0", "paper.s3.r2", "run.s10"]
LINE = '{"key": "a", "params": {"max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}}'


def _calls(client: vb.Client, id: str) -> dict[str, object]:
    claude, gemini = claude_requests(2), gemini_requests(2)
    return {
        "submit_claude": lambda: client.submit_claude(id, CLAUDE, claude),
        "submit_gemini": lambda: client.submit_gemini(id, GEMINI, gemini),
        "plan_claude": lambda: client.plan_claude(id, CLAUDE, claude, cache=True),
        "plan_gemini run": lambda: client.plan_gemini(id, GEMINI, gemini, shard_size=1),
        "run_claude": lambda: client.run_claude(id, CLAUDE, claude),
        "run_gemini": lambda: client.run_gemini(id, GEMINI, gemini, cache=True),
        "run_claude task": lambda: client.run_claude(id, CLAUDE, claude, task=vb.Task(0, 2)),
    }


@pytest.mark.parametrize("id", DERIVED)
def test_every_entry_point_refuses_a_derived_id_before_any_cloud_call(
    counted: tuple[vb.Client, list[str]], stack: LocalStack, id: str
) -> None:
    """submit_*, plan_* and run_* (tasked too) refuse ``ID.rN`` / ``ID.sN`` naming resubmit,
    with no GCS request and no job."""
    client, seen = counted
    before = len(stack.jobs())
    for name, call in _calls(client, id).items():
        with pytest.raises(vb.InvalidRequestError, match="resubmit") as caught:
            call()  # type: ignore[operator]
        assert caught.value.field == "id", name
        assert repr(id) in str(caught.value), name
    assert seen == []
    assert len(stack.jobs()) == before


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_async_view_refuses_a_derived_id(
    counted: tuple[vb.Client, list[str]], anyio_backend: str
) -> None:
    """``client.aio.submit_claude`` and ``client.aio.run_gemini`` refuse it the same way."""
    client, seen = counted
    with pytest.raises(vb.InvalidRequestError, match="resubmit"):
        await client.aio.submit_claude("paper.r1", CLAUDE, claude_requests(1))
    with pytest.raises(vb.InvalidRequestError, match="resubmit"):
        await client.aio.run_gemini("paper.s0", GEMINI, gemini_requests(1))
    assert seen == []


def test_a_hand_typed_derived_id_no_longer_blocks_resubmit(
    client: vb.Client, stack: LocalStack
) -> None:
    """After ``submit("paper")``, a hand-typed ``submit("paper.r1")`` is refused, so the
    later ``resubmit`` takes ``paper.r1`` and ``find`` reads it back."""
    job = client.submit_claude(
        "paper", CLAUDE, [claude_request("a", "ok"), claude_request("b", "[[vb:drop]]")]
    )
    with pytest.raises(vb.InvalidRequestError, match=r"'paper\.r1'.*resubmit"):
        client.submit_claude("paper.r1", CLAUDE, [claude_request("b", "again")])
    stack.wait_job(job.name)
    again = client.resubmit(job, keys=["b"])
    assert again.id == "paper.r1"
    found = client.find("paper.r1")
    assert found is not None and found.name == again.name


def test_a_run_still_retries_under_its_own_derived_ids(
    client: vb.Client, stack: LocalStack
) -> None:
    """A run's shards (``RUN.s0``) and their attempts (``RUN.s0.r1``) are the library's own:
    they still submit, and ``find`` reads them."""
    run = client.run_claude(
        "papers", CLAUDE, [claude_request("a", "ok"), claude_request("b", "[[vb:drop]]")]
    )
    for _ in range(10):
        stack.settle()
        if run.advance().done:
            break
    assert client.find("papers.s0") is not None
    assert client.find("papers.s0.r1") is not None


@pytest.mark.parametrize(
    "args",
    [
        ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "paper.r1"],
        ["run", "submit", "--provider", "claude", "--model", CLAUDE, "--id", "paper.s0"],
        ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "paper.r1", "--dry-run"],
    ],
)
def test_the_command_refuses_a_derived_id(
    stack: LocalStack, bucket: str, tmp_path: Path, args: list[str]
) -> None:
    """``vertexbatch submit`` / ``run submit`` exit 3 naming resubmit, nothing staged."""
    path = str(write_lines(tmp_path / "r.jsonl", [LINE]))
    before = len(stack.jobs())
    result = CliRunner().invoke(main, [*args, path], env=stack.environment(bucket, prefix="jobs"))
    assert result.exit_code == 3, result.output
    assert "resubmit" in result.output and "a bug" not in result.output
    assert len(stack.jobs()) == before
    assert list(stack.storage_client().list_blobs(bucket, prefix="jobs/")) == []
