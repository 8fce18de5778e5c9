"""A model id outside the catalogue is submitted all the same, with a warning naming the
closest catalogued id: on every submission path (plan, submit, run; sync and asyncio) and in
the command's output. Through the local stack, which is told to serve the new id."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import CLAUDE, claude_request, request_line, write_lines
from vertexbatch._command.cli import main
from vertexbatch.emulator import LocalStack

NEW = "claude-opus-5-6@default"  # newer than the catalogue: Vertex may serve it before we know
NEAR = "'claude-opus-5-5'"


@pytest.fixture
def served(stack: LocalStack) -> str:
    stack.add_model("anthropic", "claude-opus-5-6")
    return NEW


def _requests() -> list[vb.ClaudeRequest]:
    return [claude_request("a", "one"), claude_request("b", "two")]


def test_submit_and_plan_warn_and_still_submit(client: vb.Client, served: str) -> None:
    with pytest.warns(vb.UncataloguedModelWarning, match=NEAR) as plan_said:
        plan = client.plan_claude("new-model", served, _requests())
    assert plan.to_send == 2 and plan.price is None  # no price: the catalogue lacks it
    with pytest.warns(vb.UncataloguedModelWarning, match=NEAR) as submit_said:
        job = client.submit_claude("new-model", served, _requests())
    assert job.model == "claude-opus-5-6@default"
    assert client.find("new-model") == job
    for said in (plan_said, submit_said):
        assert len(said) == 1 and "is not in vertexbatch's model catalogue" in str(said[0].message)


def test_a_run_warns(client: vb.Client, served: str) -> None:
    with pytest.warns(vb.UncataloguedModelWarning, match=NEAR):
        run = client.run_claude("new-run", served, _requests(), shard_size=1)
    assert run.id == "new-run"


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_asyncio_client_warns(client: vb.Client, served: str, anyio_backend: str) -> None:
    with pytest.warns(vb.UncataloguedModelWarning, match=NEAR):
        await client.aio.plan_claude("new-aio", served, _requests())
    with pytest.warns(vb.UncataloguedModelWarning, match=NEAR):
        await client.aio.submit_claude("new-aio", served, _requests())


def test_a_catalogued_model_does_not_warn(client: vb.Client) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", vb.UncataloguedModelWarning)
        client.plan_claude("known", CLAUDE, _requests())
        client.submit_claude("known", CLAUDE, _requests())


def test_a_refused_model_is_refused_before_any_warning(client: vb.Client) -> None:
    """The family and form rules still come first: an error, not a warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", vb.UncataloguedModelWarning)
        with pytest.raises(vb.InvalidRequestError, match="is a Gemini model"):
            client.submit_claude("wrong", "gemini-2.5-flash", _requests())


def test_the_command_prints_the_warning(
    stack: LocalStack, bucket: str, served: str, tmp_path: Path
) -> None:
    """`vertexbatch submit` (and its --dry-run) submits and prints one warning line on stderr."""
    path = write_lines(tmp_path / "in.jsonl", [request_line("a"), request_line("b")])
    env = stack.environment(bucket, prefix="jobs")
    base = ["submit", "--provider", "claude", "--model", served, "--id", "cli-new", "--json"]
    for extra in (["--dry-run"], []):
        shown = CliRunner().invoke(main, [*base, *extra, str(path)], env=env)
        assert shown.exit_code == 0, shown.output
        warned = [line for line in shown.stderr.splitlines() if "warning" in line]
        assert len(warned) == 1, shown.stderr
        assert warned[0].startswith("vertexbatch: warning: model 'claude-opus-5-6@default'")
        assert NEAR in warned[0]
        assert json.loads(shown.stdout)
