"""Records and ids an adversary tampers with: derived ids, key maps, manifests, ledgers.

Each test names the defect class of issue 10 it keeps alive. All go through the public API (or
the command) against the local stack, with GCS objects edited by the real storage client.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Mapping

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import (
    CLAUDE,
    GEMINI,
    claude_requests,
    gemini_requests,
    jobs_named,
    object_names,
    task,
)
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode
from vertexbatch.emulator import LocalStack


def _blob(stack: LocalStack, bucket: str, name: str):  # type: ignore[no-untyped-def]
    return stack.storage_client().bucket(bucket).blob(name)


def _rewrite(stack: LocalStack, bucket: str, name: str, data: bytes) -> None:
    _blob(stack, bucket, name).upload_from_string(data)


def _read(stack: LocalStack, bucket: str, name: str) -> bytes:
    data: bytes = _blob(stack, bucket, name).download_as_bytes()
    return data


def _staged(stack: LocalStack, bucket: str, prefix: str) -> dict[str, str]:
    """What vertexbatch staged under a prefix (Vertex's output left out), by name and MD5."""
    return {
        b.name: b.md5_hash
        for b in stack.storage_client().list_blobs(bucket, prefix=prefix)
        if "/output/" not in b.name
    }


def _cli(env: Mapping[str, str], *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), env=dict(env), catch_exceptions=False)
    return result.exit_code, result.stderr


# -- 1. derived ids are never adopted from a submission the run or resubmit did not stage ------


def test_run_refuses_a_shard_id_a_plain_submission_holds(
    client: vb.Client, stack: LocalStack
) -> None:
    """A submission under RUN.s0 the run did not stage (callers cannot choose that id any more,
    resubmit's id= can), even of the very same rows, is not taken as shard 0."""
    rows = [task(i) for i in range(3)]
    seed = client.submit_claude("seed", CLAUDE, rows)
    foreign = client.resubmit(seed, keys=[r.key for r in rows], id="nightly.s0")
    with pytest.raises(vb.InvalidRequestError, match="resubmission of 'seed', not run 'nightly'"):
        client.run_claude("nightly", CLAUDE, rows)
    assert [j["name"] for j in jobs_named(stack, client.bucket, "nightly.s0")] == [foreign.name]


def test_run_never_adopts_a_foreign_attempt(client: vb.Client, stack: LocalStack) -> None:
    """A plain submission under RUN.s0.r1 stops the run with an error; it is never its attempt."""
    run = client.run_claude("owned", CLAUDE, [task(0), task(1, "[[vb:error 503]]")])
    first = client.find("owned.s0")
    assert first is not None
    stack.wait_job(first.name)
    # Someone stages their own rows under the id the run derives for its next attempt.
    seed = client.submit_claude("seed", CLAUDE, [task(9)])
    foreign = client.resubmit(seed, keys=["key-9"], id="owned.s0.r1")
    stack.wait_job(foreign.name)
    with pytest.raises(vb.InvalidRequestError, match="did not stage"):
        run.advance()
    with pytest.raises(vb.InvalidRequestError, match="did not stage"):
        run.status()
    with pytest.raises(vb.InvalidRequestError, match="did not stage"):
        list(run.results())
    assert [j["name"] for j in jobs_named(stack, client.bucket, "owned.s0.r1")] == [foreign.name]


def test_resubmit_refuses_a_derived_id_a_plain_submission_holds(
    client: vb.Client, stack: LocalStack
) -> None:
    """resubmit never adopts ID.r1 when another origin holds it, even with the same rows."""
    rows = [task(0, "[[vb:error 503]]")]
    job = client.submit_claude("base", CLAUDE, rows)
    stack.wait_job(job.name)
    seed = client.submit_claude("seed", CLAUDE, rows)
    client.resubmit(seed, keys=["key-0"], id="base.r1")  # callers' submit_* cannot take it
    with pytest.raises(vb.InvalidRequestError, match="of 'seed', not a resubmission of 'base'"):
        client.resubmit(job)
    # And a resubmission's id is not a plain id either.
    other = client.submit_claude("other", CLAUDE, rows)
    stack.wait_job(other.name)
    again = client.resubmit(other)
    assert again.id == "other.r1" and client.resubmit(other) == again
    with pytest.raises(vb.InvalidRequestError, match=r"'other\.r1'.*client\.resubmit"):
        client.submit_claude("other.r1", CLAUDE, rows)


