"""Scriptable faults: failed, lost and blocked calls, list lag, held and failing jobs."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from google.api_core import exceptions as gexc

from tests.helpers import jobs_in
from vertexbatch.emulator import Faults


def job_names(lab: Any, filter_text: str) -> list[str]:
    request = {"parent": lab.parent, "filter": filter_text}
    return [j.name for j in lab.jobs.list_batch_prediction_jobs(request=request)]


@pytest.mark.parametrize(
    ("status", "exception"),
    [
        (429, gexc.TooManyRequests),
        (500, gexc.InternalServerError),
        (503, gexc.ServiceUnavailable),
        (504, gexc.GatewayTimeout),
    ],
)
def test_fail_create_has_no_effect(lab: Any, status: int, exception: type[Exception]) -> None:
    """fail("create") answers the status in the envelope and creates nothing, `times` times."""
    lab.stack.faults.fail("create", status=status, times=2)
    before = len(lab.stack.jobs())
    for _ in range(2):
        with pytest.raises(exception):
            lab.create()
    assert len(lab.stack.jobs()) == before
    job = lab.create()
    assert len(lab.stack.jobs()) == before + 1
    assert lab.stack.calls()["create"] == 3
    lab.stack.wait_job(job.name)


def test_fail_each_other_op(lab: Any) -> None:
    """fail() applies to get, list, cancel and delete, and only to the op named."""
    lab.stack.faults.hold(state="PENDING")
    job = lab.create()
    faults = lab.stack.faults
    faults.fail("get", status=503)
    with pytest.raises(gexc.ServiceUnavailable):
        lab.jobs.get_batch_prediction_job(name=job.name)
    assert lab.jobs.get_batch_prediction_job(name=job.name).name == job.name
    faults.fail("list", status=500)
    with pytest.raises(gexc.InternalServerError):
        job_names(lab, "")
    faults.fail("cancel", status=429)
    with pytest.raises(gexc.TooManyRequests):
        lab.jobs.cancel_batch_prediction_job(name=job.name)
    assert lab.stack.jobs()[-1]["state"] == "JOB_STATE_PENDING"  # no effect
    lab.jobs.cancel_batch_prediction_job(name=job.name)
    lab.stack.wait_job(job.name)
    faults.fail("delete", status=503)
    with pytest.raises(gexc.ServiceUnavailable):
        lab.jobs.delete_batch_prediction_job(name=job.name)
    lab.jobs.get_batch_prediction_job(name=job.name)  # still there
    lab.jobs.delete_batch_prediction_job(name=job.name)
    calls = lab.stack.calls()
    assert calls["get"] == 3 and calls["list"] == 1
    assert calls["cancel"] == 2 and calls["delete"] == 2


def test_fault_envelope(lab: Any) -> None:
    """An injected fault is the Google envelope with the status name."""
    lab.stack.faults.fail("list", status=503)
    status, body = lab.raw("GET", f"/v1/{lab.parent}/batchPredictionJobs")
    assert status == 503
    assert body["error"]["code"] == 503 and body["error"]["status"] == "UNAVAILABLE"
    assert set(body["error"]) == {"code", "message", "status"}


def test_lose_response_on_create_still_creates_the_job(lab: Any) -> None:
    """lose_response("create"): the job exists, the caller gets the error."""
    lab.stack.faults.lose_response("create", status=503)
    with pytest.raises(gexc.ServiceUnavailable):
        lab.create(display_name="lost-create", labels={"submit": "lost"})
    found = job_names(lab, 'labels.submit="lost"')
    assert len(found) == 1
    assert lab.stack.wait_job(found[0])["displayName"] == "lost-create"


def test_lose_response_on_cancel_and_delete(lab: Any) -> None:
    """lose_response on cancel and delete: the effect happens, the caller sees the error."""
    lab.stack.faults.hold(state="PENDING")
    job = lab.create()
    lab.stack.faults.lose_response("cancel", times=1, status=500)
    with pytest.raises(gexc.InternalServerError):
        lab.jobs.cancel_batch_prediction_job(name=job.name)
    assert lab.stack.wait_job(job.name)["state"] == "JOB_STATE_CANCELLED"
    lab.stack.faults.lose_response("delete", times=1, status=504)
    with pytest.raises(gexc.GatewayTimeout):
        lab.jobs.delete_batch_prediction_job(name=job.name)
    with pytest.raises(gexc.NotFound):
        lab.jobs.get_batch_prediction_job(name=job.name)


def _named(lab: Any, display_name: str) -> list[str]:
    return [j["name"] for j in jobs_in(lab.stack, lab.bucket) if j["displayName"] == display_name]


def test_block_after_holds_the_answer_of_a_call_that_took_effect(lab: Any) -> None:
    """block(op, when="after"): the job exists while its caller still waits; unblock answers it."""
    faults = lab.stack.faults
    faults.block("create", when="after")
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(lab.create, display_name="blocked-after")
        faults.wait_blocked("create")
        assert len(_named(lab, "blocked-after")) == 1
        assert not pending.done()
        faults.unblock("create")
        job = pending.result(timeout=30)
    assert _named(lab, "blocked-after") == [job.name]
    free = lab.create(display_name="free")  # times=1: the next call is not held
    assert _named(lab, "free") == [free.name]
    assert lab.stack.calls()["create"] == 2


def test_block_before_holds_a_call_before_it_takes_effect(lab: Any) -> None:
    """block(op) holds the call before it takes effect: no job until unblock lets it go on."""
    faults = lab.stack.faults
    faults.block("create")
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(lab.create, display_name="blocked-before")
        faults.wait_blocked("create")
        assert _named(lab, "blocked-before") == []
        assert not pending.done()
        faults.unblock()
        job = pending.result(timeout=30)
    assert _named(lab, "blocked-before") == [job.name]


def test_unblock_with_drop_ends_held_calls_without_effect(lab: Any) -> None:
    """unblock(drop=True) answers every held call 503; calls held before never take effect."""
    faults = lab.stack.faults
    faults.block("create", times=2)
    with ThreadPoolExecutor(max_workers=2) as pool:
        held = [pool.submit(lab.create, display_name="dropped") for _ in range(2)]
        faults.wait_blocked("create", count=2)
        faults.unblock("create", drop=True)
        for call in held:
            with pytest.raises(gexc.ServiceUnavailable, match="dropped while held"):
                call.result(timeout=30)
    assert _named(lab, "dropped") == []


def test_reset_lets_held_calls_go_on(lab: Any) -> None:
    """reset() ends every block: a held call is served, and the op is not blocked any more."""
    faults = lab.stack.faults
    job = lab.create()
    faults.block("get", when="after")
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(lab.jobs.get_batch_prediction_job, name=job.name)
        faults.wait_blocked("get")
        faults.reset()
        assert pending.result(timeout=30).name == job.name
    assert lab.jobs.get_batch_prediction_job(name=job.name).name == job.name


def test_wait_blocked_times_out_when_nothing_is_held(lab: Any) -> None:
    """wait_blocked raises TimeoutError when fewer calls than asked for are held."""
    lab.stack.faults.block("list")
    with pytest.raises(TimeoutError, match="1 list call"):
        lab.stack.faults.wait_blocked("list", timeout=0.05)


def test_list_lag(lab: Any) -> None:
    """list_lag(2): a new job is missing from the next two lists, then appears; get finds it."""
    lab.stack.faults.list_lag(lists=2)
    job = lab.create(labels={"lag": "yes"})
    assert job_names(lab, "labels.lag=yes") == []
    assert lab.jobs.get_batch_prediction_job(name=job.name).name == job.name
    assert job_names(lab, "labels.lag=yes") == []
    assert job_names(lab, "labels.lag=yes") == [job.name]
    lab.stack.faults.list_lag(lists=0)
    fresh = lab.create(labels={"lag": "no"})
    assert job_names(lab, "labels.lag=no") == [fresh.name]


def test_hold_pending_by_display_name_and_release(lab: Any) -> None:
    """hold(display_name) keeps only matching jobs PENDING until release(display_name)."""
    lab.stack.faults.hold(display_name="held")
    held = lab.create(display_name="held")
    free = lab.create(display_name="free")
    assert lab.stack.wait_job(free.name)["state"] == "JOB_STATE_SUCCEEDED"
    assert lab.jobs.get_batch_prediction_job(name=held.name).state.name == "JOB_STATE_PENDING"
    lab.stack.faults.release("held")
    assert lab.stack.wait_job(held.name)["state"] == "JOB_STATE_SUCCEEDED"
    after = lab.create(display_name="held")  # the rule is gone too
    assert lab.stack.wait_job(after.name)["state"] == "JOB_STATE_SUCCEEDED"


def test_hold_running_after_rows_then_release(lab: Any) -> None:
    """hold(state="RUNNING", after_rows=N): N rows done, in a shard and the counts; then on."""
    lab.stack.faults.hold(state="RUNNING", after_rows=3)
    job = lab.create([lab.gemini_line(f"q{i}", f"k{i}") for i in range(8)])
    running = lab.stack.wait_job(
        job.name, until=lambda j: j.get("completionStats", {}).get("successfulCount") == "3"
    )
    assert running["state"] == "JOB_STATE_RUNNING"
    assert lab.output_names(running) == ["incremental_predictions/predictions_1.jsonl"]
    shard = lab.read_rows(running, "incremental_predictions/predictions_1.jsonl")
    assert len(shard) == 3
    fetched = lab.jobs.get_batch_prediction_job(name=job.name)
    assert fetched.completion_stats.successful_count == 3
    lab.stack.faults.release()
    done = lab.stack.wait_job(job.name)
    assert done["state"] == "JOB_STATE_SUCCEEDED"
    assert done["completionStats"] == {"successfulCount": "8"}
    assert len(lab.read_rows(done)) == 8


def test_hold_running_then_cancel_keeps_rows(lab: Any) -> None:
    """A job held RUNNING and cancelled keeps its finished rows in predictions.jsonl."""
    lab.stack.faults.hold(state="RUNNING", after_rows=2)
    job = lab.create([lab.gemini_line(f"q{i}", f"k{i}") for i in range(5)])
    lab.stack.wait_job(
        job.name, until=lambda j: j.get("completionStats", {}).get("successfulCount") == "2"
    )
    lab.jobs.cancel_batch_prediction_job(name=job.name)
    done = lab.stack.wait_job(job.name)
    assert done["state"] == "JOB_STATE_CANCELLED"
    assert done["completionStats"] == {"successfulCount": "2", "incompleteCount": "3"}
    assert len(lab.read_rows(done)) == 2


def test_fail_job(lab: Any) -> None:
    """fail_job(display_name) ends matching jobs FAILED with the given error and no output."""
    lab.stack.faults.fail_job(display_name="doomed", code=13, message="Internal error")
    doomed = lab.create(display_name="doomed")
    fine = lab.create(display_name="fine")
    done = lab.stack.wait_job(doomed.name)
    assert done["state"] == "JOB_STATE_FAILED"
    assert done["error"] == {"code": 13, "message": "Internal error"}
    assert "predictions.jsonl" not in lab.output_names(done)
    assert lab.stack.wait_job(fine.name)["state"] == "JOB_STATE_SUCCEEDED"
    lab.stack.faults.fail_job(code=7, message="Permission denied on the bucket")
    other = lab.create()
    assert lab.stack.wait_job(other.name)["error"]["code"] == 7


def test_hold_queued_then_pending_then_run(lab: Any) -> None:
    """hold(state="QUEUED"): the create response and get say QUEUED; released, the job goes
    PENDING, runs and succeeds. A QUEUED job can be cancelled."""
    lab.stack.faults.hold(display_name="queued", state="QUEUED")
    job = lab.create(display_name="queued")
    assert job.state.name == "JOB_STATE_QUEUED"
    assert lab.jobs.get_batch_prediction_job(name=job.name).state.name == "JOB_STATE_QUEUED"
    cancelled = lab.create(display_name="queued")
    lab.jobs.cancel_batch_prediction_job(name=cancelled.name)
    assert lab.stack.wait_job(cancelled.name)["state"] == "JOB_STATE_CANCELLED"
    lab.stack.faults.release("queued")
    assert lab.stack.wait_job(job.name)["state"] == "JOB_STATE_SUCCEEDED"


def test_hold_paused_after_rows_then_resume_or_cancel(lab: Any) -> None:
    """hold(state="PAUSED", after_rows=N): N rows run and are written as an incremental shard,
    the job shows PAUSED (counts kept), then RUNNING again once released; or it is cancelled."""
    lines = [lab.gemini_line(f"q{i}", f"k{i}") for i in range(4)]
    lab.stack.faults.hold(display_name="paused", state="PAUSED", after_rows=2)
    job = lab.create(lines, display_name="paused")
    paused = lab.stack.wait_job(job.name, until=lambda j: j["state"] == "JOB_STATE_PAUSED")
    assert paused["completionStats"] == {"successfulCount": "2"}
    assert lab.output_names(paused) == ["incremental_predictions/predictions_1.jsonl"]
    other = lab.create(lines, display_name="paused")
    lab.stack.wait_job(other.name, until=lambda j: j["state"] == "JOB_STATE_PAUSED")
    lab.jobs.cancel_batch_prediction_job(name=other.name)
    assert lab.stack.wait_job(other.name)["state"] == "JOB_STATE_CANCELLED"
    lab.stack.faults.release("paused")
    done = lab.stack.wait_job(job.name)
    assert done["state"] == "JOB_STATE_SUCCEEDED" and len(lab.read_rows(done)) == 4


@pytest.mark.parametrize("ends", ["SUCCEEDED", "FAILED"])
def test_late_cancel(lab: Any, ends: str) -> None:
    """late_cancel: the cancel answers {}, the job shows CANCELLING while held, then ends as
    told: SUCCEEDED with every row, or FAILED with the error and the rows done."""
    lab.stack.faults.late_cancel("late", ends=ends, code=13, message="System error.")
    lab.stack.faults.hold(display_name="late", state="RUNNING", after_rows=1)
    job = lab.create([lab.gemini_line(f"q{i}", f"k{i}") for i in range(3)], display_name="late")
    lab.stack.wait_job(job.name, until=lambda j: j.get("completionStats"))
    lab.jobs.cancel_batch_prediction_job(name=job.name)
    assert lab.jobs.get_batch_prediction_job(name=job.name).state.name == "JOB_STATE_CANCELLING"
    lab.stack.faults.release("late")
    done = lab.stack.wait_job(job.name)
    assert done["state"] == f"JOB_STATE_{ends}"
    if ends == "SUCCEEDED":
        assert "error" not in done and len(lab.read_rows(done)) == 3
    else:
        assert done["error"] == {"code": 13, "message": "System error."}
        assert done["completionStats"] == {"successfulCount": "1", "incompleteCount": "2"}
        assert len(lab.read_rows(done)) == 1


def test_fail_job_after_rows_writes_nothing(lab: Any) -> None:
    """fail_job(after_rows=N): N rows run and are counted, then FAILED with no output at all."""
    lab.stack.faults.fail_job("no-write", code=7, message="Cannot write.", after_rows=2)
    job = lab.create([lab.gemini_line(f"q{i}", f"k{i}") for i in range(3)], display_name="no-write")
    done = lab.stack.wait_job(job.name)
    assert (done["state"], done["error"]["code"]) == ("JOB_STATE_FAILED", 7)
    assert done["completionStats"] == {"successfulCount": "2"}
    assert lab.output_names(done) == []


def test_partially_succeeded_option(lab: Any) -> None:
    """JobOptions(partially_succeeded=True): a job with a failed row ends PARTIALLY_SUCCEEDED,
    which google-genai does not count as done (it is terminal all the same)."""
    from tests.emulator.test_genai import genai_client
    from vertexbatch.emulator import JobOptions

    lab.stack.set_job_options(JobOptions(partially_succeeded=True), display_name="partly")
    job = lab.create(
        [lab.gemini_line("ok", "k0"), lab.gemini_line("[[vb:error 400]]", "k1")],
        display_name="partly",
    )
    done = lab.stack.wait_job(job.name)
    assert done["state"] == "JOB_STATE_PARTIALLY_SUCCEEDED"
    client = genai_client(lab.stack)  # kept: the batches API closes with its client
    got = client.batches.get(name=job.name)
    assert got.state is not None and got.state.name == "JOB_STATE_PARTIALLY_SUCCEEDED"
    assert not got.done


def test_reset_clears_every_fault_and_releases(lab: Any) -> None:
    """reset() drops pending call faults, lag and job rules, and releases held jobs."""
    faults = lab.stack.faults
    faults.hold()
    held = lab.create()
    faults.fail("get", times=5)
    faults.lose_response("create")
    faults.list_lag(3)
    faults.fail_job()
    faults.reset()
    assert lab.stack.wait_job(held.name)["state"] == "JOB_STATE_SUCCEEDED"
    job = lab.create(labels={"after": "reset"})
    assert lab.jobs.get_batch_prediction_job(name=job.name).name == job.name
    assert job_names(lab, "labels.after=reset") == [job.name]
    assert lab.stack.wait_job(job.name)["state"] == "JOB_STATE_SUCCEEDED"


def test_fault_arguments_are_checked() -> None:
    """Unknown ops and impossible holds are refused."""
    faults = Faults()
    with pytest.raises(ValueError):
        faults.fail("submit")
    with pytest.raises(ValueError):
        faults.lose_response("nothing")
    with pytest.raises(ValueError):
        faults.hold(state="SUCCEEDED")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        faults.hold(state="PENDING", after_rows=2)
    with pytest.raises(ValueError):
        faults.hold(state="QUEUED", after_rows=1)
    with pytest.raises(ValueError):
        faults.late_cancel(ends="CANCELLED")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        faults.fail_job(after_rows=-1)
    with pytest.raises(ValueError):
        faults.list_lag(-1)
    with pytest.raises(ValueError):
        faults.block("submit")
    with pytest.raises(ValueError):
        faults.block("create", when="during")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        faults.block("create", times=0)
    with pytest.raises(ValueError):
        faults.unblock("nothing")
