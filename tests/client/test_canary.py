"""``canary=N``: the first N requests sent online before anything is staged, through the real
clients against the local stack (its per-model rules refuse a request for good; its faults
make a call fail for a while)."""

from __future__ import annotations

import asyncio
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import (
    CLAUDE,
    GEMINI,
    claude_request,
    claude_requests,
    jobs_in,
    request_line,
    run_docs_example,
    staged_names,
    write_lines,
)
from vertexbatch._command.cli import main
from vertexbatch._submission.options import SubmitOptions
from vertexbatch.emulator import LocalStack

SECRET = "quokka-secret-prompt-words"  # request content that must never reach an error
_OPUS = vb.Price("claude-opus-5-5", 5.0, 25.0)


def _nothing_in(stack: LocalStack, bucket: str) -> bool:
    return not list(stack.storage_client().list_blobs(bucket)) and not jobs_in(stack, bucket)


def _unsigned_follow_up(key: str) -> vb.GeminiRequest:
    """A Gemini 3 follow-up turn whose function call lost its thought signature: the field
    check takes it (the SDK's types allow it), the model refuses it (400)."""
    contents = [
        {"role": "user", "parts": [{"text": f"Weather in Oslo? {SECRET}"}]},
        {"role": "model", "parts": [{"function_call": {"name": "weather", "args": {"c": "Oslo"}}}]},
        {
            "role": "user",
            "parts": [{"function_response": {"name": "weather", "response": {"celsius": 4}}}],
        },
    ]
    return vb.GeminiRequest(key, contents)


# ---- the options (no cloud call) ----


@pytest.mark.parametrize("bad", [True, False, -1, 1.5, "2", None])
def test_a_canary_that_is_not_a_whole_number_is_refused(bad: Any) -> None:
    with pytest.raises(vb.InvalidRequestError, match="canary must be a whole number") as caught:
        SubmitOptions.of("submit_claude", {"canary": bad})
    assert caught.value.field == "canary"


def test_the_canary_is_off_by_default_and_no_part_of_the_identity() -> None:
    assert SubmitOptions.of("submit_claude", {}).canary == 0
    assert SubmitOptions.of("submit_claude", {"canary": 3}) == SubmitOptions()


# ---- submissions on the stack ----


def test_a_request_the_model_refuses_for_good_refuses_the_submission(
    stack: LocalStack, client: vb.Client, bucket: str
) -> None:
    """Gemini 3 refuses a follow-up whose call lost its signature: the canary sees it online
    and the submission is refused, naming the key and the failure, never the content; nothing
    is staged and no job is created, so the corrected requests take the same id."""
    requests = [_unsigned_follow_up("turn-0"), vb.GeminiRequest("turn-1", "Hello.")]
    with pytest.raises(vb.InvalidRequestError) as caught:
        client.submit_gemini("cn-1", GEMINI, requests, canary=1)
    error = caught.value
    assert error.field == "canary"
    assert "'turn-0'" in str(error) and "HTTP 400 INVALID_ARGUMENT" in str(error)
    assert SECRET not in str(error) and "thought_signature" not in str(error)
    cause = error.__cause__
    assert isinstance(cause, vb.LineError) and not cause.transient
    assert (cause.key, cause.code) == ("turn-0", 400)
    assert stack.calls()["generateContent"] == 1 and stack.calls()["create"] == 0
    assert _nothing_in(stack, bucket)
    # Corrected, the same id submits: the refusal left nothing behind it.
    fixed = [vb.GeminiRequest("turn-0", "Weather in Oslo?"), requests[1]]
    job = client.submit_gemini("cn-1", GEMINI, fixed, canary=1)
    assert job.keys == 2 and stack.calls()["generateContent"] == 2
    assert len(jobs_in(stack, bucket)) == 1


def test_the_canary_is_the_first_n_requests_in_the_callers_order(
    stack: LocalStack, client: vb.Client, bucket: str
) -> None:
    """A Claude line the model answers 400 is found by a canary that reaches it, and only by
    one: canary=1 passes (the refused line is second), canary=2 refuses naming it."""
    requests = [
        claude_request("a", "Fine."),
        claude_request("b", f"{SECRET} [[vb:error 400]]"),
        claude_request("c", "Fine too."),
    ]
    with pytest.raises(vb.InvalidRequestError, match=r"request 'b' online with HTTP 400") as caught:
        client.submit_claude("cn-2", CLAUDE, requests, canary=2)
    assert SECRET not in str(caught.value)
    assert stack.calls()["rawPredict"] == 2 and _nothing_in(stack, bucket)
    job = client.submit_claude("cn-2", CLAUDE, requests, canary=1)
    assert job.keys == 3 and stack.calls()["rawPredict"] == 3