# -- 4. the key map is verified against the manifest ------------------------------------------


@pytest.fixture
def finished(client: vb.Client, stack: LocalStack) -> vb.Job:
    job = client.submit_claude("km", CLAUDE, claude_requests(4))
    stack.wait_job(job.name)
    return job


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda lines: lines[:-1], id="truncated-by-a-record"),
        pytest.param(lambda lines: [lines[0], lines[0], *lines[2:]], id="record-duplicated"),
        pytest.param(lambda lines: [*lines[:2], lines[3], lines[2]], id="records-swapped"),
        pytest.param(lambda lines: [lines[0][:10], *lines[1:]], id="record-cut-midway"),
        pytest.param(lambda lines: [b"garbage", *lines[1:]], id="garbage"),
        pytest.param(lambda lines: [b"[1, 2, 3]", *lines[1:]], id="not-a-record"),
        pytest.param(lambda lines: [*lines, b""], id="blank-line-added"),
        pytest.param(lambda lines: [], id="emptied"),
    ],
)
def test_damaged_key_map_is_a_job_error(
    client: vb.Client, stack: LocalStack, bucket: str, finished: vb.Job, damage
) -> None:  # type: ignore[no-untyped-def]
    """A key map that no longer matches its manifest is a JobError naming it; no key is lost."""
    name = "jobs/km/keys.jsonl"
    lines = _read(stack, bucket, name).splitlines()
    _rewrite(stack, bucket, name, b"".join(line + b"\n" for line in damage(lines)))
    with pytest.raises(vb.JobError, match=r"gs://.*/jobs/km/keys\.jsonl is damaged") as info:
        list(client.results(finished))
    assert info.value.job == finished.name
    with pytest.raises(vb.JobError, match=r"keys\.jsonl is damaged"):
        client.resubmit(finished, keys=["key-1"])


def test_key_map_or_input_gone_is_a_job_error(
    client: vb.Client, stack: LocalStack, bucket: str, finished: vb.Job
) -> None:
    """results and resubmit name the staged object that is gone, as JobError."""
    _blob(stack, bucket, "jobs/km/input.jsonl").delete()
    with pytest.raises(vb.JobError, match=r"jobs/km/input\.jsonl is gone"):
        client.resubmit(finished, keys=["key-1"])
    assert client.find("km.r1") is None
    _blob(stack, bucket, "jobs/km/keys.jsonl").delete()
    with pytest.raises(vb.JobError, match=r"jobs/km/keys\.jsonl is gone"):
        list(client.results(finished))


def test_damaged_input_stops_a_resubmit_before_anything_is_claimed(
    client: vb.Client, stack: LocalStack, bucket: str, finished: vb.Job
) -> None:
    """Input edited after staging: resubmit raises JobError and leaves the new id unclaimed."""
    name = "jobs/km/input.jsonl"
    _rewrite(stack, bucket, name, _read(stack, bucket, name).replace(b"item 3", b"item 9"))
    with pytest.raises(vb.JobError, match=r"input\.jsonl is damaged"):
        client.resubmit(finished, keys=["key-0"])
    assert object_names(stack, bucket, "jobs/km.r1/") == []


# -- 5. a model Vertex refuses does not claim the id for good ---------------------------------


def test_gemini_submission_must_name_a_gemini_model(client: vb.Client, stack: LocalStack) -> None:
    """A model of another family is refused before any cloud call."""
    for model in ("text-bison@002", "gpt-4o", "imagen-3.0"):
        with pytest.raises(vb.InvalidRequestError, match="not a Gemini model") as info:
            client.submit_gemini("family", model, gemini_requests(1))
        assert info.value.field == "model"
    assert stack.calls() == {}


