"""The online fallback's claim (issue 10, #12) and deadlines without a timezone (#10)."""

from __future__ import annotations

import json
import time
import urllib.request
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from google.api_core import exceptions as api_exceptions

import vertexbatch as vb
from tests.helpers import CLAUDE, load, past, shard_object, task
from vertexbatch.emulator import LocalStack

CLAIM_FORMAT = "vertexbatch-online-claim/1"


def _late_run(client: vb.Client, stack: LocalStack, run_id: str, keys: int = 4) -> vb.Run:
    """A run whose only job stays PENDING, so that past the deadline every key goes online."""
    stack.faults.hold(display_name=f"{run_id}.s0", state="PENDING")
    return client.run_claude(run_id, CLAUDE, [task(i) for i in range(keys)])


def _write_claim(
    stack: LocalStack, bucket: str, run_id: str, owner: str, expires: datetime
) -> None:
    """Leave a claim as another advancer would have written it."""
    claim = {"format": CLAIM_FORMAT, "owner": owner, "expires": expires.isoformat()}
    shard_object(stack, bucket, run_id, "online.claim.json").upload_from_string(
        json.dumps(claim), content_type="application/json"
    )


def _read_claim(stack: LocalStack, bucket: str, run_id: str) -> dict[str, str]:
    claim: dict[str, str] = json.loads(
        shard_object(stack, bucket, run_id, "online.claim.json").download_as_bytes()
    )
    return claim


# The claim: at most one caller answers a shard online.


def test_stack_refuses_an_overwrite_on_a_stale_generation(stack: LocalStack, bucket: str) -> None:
    """fake-gcs-server enforces a non-zero generation precondition on a simple upload (412).

    The takeover of a stale claim relies on it, as it does on real GCS: of two callers
    overwriting the same generation, the second is refused.
    """
    blob = stack.storage_client().bucket(bucket).blob("claim.json")
    blob.upload_from_string(b"{}", if_generation_match=0)
    first = blob.generation
    assert first
    stack.storage_client().bucket(bucket).blob("claim.json").upload_from_string(
        b'{"taken": 1}', if_generation_match=first
    )
    with pytest.raises(api_exceptions.PreconditionFailed):
        stack.storage_client().bucket(bucket).blob("claim.json").upload_from_string(
            b'{"taken": 2}', if_generation_match=first
        )
    with pytest.raises(api_exceptions.PreconditionFailed):
        stack.storage_client().bucket(bucket).blob("absent.json").upload_from_string(
            b"{}", if_generation_match=first
        )
    assert blob.download_as_bytes() == b'{"taken": 1}'


def test_delay_fault_slows_online_calls(stack: LocalStack) -> None:
    """faults.delay(op, s) makes every call of op wait s seconds before it is served."""
    url = (
        f"{stack.vertex_endpoint}/v1/projects/{stack.project}/locations/{stack.location}"
        f"/publishers/anthropic/models/{CLAUDE}:rawPredict"
    )
    body = {
        "anthropic_version": "vertex-2023-10-16",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "Hello"}],
    }
    stack.faults.delay("rawPredict", 0.4)
    started = time.monotonic()
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status == 200
    assert time.monotonic() - started >= 0.4
    assert stack.faults.delay_of("rawPredict") == 0.4
    assert stack.faults.delay_of("generateContent") == 0.0
    stack.faults.reset()
    assert stack.faults.delay_of("rawPredict") == 0.0
    with pytest.raises(ValueError, match="op must be one of"):
        stack.faults.delay("predict", 1.0)
    with pytest.raises(ValueError, match="seconds"):
        stack.faults.delay("rawPredict", -1.0)