def test_a_transient_failure_warns_and_does_not_block(
    stack: LocalStack, client: vb.Client, bucket: str
) -> None:
    """A canary call that keeps failing 503 past the retry policy is a CanaryWarning naming the
    key and the code; the job is staged and created."""
    stack.faults.fail("rawPredict", status=503, times=50)
    with pytest.warns(vb.CanaryWarning, match=r"request 'key-0' failed .*HTTP 503") as seen:
        job = client.submit_claude("cn-3", CLAUDE, claude_requests(3), canary=1)
    assert all(SECRET not in str(w.message) for w in seen)
    assert job.keys == 3 and len(jobs_in(stack, bucket)) == 1
    assert stack.calls()["rawPredict"] == 8  # RetryPolicy.no_wait(): 8 attempts


def test_a_transient_failure_that_clears_within_the_retries_is_not_reported(
    stack: LocalStack, client: vb.Client
) -> None:
    stack.faults.fail("rawPredict", status=429, times=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", vb.CanaryWarning)
        job = client.submit_claude("cn-4", CLAUDE, claude_requests(2), canary=2)
    assert job.keys == 2 and stack.calls()["rawPredict"] == 4


def test_a_resubmission_that_adopts_the_job_sends_no_canary(
    stack: LocalStack, client: vb.Client, bucket: str
) -> None:
    """The id holds the job: submitting again returns it, and pays no second canary (the first
    one ran before anything was staged)."""
    requests = claude_requests(3)
    job = client.submit_claude("cn-5", CLAUDE, requests, canary=2)
    assert stack.calls()["rawPredict"] == 2
    again = client.submit_claude("cn-5", CLAUDE, requests, canary=2)
    assert again == job and stack.calls()["rawPredict"] == 2
    # Its plan agrees: nothing to send, no canary.
    plan = client.plan_claude("cn-5", CLAUDE, requests, canary=2, prices=[_OPUS])
    assert plan.submitted == job.name and plan.canary == 0
    assert len(jobs_in(stack, bucket)) == 1


def test_a_canary_of_more_requests_than_given_is_refused(
    stack: LocalStack, client: vb.Client, bucket: str
) -> None:
    with pytest.raises(vb.InvalidRequestError, match=r"canary=4 is more than the 3 request") as e:
        client.submit_claude("cn-6", CLAUDE, claude_requests(3), canary=4)
    assert e.value.field == "canary"
    with pytest.raises(vb.InvalidRequestError, match=r"canary=4 is more than the 3 request"):
        client.plan_claude("cn-6", CLAUDE, claude_requests(3), canary=4)
    assert stack.calls()["rawPredict"] == 0 and _nothing_in(stack, bucket)


def test_the_plan_shows_the_canary_and_its_online_cost(
    stack: LocalStack, client: vb.Client
) -> None:
    """The canary's requests are the first N given, priced at the online list price (twice the
    batch rate), apart from the batch figures; a plan calls nothing online."""
    requests = claude_requests(4, max_tokens=100)
    plain = client.plan_claude("cn-7", CLAUDE, requests, prices=[_OPUS])
    plan = client.plan_claude("cn-7", CLAUDE, requests, prices=[_OPUS], canary=2)
    assert (plain.canary, plain.canary_cost_low, plain.canary_cost_high) == (0, 0.0, 0.0)
    assert plan.canary == 2 and (plan.cost_low, plan.cost_high) == (plain.cost_low, plain.cost_high)
    # Half the requests (all alike) at twice the batch rate: what the whole batch costs.
    assert plan.canary_cost_low == pytest.approx(plain.cost_low)
    assert plan.canary_cost_high == pytest.approx(plain.cost_high)
    assert any(a.startswith("canary: the first 2 request(s)") for a in plan.assumptions)
    assert plan.to_dict()["canary"] == 2
    assert stack.calls()["rawPredict"] == 0


def test_a_run_refused_by_its_canary_stages_nothing_and_a_rejoin_sends_none(
    stack: LocalStack, client: vb.Client, bucket: str
) -> None:
    bad = [*claude_requests(3), claude_request("z", "[[vb:error 404]]")]
    bad.insert(0, bad.pop())
    with pytest.raises(vb.InvalidRequestError, match=r"request 'z' online with HTTP 404"):
        client.run_claude("cr-1", CLAUDE, bad, shard_size=2, canary=1)
    assert _nothing_in(stack, bucket)
    good = claude_requests(4)
    run = client.run_claude("cr-1", CLAUDE, good, shard_size=2, canary=1)
    assert stack.calls()["rawPredict"] == 2
    rejoined = client.run_claude("cr-1", CLAUDE, good, shard_size=2, canary=1)
    assert rejoined.id == run.id and stack.calls()["rawPredict"] == 2


def test_client_aio_takes_the_canary(stack: LocalStack, client: vb.Client, bucket: str) -> None:
    requests = [claude_request("a", "[[vb:error 400]]")]

    async def submit() -> vb.Job:
        return await client.aio.submit_claude("cn-8", CLAUDE, requests, canary=1)

    with pytest.raises(vb.InvalidRequestError, match="request 'a' online with HTTP 400"):
        asyncio.run(submit())
    assert _nothing_in(stack, bucket)


# ---- the command ----


def test_the_command_takes_canary(stack_env: str, stack: LocalStack, tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "in.jsonl",
        [request_line("k0", f"{SECRET} [[vb:error 400]]"), request_line("k1")],
    )
    args = ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "cn-9", str(path)]
    refused = CliRunner().invoke(main, [*args, "--canary", "1"])
    assert refused.exit_code == 3
    assert "canary of cn-9" in refused.stderr and "'k0'" in refused.stderr
    assert SECRET not in refused.output
    assert not jobs_in(stack, stack_env)
    plan = CliRunner().invoke(main, [*args, "--canary", "2", "--dry-run"])
    assert plan.exit_code == 0, plan.output
    assert "canary          2 sent online first" in plan.stdout
    assert CliRunner().invoke(main, [*args, "--canary", "-1"]).exit_code == 2
    assert "--canary N" in CliRunner().invoke(main, ["submit", "--help"]).stdout
    assert "--canary N" in CliRunner().invoke(main, ["run", "submit", "--help"]).stdout
    assert stack.calls()["rawPredict"] == 1
    # Without the canary, the same file submits (the id was left free).
    assert CliRunner().invoke(main, args).exit_code == 0
    assert len(jobs_in(stack, stack_env)) == 1
    assert staged_names(stack, stack_env, "cn-9")