@pytest.mark.parametrize("provider", ["anthropic", "google"])
def test_model_vertex_refuses_leaves_the_id_usable(
    client: vb.Client, stack: LocalStack, bucket: str, provider: str
) -> None:
    """Vertex refuses the create (404, 400): InvalidRequestError, no job, the id stays usable."""
    if provider == "anthropic":
        rows, submit = claude_requests(2), client.submit_claude
        wrong, right = "claude-nonexistent-9@default", CLAUDE
    else:
        rows, submit = gemini_requests(2), client.submit_gemini  # type: ignore[assignment]
        wrong, right = "gemini-0.0-nonexistent", GEMINI
        stack.faults.fail("create", status=400, times=2)  # Vertex may answer 400 too
    submission_id = f"model-fix-{provider}"
    # The local model catalogue does not hold the wrong model: 404, as Vertex answers.
    with pytest.raises(vb.InvalidRequestError, match="Vertex refused") as info:
        submit(submission_id, wrong, rows)  # type: ignore[arg-type]
    assert info.value.field == "model" and wrong in str(info.value)
    assert jobs_named(stack, client.bucket, submission_id) == []
    # The same rows with the wrong model again: refused again, nothing else happens.
    with pytest.raises(vb.InvalidRequestError, match="Vertex refused"):
        submit(submission_id, wrong, rows)  # type: ignore[arg-type]
    # Other rows are still refused: only the model may change.
    other = claude_requests(3) if provider == "anthropic" else gemini_requests(3)
    with pytest.raises(vb.InvalidRequestError, match="already claimed"):
        submit(submission_id, right, other)  # type: ignore[arg-type]
    job = submit(submission_id, right, rows)  # type: ignore[arg-type]
    assert job.model == right
    assert submit(submission_id, right, rows) == job  # type: ignore[arg-type]
    assert client.find(submission_id) == job
    stack.wait_job(job.name)
    assert Counter(r.outcome for r in client.results(job)) == {"ok": 2}
    # Once a job exists the id is settled: the old model is another claim again.
    with pytest.raises(vb.InvalidRequestError, match="already claimed"):
        submit(submission_id, wrong, rows)  # type: ignore[arg-type]


# -- 9. tampered records and bad values: one clear error, the documented exit code ------------


def test_record_not_naming_a_job(
    client: vb.Client, stack: LocalStack, bucket: str, stack_env: str
) -> None:
    """job.json naming something that is not a job resource name: InvalidRequestError, exit 3."""
    client.submit_claude("rec", CLAUDE, claude_requests(1))
    for record in (b'{"name": "../../etc/passwd"}', b'{"name": 7}', b"[]", b"null", b"{]"):
        _rewrite(stack, bucket, "jobs/rec/job.json", record)
        with pytest.raises(vb.InvalidRequestError, match=r"jobs/rec/job\.json") as info:
            client.submit_claude("rec", CLAUDE, claude_requests(1))
        assert info.value.field == "staging"
        with pytest.raises(vb.InvalidRequestError, match=r"jobs/rec/job\.json"):
            client.find("rec")
        code, err = _cli({}, "find", "rec")
        assert code == ExitCode.INVALID_REQUEST, err


def test_job_values_that_name_no_job(client: vb.Client, stack: LocalStack) -> None:
    """A Job with a bad name or not a Job at all: InvalidRequestError before any cloud call."""
    good = client.submit_claude("values", CLAUDE, claude_requests(1))
    bad = vb.Job(**{**good.to_dict(), "name": "projects/p/../../secret"})
    stack.reset_calls()
    for call in (client.status, client.cancel, client.resubmit, lambda j: list(client.results(j))):
        with pytest.raises(vb.InvalidRequestError, match="not a Vertex batch job") as info:
            call(bad)
        assert info.value.field == "job"
        with pytest.raises(vb.InvalidRequestError, match="expected a vertexbatch Job"):
            call(good.to_dict())
    assert stack.calls() == {}