def test_a_held_claim_means_nothing_is_called(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """While another advancer holds the shard's claim, a step calls nothing and reports pending."""
    run = _late_run(client, stack, "claimed")
    expires = datetime.now(UTC) + timedelta(hours=1)
    _write_claim(stack, bucket, "claimed", "other-host/1/abc", expires)
    stack.reset_calls()
    summary = run.advance(deadline=past(), fallback="online")
    assert not summary.done and summary.outcomes == {"pending": 4}
    assert stack.calls()["rawPredict"] == 0
    assert not shard_object(stack, bucket, "claimed", "online.jsonl").exists()
    assert run.status().outcomes == {"pending": 4}
    assert _read_claim(stack, bucket, "claimed")["owner"] == "other-host/1/abc"


def test_a_stale_claim_is_taken_over_and_answered(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A claim past its expiry (its holder crashed) is taken over; every key is answered once."""
    run = _late_run(client, stack, "crashed")
    _write_claim(stack, bucket, "crashed", "crashed-host/1/abc", datetime.now(UTC) - timedelta(1))
    stack.reset_calls()
    summary = run.advance(deadline=past(), fallback="online")
    assert summary.done and summary.outcomes == {"ok": 4}
    assert stack.calls()["rawPredict"] == 4
    claim = _read_claim(stack, bucket, "crashed")
    assert claim["owner"] != "crashed-host/1/abc"
    assert datetime.fromisoformat(claim["expires"]) > datetime.now(UTC)
    assert sorted(r.key for r in run.results()) == [f"key-{i}" for i in range(4)]
    assert run.advance(deadline=past(), fallback="online").done
    assert stack.calls()["rawPredict"] == 4


def test_an_answered_shard_keeps_its_claim_and_is_not_called_again(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Once the answers are written, even a stale claim leads to no further online call."""
    run = _late_run(client, stack, "answered")
    stack.reset_calls()
    assert run.advance(deadline=past(), fallback="online").done
    assert stack.calls()["rawPredict"] == 4
    assert _read_claim(stack, bucket, "answered")["format"] == CLAIM_FORMAT
    _write_claim(stack, bucket, "answered", "crashed-host/1/abc", datetime.now(UTC) - timedelta(1))
    shard_object(stack, bucket, "answered", "done.json").delete()  # as if the step died before it
    summary = run.advance(deadline=past(), fallback="online")
    assert summary.done and summary.outcomes == {"ok": 4}
    assert stack.calls()["rawPredict"] == 4


def test_a_holder_that_fails_releases_its_claim(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A step that fails while holding the claim expires it, so the next step answers at once."""
    run = _late_run(client, stack, "failing")
    staged = shard_object(stack, bucket, "failing", "input.jsonl")
    original = staged.download_as_bytes()
    staged.upload_from_string(original.replace(b"Task", b"Tusk"))  # no longer its manifest's MD5
    stack.reset_calls()
    with pytest.raises(vb.VertexBatchError):
        run.advance(deadline=past(), fallback="online")
    assert stack.calls()["rawPredict"] == 0
    released = _read_claim(stack, bucket, "failing")
    assert datetime.fromisoformat(released["expires"]) <= datetime.now(UTC)
    staged.upload_from_string(original)
    summary = run.advance(deadline=past(), fallback="online")
    assert summary.done and summary.outcomes == {"ok": 4}
    assert stack.calls()["rawPredict"] == 4
    assert _read_claim(stack, bucket, "failing")["owner"] != released["owner"]


def _until(condition: Any, timeout: float = 20.0) -> None:
    """Poll a condition that another thread makes true (the lease's renewals)."""
    ends = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < ends, "condition not met in time"
        time.sleep(0.05)


def test_the_holder_renews_its_claim_and_stops_when_it_is_taken_over(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """The lease mechanism itself (with a 3 s claim): renewed while held, lost when overwritten."""
    from vertexbatch._runs.claim import take_claim

    staging = client._cloud.staging
    folder = staging.folder("leased")
    lease = take_claim(staging, folder, 3.0)
    assert lease is not None
    assert take_claim(staging, folder, 3.0) is None  # held and unexpired: another caller backs off
    gcs = stack.storage_client().bucket(bucket)

    def read() -> Any:
        return json.loads(gcs.blob(folder.name("online.claim.json")).download_as_bytes())

    first = read()
    with lease:
        _until(lambda: read()["expires"] != first["expires"])
        assert lease.held()
        taken = {**first, "owner": "taker/1/0"}
        gcs.blob(folder.name("online.claim.json")).upload_from_string(json.dumps(taken))
        _until(lambda: not lease.held())
    assert read() == taken


@pytest.mark.parametrize(
    "content",
    [
        b'{"owner": 1}',
        b'{"format": "vertexbatch-online-claim/1", "owner": "x", "expires": "soon"}',
        b'{"format": "vertexbatch-online-claim/1", "owner": "x", "expires": "2026-01-01T00:00"}',
        b"[]",
    ],
)
def test_a_damaged_claim_is_an_invalid_request(
    client: vb.Client, stack: LocalStack, bucket: str, content: bytes
) -> None:
    """An edited claim is InvalidRequestError naming the object; nothing is called online."""
    run = _late_run(client, stack, "damaged")
    shard_object(stack, bucket, "damaged", "online.claim.json").upload_from_string(content)
    stack.reset_calls()
    with pytest.raises(vb.InvalidRequestError, match=r"damaged.s0/online.claim.json") as info:
        run.advance(deadline=past(), fallback="online")
    assert info.value.field == "staging"
    assert stack.calls()["rawPredict"] == 0


# Deadlines must carry a timezone.

_NOT_AWARE = [
    datetime(2099, 1, 1),
    datetime(2000, 1, 1),
    "2000-01-01T00:00:00Z",
    date(2000, 1, 1),
    0,
]
_NOT_AWARE_IDS = ["naive-future", "naive-past", "iso-string", "date", "number"]


@pytest.mark.parametrize("deadline", _NOT_AWARE, ids=_NOT_AWARE_IDS)
@pytest.mark.parametrize("fallback", [None, "online"])
def test_run_advance_refuses_a_deadline_without_timezone(
    client: vb.Client, stack: LocalStack, deadline: Any, fallback: Any
) -> None:
    """A naive or non-datetime deadline is InvalidRequestError('deadline'), before any call."""
    run = _late_run(client, stack, "naive")
    stack.reset_calls()
    with pytest.raises(vb.InvalidRequestError, match="timezone") as info:
        run.advance(deadline=deadline, fallback=fallback)
    assert info.value.field == "deadline"
    assert "datetime.now(UTC) + timedelta(hours=2)" in str(info.value)
    assert not stack.calls()


def test_run_advance_refuses_an_unknown_fallback(client: vb.Client, stack: LocalStack) -> None:
    """A fallback other than "online" is refused rather than silently ignored."""
    run = _late_run(client, stack, "fallback")
    with pytest.raises(vb.InvalidRequestError, match="fallback") as info:
        run.advance(deadline=past(), fallback="Online")  # type: ignore[arg-type]
    assert info.value.field == "fallback"
    assert stack.calls()["rawPredict"] == 0


@pytest.mark.parametrize("deadline", _NOT_AWARE, ids=_NOT_AWARE_IDS)
def test_wait_refuses_a_deadline_without_timezone(
    client: vb.Client, stack: LocalStack, deadline: Any
) -> None:
    """Client.wait with a naive or non-datetime deadline is InvalidRequestError, before polling."""
    stack.faults.hold(display_name="waited", state="PENDING")
    job = client.submit_claude("waited", CLAUDE, [task(0)])
    stack.reset_calls()
    with pytest.raises(vb.InvalidRequestError, match="timezone") as info:
        client.wait(job, deadline=deadline, timeout=5, floor=0.01, ceiling=0.01)
    assert info.value.field == "deadline"
    assert stack.calls()["get"] == 0


def test_wait_takes_an_aware_deadline_in_any_timezone(client: vb.Client, stack: LocalStack) -> None:
    """An aware deadline in another timezone than UTC bounds wait as the same moment."""
    from datetime import timezone

    stack.faults.hold(display_name="waited-tz", state="PENDING")
    job = client.submit_claude("waited-tz", CLAUDE, [task(0)])
    east = timezone(timedelta(hours=5))
    with pytest.raises(vb.WaitTimeout):
        client.wait(job, deadline=datetime.now(east), floor=0.01, ceiling=0.01)


def test_run_advancer_takes_no_deadline_from_the_request(
    stack: LocalStack, stack_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """examples/run_advancer.py: a caller cannot set the deadline, which would make every
    unfinished key be paid online; the run's deadline is RUN_DEADLINE_HOURS, set where the
    function is deployed, after the run was created."""
    import functions_framework

    module = load("run_advancer")
    monkeypatch.delenv("RUN_DEADLINE_HOURS", raising=False)
    stack.faults.hold(display_name="advanced.s0", state="PENDING")
    vb.Client.from_env().run_claude("advanced", CLAUDE, [task(0)])
    http = functions_framework.create_app("advance", str(module.__file__)).test_client()
    stack.reset_calls()
    for deadline in ("2000-01-01T00:00:00Z", None, "2026-01-01T00:00:00"):
        answer = http.post("/", json={"run": "advanced", "deadline": deadline})
        assert answer.status_code == 400, deadline
        error = answer.get_json()["error"]
        assert "a request cannot set the deadline: it is the run's" in error
        assert "RUN_DEADLINE_HOURS" in error
    answer = http.post("/", json={"run": "advanced", "fallback": "online"})
    assert answer.status_code == 400
    assert "unknown fields ['fallback']" in answer.get_json()["error"]
    assert http.post("/", json=["advanced"]).status_code == 400
    assert sum(stack.calls().values()) == 0  # refused before any step
    # Deployed without a deadline, or with one still ahead: a step; the job keeps its keys.
    for hours in (None, "6"):
        if hours is not None:
            monkeypatch.setenv("RUN_DEADLINE_HOURS", hours)
        answer = http.post("/", json={"run": "advanced"})
        assert answer.status_code == 200, answer.get_json()
        assert not answer.get_json()["done"] and answer.get_json()["live_jobs"] == 1
    assert stack.received("rawPredict") == []
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv("RUN_DEADLINE_HOURS", bad)
        answer = http.post("/", json={"run": "advanced"})
        assert answer.status_code == 500
        assert f"RUN_DEADLINE_HOURS={bad!r} is not a number of hours" in answer.get_json()["error"]
    # Deployed with 0 hours: the deadline is the run's creation, passed: the key goes online.
    monkeypatch.setenv("RUN_DEADLINE_HOURS", "0")
    answer = http.post("/", json={"run": "advanced"})
    assert answer.status_code == 200
    assert answer.get_json()["done"] and answer.get_json()["outcomes"] == {"ok": 1}
    assert len(stack.received("rawPredict")) == 1