@pytest.mark.timeout(120)
def test_the_docs_example_runs_as_written(stack: LocalStack, bucket: str) -> None:
    """docs/examples/canary.py runs as `python FILE` with the stack's environment."""
    stdout = run_docs_example(stack, bucket, "canary.py")
    planned, refused, submitted = stdout.splitlines()
    assert re.fullmatch(r"canary: 2 requests online, up to \$0\.\d{4}", planned), planned
    assert refused == "refused: canary r0 400"
    assert submitted == "submitted 1000 keys; canary warnings: 0"
    assert stack.calls()["rawPredict"] == 3 and len(jobs_in(stack, bucket)) == 1


def test_the_budget_holds_the_canary_too(stack: LocalStack, client: vb.Client, bucket: str) -> None:
    """A budget the batch plan fits but the batch plus its canary's online calls do not is
    refused, saying the canary's figure; nothing is sent."""
    requests = claude_requests(4, max_tokens=1000)
    plan = client.plan_claude("cn-10", CLAUDE, requests, prices=[_OPUS], canary=2)
    assert plan.cost_high is not None and plan.canary_cost_high is not None
    between = plan.cost_high + plan.canary_cost_high / 2
    with pytest.raises(vb.InvalidRequestError, match=r"and its canary up to \$") as caught:
        client.submit_claude("cn-10", CLAUDE, requests, prices=[_OPUS], canary=2, budget=between)
    assert caught.value.field == "budget"
    assert stack.calls()["rawPredict"] == 0 and _nothing_in(stack, bucket)
    job = client.submit_claude("cn-10", CLAUDE, requests, prices=[_OPUS], budget=between)
    assert job.keys == 4


def test_the_canary_logs_what_its_answers_cost_and_no_content(
    client: vb.Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="vertexbatch")
    requests = [claude_request(f"k{i}", SECRET) for i in range(2)]
    client.submit_claude("cn-11", CLAUDE, requests, prices=[_OPUS], canary=2)
    (said,) = [r.getMessage() for r in caplog.records if "canary of cn-11" in r.getMessage()]
    assert re.fullmatch(r"canary of cn-11: 2 request\(s\) answered online, \$0\.\d{4}", said)
    assert all(SECRET not in r.getMessage() for r in caplog.records)