def test_cancel_of_a_job_that_does_not_exist(client: vb.Client, stack: LocalStack) -> None:
    """Cancelling a job Vertex does not know is JobError, like status."""
    job = client.submit_claude("ghost", CLAUDE, claude_requests(1))
    ghost = vb.Job(**{**job.to_dict(), "name": job.name.rsplit("/", 1)[0] + "/999"})
    with pytest.raises(vb.JobError, match="does not exist") as info:
        client.cancel(ghost)
    assert info.value.job == ghost.name


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param({"provider": "openai"}, id="unknown-provider"),
        pytest.param({"rows": "3"}, id="rows-as-text"),
        pytest.param({"rows": 0}, id="no-rows"),
        pytest.param({"md5": "x"}, id="bad-md5"),
        pytest.param({"model": None}, id="no-model"),
    ],
)
def test_edited_manifest(
    client: vb.Client,
    stack: LocalStack,
    bucket: str,
    stack_env: str,
    edit: dict,  # type: ignore[type-arg]
) -> None:
    """A manifest edited by hand: InvalidRequestError naming it from find, submit, results, CLI."""
    job = client.submit_claude("man", CLAUDE, claude_requests(1))
    stack.wait_job(job.name)
    manifest = json.loads(_read(stack, bucket, "jobs/man/manifest.json"))
    _rewrite(stack, bucket, "jobs/man/manifest.json", json.dumps({**manifest, **edit}).encode())
    for call in (
        lambda: client.find("man"),
        lambda: client.submit_claude("man", CLAUDE, claude_requests(1)),
        lambda: list(client.results(job)),
    ):
        with pytest.raises(vb.InvalidRequestError, match=r"manifest\.json is not a vertexbatch"):
            call()
    for command in (("find", "man"), ("status", "man"), ("results", "man")):
        code, err = _cli({}, *command)
        assert code == ExitCode.INVALID_REQUEST, err
        assert "manifest.json" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda d: {**d, "provider": "openai"}, id="provider"),
        pytest.param(lambda d: {**d, "max_attempts": "3"}, id="attempts-as-text"),
        pytest.param(lambda d: {**d, "max_attempts": 0}, id="no-attempts"),
        pytest.param(lambda d: {**d, "shards": []}, id="no-shards"),
        pytest.param(lambda d: {**d, "shards": [{"id": "elsewhere", "keys": 2}]}, id="foreign"),
        pytest.param(lambda d: {**d, "shards": [{"id": "led.s0", "keys": -1}]}, id="keys"),
        pytest.param(lambda d: {**d, "id": "other"}, id="other-run"),
        pytest.param(lambda d: [d], id="a-list"),
    ],
)
def test_edited_run_ledger(
    client: vb.Client, stack: LocalStack, bucket: str, stack_env: str, edit
) -> None:  # type: ignore[no-untyped-def]
    """An edited run ledger: InvalidRequestError from open_run and run_*, exit 3 from the CLI."""
    rows = [task(i) for i in range(2)]
    client.run_claude("led", CLAUDE, rows)
    ledger = json.loads(_read(stack, bucket, "jobs/led/run.json"))
    _rewrite(stack, bucket, "jobs/led/run.json", json.dumps(edit(ledger)).encode())
    with pytest.raises(vb.InvalidRequestError, match=r"run\.json is not a vertexbatch run ledger"):
        client.open_run("led")
    with pytest.raises(vb.InvalidRequestError, match=r"run\.json is not a vertexbatch run ledger"):
        client.run_claude("led", CLAUDE, rows)
    for command in (("run", "status", "led"), ("run", "advance", "led"), ("run", "results", "led")):
        code, err = _cli({}, *command)
        assert code == ExitCode.INVALID_REQUEST, err


def test_bad_run_arguments() -> None:
    """shard_size and max_attempts that are not whole numbers in range are refused by name."""
    client = vb.Client("p", "us-central1", "b", storage=_NoStorage(), jobs=_NoJobs())  # type: ignore[arg-type]
    for kwargs, field in (
        ({"shard_size": 0}, "shard_size"),
        ({"shard_size": 2.5}, "shard_size"),
        ({"max_attempts": 100}, "max_attempts"),
        ({"max_attempts": True}, "max_attempts"),
    ):
        with pytest.raises(vb.InvalidRequestError) as info:
            client.run_claude("args", CLAUDE, [task(0)], **kwargs)  # type: ignore[arg-type]
        assert info.value.field == field


class _NoJobs:
    """Stands in for the Vertex client where no call may be made."""

    api_endpoint = "unused"


class _NoStorage:
    """Stands in for the storage client where no call may be made."""

    def bucket(self, name: str) -> object:
        return _NoBucket(name)


class _NoBucket:
    def __init__(self, name: str) -> None:
        self.name = name


# -- 7. a refused run rejoin stages nothing ---------------------------------------------------


