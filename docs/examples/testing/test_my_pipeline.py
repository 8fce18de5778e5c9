"""my_pipeline against the local stack: outcomes scripted by directives, faults injected."""

import my_pipeline
import pytest

import vertexbatch as vb
from vertexbatch.emulator import LocalStack


def test_every_key_gets_its_outcome(stack: LocalStack, client: vb.Client) -> None:
    """Directives script the outcomes; the retryable and missing keys are sent once more."""
    diffs = {
        "ok": "+ retries = 3",
        "refused": "+ exploit() [[vb:refuse]]",
        "limited": "+ limit = 1 [[vb:error 429]]",
        "dropped": "+ x = 2 [[vb:drop]]",
    }
    outcomes = my_pipeline.review(client, "review-1", diffs, floor=0.01)
    # The local model answers the same request the same way: still failing on the resubmit.
    assert outcomes == {
        "ok": "ok",
        "refused": "refused",
        "limited": "retryable",
        "dropped": "missing",
    }
    resubmitted = client.find("review-1.r1")
    assert resubmitted is not None and resubmitted.keys == 2
    # The same review again: count only its calls. Both jobs are adopted, none created.
    stack.reset_calls()
    assert my_pipeline.review(client, "review-1", diffs, floor=0.01) == outcomes
    assert stack.calls()["create"] == 0


def test_a_lost_create_response_makes_no_second_job(stack: LocalStack, client: vb.Client) -> None:
    """Vertex made the job but its answer was lost: the client adopts the job, pays once."""
    stack.faults.lose_response("create")
    assert my_pipeline.review(client, "review-2", {"a": "+ y = 3"}, floor=0.01) == {"a": "ok"}
    assert stack.calls()["create"] == 1


def test_a_job_still_pending_at_the_timeout(stack: LocalStack, client: vb.Client) -> None:
    """A held job stays PENDING: waiting gives up at the timeout, with the last status."""
    stack.faults.hold("review-3")  # released when the `stack` fixture resets the faults
    with pytest.raises(vb.WaitTimeout) as caught:
        my_pipeline.review(client, "review-3", {"a": "+ z = 4"}, floor=0.01, timeout=0.2)
    assert caught.value.status.state == "JOB_STATE_PENDING"


def test_code_that_reads_the_environment(
    stack: LocalStack, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Code that builds its own client finds the stack through the variables it reads."""
    for name, value in stack.environment(bucket).items():
        monkeypatch.setenv(name, value)
    assert my_pipeline.review_from_env("review-4", {"a": "+ w = 5"}, floor=0.01) == {"a": "ok"}
    # stack.client() has the same default prefix as Client.from_env: it sees the same jobs.
    assert stack.client(bucket=bucket).find("review-4") is not None