@pytest.mark.parametrize(
    "rows",
    [
        pytest.param([task(i) for i in range(5)], id="more-rows-new-shard"),
        pytest.param([task(i) for i in range(2)] + [task(2, "other")], id="last-shard-differs"),
        pytest.param([task(i) for i in range(2)], id="fewer-rows"),
    ],
)
def test_refused_rejoin_stages_nothing(
    client: vb.Client, stack: LocalStack, bucket: str, rows: list[vb.ClaudeRequest]
) -> None:
    """Re-opening a run id with other rows changes no object in the bucket."""
    client.run_claude("rejoin", CLAUDE, [task(i) for i in range(3)], shard_size=2)
    before = _staged(stack, bucket, "jobs/rejoin")
    with pytest.raises(vb.InvalidRequestError, match="already holds another run"):
        client.run_claude("rejoin", CLAUDE, rows, shard_size=2)
    after = _staged(stack, bucket, "jobs/rejoin")
    assert after == before


# -- 13. twins under lost responses ------------------------------------------------------------


def test_lost_create_answered_429_with_list_lag_is_warned_and_swept(
    client: vb.Client, stack: LocalStack, caplog: pytest.LogCaptureFixture
) -> None:
    """A create that made a job but answered 429, hidden by list lag: warned, then cancelled."""
    stack.faults.hold(display_name="twin429", state="PENDING")
    stack.faults.lose_response("create", times=1, status=429)
    stack.faults.list_lag(lists=3)
    with caplog.at_level(logging.WARNING, logger="vertexbatch"):
        job = client.submit_claude("twin429", CLAUDE, claude_requests(1))
    assert "failed without showing in list" in caplog.text
    live = [
        j for j in jobs_named(stack, client.bucket, "twin429") if j["state"] == "JOB_STATE_PENDING"
    ]
    assert len(live) == 2  # the twin surfaced only after the submit returned
    # Later submits of the id return the recorded job, and the first that lists the twin
    # (list lag: a few lists on) cancels it.
    for _ in range(3):
        assert client.submit_claude("twin429", CLAUDE, claude_requests(1)) == job
    states = {j["name"]: j["state"] for j in jobs_named(stack, client.bucket, "twin429")}
    assert states.pop(job.name) == "JOB_STATE_PENDING"
    (twin,) = states
    assert stack.wait_job(twin)["state"] == "JOB_STATE_CANCELLED"


def test_cancel_failing_on_a_twin_still_returns_the_recorded_job(
    client: vb.Client, stack: LocalStack, bucket: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Cancelling a twin keeps failing: submit returns the recorded job and logs the twin."""
    stack.faults.hold(display_name="stubborn", state="PENDING")
    job = client.submit_claude("stubborn", CLAUDE, claude_requests(1))
    # A twin, as a submitter that crashed between create and record would leave.
    twin = stack.jobs_client().create_batch_prediction_job(
        parent=f"projects/{stack.project}/locations/{stack.location}",
        batch_prediction_job=stack.jobs_client().get_batch_prediction_job(name=job.name),
    )
    stack.faults.fail("cancel", status=503, times=client.retry.attempts)  # every retry fails
    with caplog.at_level(logging.WARNING, logger="vertexbatch"):
        assert client.submit_claude("stubborn", CLAUDE, claude_requests(1)) == job
    assert f"could not cancel duplicate job {twin.name}" in caplog.text
    assert client.submit_claude("stubborn", CLAUDE, claude_requests(1)) == job
    assert stack.wait_job(twin.name)["state"] == "JOB_STATE_CANCELLED"
    states = {j["name"]: j["state"] for j in jobs_named(stack, client.bucket, "stubborn")}
    assert states[job.name] == "JOB_STATE_PENDING"


# -- 14. small ones ----------------------------------------------------------------------------


def test_claim_conflict_after_a_crash_names_no_fake_count(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Input staged, manifest never written, other rows come: the message has no '-1 rows'."""
    client.submit_claude("crash", CLAUDE, claude_requests(2))
    for leaf in ("manifest.json", "job.json", "keys.jsonl"):
        _blob(stack, bucket, f"jobs/crash/{leaf}").delete()
    with pytest.raises(vb.InvalidRequestError, match="already claimed for other rows") as info:
        client.submit_claude("crash", CLAUDE, claude_requests(3))
    assert "-1" not in str(info.value) and "staged input has MD5" in str(info.value)


def test_null_record_is_damaged_for_find_and_submit_alike(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A record holding JSON null is damaged to every reader, never 'absent' to one of them."""
    client.submit_claude("nullrec", CLAUDE, claude_requests(1))
    _rewrite(stack, bucket, "jobs/nullrec/job.json", b"null")
    for call in (
        lambda: client.find("nullrec"),
        lambda: client.submit_claude("nullrec", CLAUDE, claude_requests(1)),
    ):
        with pytest.raises(vb.InvalidRequestError, match=r"job\.json is not a vertexbatch"):
            call()


@pytest.mark.parametrize("requests", [None, 3, "key-0", {"key": "value"}, b"bytes"])
def test_requests_that_are_not_an_iterable_of_requests(
    client: vb.Client, stack: LocalStack, requests: object
) -> None:
    """requests=None (or a string, a dict, a number) is InvalidRequestError, no cloud call."""
    for call in (client.submit_claude, client.run_claude):
        with pytest.raises(vb.InvalidRequestError, match="requests must be an iterable") as info:
            call("none", CLAUDE, requests)  # type: ignore[arg-type]
        assert info.value.field == "requests"
    with pytest.raises(vb.InvalidRequestError, match="requests must be an iterable"):
        client.submit_gemini("none", GEMINI, requests)  # type: ignore[arg-type]
    assert stack.calls() == {}


@pytest.mark.parametrize("keys", ["key-0", 5, [["key-0"]], [None]])
def test_resubmit_keys_that_are_not_keys(client: vb.Client, keys: object) -> None:
    """resubmit(keys=...) of one string, a number or non-string items: InvalidRequestError."""
    job = client.submit_claude("rk", CLAUDE, claude_requests(1))
    with pytest.raises(vb.InvalidRequestError, match="keys must be") as info:
        client.resubmit(job, keys=keys)  # type: ignore[arg-type]
    assert info.value.field == "keys"


@pytest.mark.parametrize(
    "leaf, data",
    [
        pytest.param("manifest.json", b"", id="empty-manifest"),
        pytest.param("manifest.json", b"[" * 100_000, id="deep-manifest"),
        pytest.param("job.json", b" " * (5 * 1024 * 1024), id="huge-record"),
        pytest.param("manifest.json", b"\xff\xfe", id="binary-manifest"),
    ],
)
def test_hostile_small_objects(
    client: vb.Client, stack: LocalStack, bucket: str, leaf: str, data: bytes
) -> None:
    """Empty, deep, huge or binary records are InvalidRequestError naming them, never held whole."""
    client.submit_claude("hostile", CLAUDE, claude_requests(1))
    _rewrite(stack, bucket, f"jobs/hostile/{leaf}", data)
    with pytest.raises(vb.InvalidRequestError, match=rf"jobs/hostile/{leaf}") as info:
        client.find("hostile")
    assert info.value.field == "staging"


def test_key_with_a_lone_surrogate(client: vb.Client, stack: LocalStack, bucket: str) -> None:
    """A key UTF-8 cannot carry is InvalidRequestError naming the rule, and nothing is staged."""
    with pytest.raises(vb.InvalidRequestError, match="lone surrogate") as info:
        client.submit_claude("surrogate", CLAUDE, [vb.ClaudeRequest("a\ud800", task(0).params)])
    assert info.value.field == "key"
    assert object_names(stack, bucket, "jobs/surrogate") == []


@pytest.mark.parametrize(
    "record",
    [
        pytest.param(b'{"shard": "fin.s0"}', id="no-outcomes"),
        pytest.param(b'{"shard": "fin.s0", "outcomes": {"ok": "2"}}', id="count-as-text"),
        pytest.param(b'{"shard": "fin.s0", "outcomes": {"ok": 1}}', id="count-short"),
        pytest.param(b'{"shard": "fin.s0", "outcomes": {"won": 2}}', id="unknown-outcome"),
        pytest.param(b'{"shard": "other.s0", "outcomes": {"ok": 2}}', id="other-shard"),
        pytest.param(b"[]", id="a-list"),
    ],
)
def test_edited_shard_record(
    client: vb.Client, stack: LocalStack, bucket: str, record: bytes
) -> None:
    """A finished shard's done.json edited by hand: InvalidRequestError naming it."""
    run = client.run_claude("fin", CLAUDE, [task(i) for i in range(2)])
    stack.settle()
    assert run.advance().done
    _rewrite(stack, bucket, "jobs/fin.s0/done.json", record)
    with pytest.raises(vb.InvalidRequestError, match=r"fin\.s0/done\.json is not a vertexbatch"):
        run.status()
