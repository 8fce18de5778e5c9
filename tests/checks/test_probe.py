"""``vertexbatch probe`` against the local stack: the report, its privacy, and a stack rebuilt
from it."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage  # type: ignore[attr-defined,unused-ignore]

import vertexbatch as vb
from tests.helpers import jobs_in
from vertexbatch._checks.probe_shape import (
    LOCAL_DEFAULTS,
    row_facts,
    shape,
    status_format,
    status_shape,
)
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode
from vertexbatch.emulator import JobOptions, LocalStack, Timing

DIFFERENT = JobOptions(
    echo_siblings=False,
    request_echo="string",
    claude_error_shape="status_text",
    gemini_error_shape="status_object",
    echo_labels=False,
    claude_success_shape="body",
    partially_succeeded=True,
    output_time_offset=0.0,
    embedding_response="embeddings",
    chat_response="batch_body",
)
LANES = ("--lane", "embeddings", "--lane", "chat")  # the lanes probed only when asked


def probe(out: Path, *args: str, env: Mapping[str, str | None] | None = None) -> Result:
    return CliRunner().invoke(
        main,
        ["probe", "--out", str(out), "--interval", "0.01", "--timeout", "60", *args],
        env=env,
        catch_exceptions=False,
    )


def load(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(path.read_text())
    return report


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, keys included, nested JSON strings opened."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, str):
        yield value
        if value.startswith("{"):
            with contextlib.suppress(ValueError):
                yield from strings(json.loads(value))


def test_probe_needs_yes_and_creates_nothing_without_it(
    stack: LocalStack, stack_env: str, tmp_path: Path
) -> None:
    result = CliRunner().invoke(main, ["probe", "--out", str(tmp_path / "r.json")])
    assert result.exit_code == ExitCode.USAGE
    assert "--yes" in result.output
    assert stack.calls()["create"] == 0
    assert not (tmp_path / "r.json").exists()


def test_a_default_stack_shows_the_local_defaults(
    stack: LocalStack, stack_env: str, tmp_path: Path
) -> None:
    """Probing a default stack gives exactly LOCAL_DEFAULTS, the facts differences compare to."""
    out = tmp_path / "report.json"
    result = probe(out, "--yes", *LANES)
    assert result.exit_code == ExitCode.OK, result.output
    assert "every fact the probe saw" in result.stdout
    report = load(out)
    assert {k: report["facts"][k] for k in LOCAL_DEFAULTS} == dict(LOCAL_DEFAULTS)
    assert report["differences"] == []
    assert stack.calls()["create"] == 4
    for name, stop_key, stops in (
        ("claude", "stop_reason", {"end_turn", "max_tokens"}),
        ("gemini", "finishReason", {"STOP", "MAX_TOKENS"}),
    ):
        job = report["jobs"][name]
        assert job["states"][0] == {"state": "JOB_STATE_PENDING", "seconds": 0.0}
        assert job["states"][-1]["state"] == "JOB_STATE_SUCCEEDED"
        assert {"name", "state", "createTime", "labels"} <= set(job["create_fields"])
        assert "outputInfo.gcsOutputDirectory" in job["fields"]
        assert job["completion_stats"] == {"successfulCount": "string", "failedCount": "string"}
        assert job["output_files"] == ["predictions.jsonl"]
        rows = report["rows"][name]
        assert len(rows) == 3
        text = json.dumps(rows)
        assert all(f'"{stop_key}": "{stop}"' in text for stop in stops), name
        assert '"prefix": "Bad Request"' in text
    assert "vertexbatch: probe: claude: JOB_STATE_SUCCEEDED after" in result.output


KEPT = frozenset(
    {
        "",  # an empty status
        "Bad Request",  # a status prefix
        # Enums the report keeps by design (_probe_shape.ENUM_KEYS): stop reasons, finish
        # reasons, roles (the probe's own invalid role "critic" included), types, statuses.
        "INVALID_ARGUMENT",
        "MAX_TOKENS",
        "ON_DEMAND",
        "STOP",
        "TEXT",
        "assistant",
        "critic",
        "end_turn",
        "length",  # an open model's finish_reason values
        "stop",
        "max_tokens",
        "message",
        "model",
        "text",
        "user",
    }
)
"""Every string of the probe's staged input and output rows the report may hold: an allow-list,
so any other value that reaches the report is a leak, however short or plain."""


def values(value: Any) -> Iterator[str]:
    """Every string value in a JSON value, nested JSON (also after a status prefix) opened."""
    if isinstance(value, dict):
        for item in value.values():
            yield from values(item)
    elif isinstance(value, list):
        for item in value:
            yield from values(item)
    elif isinstance(value, str):
        yield value
        head, sep, tail = value.partition(": ")
        for text in (value, tail if sep else ""):
            if text.startswith(("{", "[")):
                with contextlib.suppress(ValueError):
                    yield from values(json.loads(text))
        if sep and tail.startswith("{"):
            yield head


@pytest.mark.parametrize("options", [JobOptions(), DIFFERENT], ids=["default", "different"])
def test_the_report_keeps_no_request_or_response_text(
    stack: LocalStack, stack_env: str, tmp_path: Path, options: JobOptions
) -> None:
    """No string value of the staged input or the output rows reaches the report, bar KEPT."""
    stack.set_job_options(options)
    out = tmp_path / "report.json"
    assert probe(out, "--yes", *LANES).exit_code == ExitCode.OK
    report = load(out)
    gcs = stack.storage_client()
    written: set[str] = set()
    for blob in gcs.list_blobs(stack_env, prefix="jobs/probe-"):
        for line in blob.download_as_bytes().splitlines():
            written.update(values(json.loads(line)))
    assert any("Local model answer" in s for s in written)  # the rows were read
    models = {job["model"] for job in report["jobs"].values()}  # the probe's own settings
    leaked = (written & set(strings(report))) - KEPT - models
    assert not leaked
    for text in ("Local model answer", "primary colour", "Count from one", "msg_vrtx_"):
        assert text not in out.read_text()


def test_a_stack_configured_to_differ_shows_in_the_report(
    stack: LocalStack, stack_env: str, tmp_path: Path
) -> None:
    """Rows without custom_id, string echoes, plain-text and object statuses: all reported."""
    stack.set_job_options(DIFFERENT)
    out = tmp_path / "report.json"
    result = probe(out, "--yes")
    assert result.exit_code == ExitCode.OK, result.output
    facts = load(out)["facts"]
    assert facts["claude.custom_id_echoed"] is False
    assert facts["gemini.sibling_echoed"] is False
    assert facts["claude.request_echo"] == facts["gemini.request_echo"] == "string"
    assert facts["claude.error_status"] == "text"
    assert facts["gemini.error_status"] == "object"
    assert facts["gemini.labels_echoed"] is False
    assert facts["claude.response"] == "body"
    assert facts["claude.end_state"] == "JOB_STATE_PARTIALLY_SUCCEEDED"
    assert facts["claude.output_dir_is_create_time"] is True
    assert "  claude.custom_id_echoed: service false, local stack true" in result.stdout
    assert '  claude.error_status: service "text", local stack "prefix_json"' in result.stdout
    assert '  gemini.request_echo: service "string", local stack "object"' in result.stdout


def test_a_stack_from_a_report_behaves_as_the_report_says(
    stack: LocalStack, stack_env: str, tmp_path: Path
) -> None:
    """LocalStack.from_probe_report: probing it gives the report's facts back, queue included."""
    stack.set_job_options(DIFFERENT)
    first = tmp_path / "service.json"
    assert probe(first, "--yes", *LANES).exit_code == ExitCode.OK
    report = load(first)
    # As if the service had queued the jobs at create (the state a zero-time stack never shows).
    report["facts"].update(
        {
            "claude.create_state": "JOB_STATE_QUEUED",
            "claude.queued_seen": True,
            "claude.queued_before_pending": True,
        }
    )
    first.write_text(json.dumps(report))
    with LocalStack.from_probe_report(first) as rebuilt:
        rebuilt.create_bucket("rebuilt")
        second = tmp_path / "rebuilt.json"
        env = rebuilt.environment("rebuilt", prefix="jobs")
        result = probe(second, "--yes", *LANES, env=env)
        assert result.exit_code == ExitCode.OK, result.output
    again = load(second)["facts"]
    assert again["claude.create_state"] == again["gemini.create_state"] == "JOB_STATE_QUEUED"
    for key in LOCAL_DEFAULTS:
        if "queued" not in key and "create_state" not in key:
            assert again[key] == report["facts"][key], key


def test_a_stack_refusing_two_input_files_shows_in_the_report(
    stack: LocalStack, stack_env: str, tmp_path: Path
) -> None:
    """A service that takes one input file only: each probe job's create of two parts is
    refused, made again with one file, and the report says so; a stack built from it refuses
    them too."""
    stack.set_job_options(JobOptions(max_input_uris=1))
    out = tmp_path / "report.json"
    result = probe(out, "--yes")
    assert result.exit_code == ExitCode.OK, result.output
    assert "claude: a job of 2 input files was refused" in result.output
    report = load(out)
    facts = report["facts"]
    assert facts["claude.input_uris_accepted"] == facts["gemini.input_uris_accepted"] == 1
    assert facts["claude.reads_every_input_uri"] is facts["gemini.reads_every_input_uri"] is True
    assert "  claude.input_uris_accepted: service 1, local stack 2" in result.stdout
    assert stack.calls()["create"] == 4  # two refused, two made
    with LocalStack.from_probe_report(out) as rebuilt:
        assert rebuilt.job_options.max_input_uris == 1


def test_from_probe_report_refuses_other_files(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"hello": 1}')
    with pytest.raises(ValueError, match="not a vertexbatch probe report"):
        LocalStack.from_probe_report(path)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        # Deeper than any report, shallow enough for json: measured, refused before parsing.
        (b'{"facts": {}, "x": ' + b"[" * 40 + b"]" * 40 + b"}", "nested too deeply"),
        (b"\xa7\xff{}", "UnicodeDecodeError"),
        (b'{"facts": {', "JSONDecodeError"),
        (
            b'{"facts": {}, "pad": "' + b"x" * (5 * 1024 * 1024) + b'"}',
            "larger than a probe report",
        ),
    ],
)
def test_a_damaged_deep_or_huge_report_is_refused_clearly(
    tmp_path: Path, content: bytes, said: str
) -> None:
    """Whatever the file holds, the answer is one ValueError naming the file and the reason."""
    path = tmp_path / "report.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=said) as caught:
        LocalStack.from_probe_report(path)
    assert str(path) in str(caught.value) and len(str(caught.value)) < 300


def test_brackets_in_a_reports_strings_are_not_nesting(tmp_path: Path) -> None:
    """Brackets and escaped quotes inside strings are text, not depth: such a report loads."""
    path = tmp_path / "report.json"
    text = "[{" * 500 + '\\"[' * 100
    path.write_text(json.dumps({"vertexbatch_probe": 1, "facts": {"note": text}}))
    assert isinstance(LocalStack.from_probe_report(path), LocalStack)  # built, not started


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"status": "", "response": {"x": 1}}, "empty"),
        ({"response": {"x": 1}}, "absent"),
        ({"status": 'Bad Request: {"error": {"code": 400}}'}, "prefix_json"),
        ({"status": {"code": 13, "message": "m"}}, "object"),
        ({"status": "The request timed out."}, "text"),
        ({"status": "Bad Request", "response": {"type": "error", "error": {}}}, "envelope"),
    ],
)
def test_status_format(row: dict[str, Any], expected: str) -> None:
    assert status_format(row) == expected


def test_rows_nested_too_deeply_are_described_not_raised() -> None:
    """A status tail or an echoed request string nested past json's recursion limit is text."""
    deep = "[" * 100_000 + "]" * 100_000
    assert status_shape(f'Bad Request: {{"error": {deep}}}') == "Bad Request: text"
    facts = row_facts("google", {"status": "", "request": deep, "response": {}})
    assert facts["labels_echoed"] is False and facts["status"] == "empty"


def test_shape_keeps_types_enums_and_status_prefixes_only() -> None:
    row = {
        "status": 'Too Many Requests: {"error": {"code": 429, "message": "slow down", '
        '"status": "RESOURCE_EXHAUSTED"}}',
        "custom_id": "k123",
        "request": {"messages": [{"role": "user", "content": "secret words"}], "max_tokens": 5},
        "response": {"stop_reason": "end_turn", "content": [{"type": "text", "text": "hi there"}]},
        "labels": {"vb_key": "k123"},
    }
    assert shape(row) == {
        "status": {
            "prefix": "Too Many Requests",
            "json": {"error": {"code": 429, "message": "string", "status": "RESOURCE_EXHAUSTED"}},
        },
        "custom_id": "string",
        "request": {"messages": [{"role": "user", "content": "string"}], "max_tokens": "number"},
        "response": {"stop_reason": "end_turn", "content": [{"type": "text", "text": "string"}]},
        "labels": "object(map)",
    }
    assert shape({"status": "The request timed out."}) == {"status": "text"}
    assert shape({"role": "a sentence, not an enum"}) == {"role": "string"}


def test_a_refused_create_cancels_the_job_already_made(
    stack: LocalStack, stack_env: str, tmp_path: Path
) -> None:
    """Gemini's create is refused (no such model): the Claude job is cancelled, exit 6."""
    stack.faults.hold(state="PENDING")  # the Claude job would otherwise end before the cancel
    out = tmp_path / "report.json"
    result = probe(out, "--yes", "--gemini-model", "gemini-nope-1")
    assert result.exit_code == ExitCode.CLOUD_ERROR, result.output
    assert "404" in result.output and "gemini-nope-1" in result.output
    report = load(out)  # partial: the Claude job's name, so it can be found again
    assert report["partial"] is True and list(report["jobs"]) == ["claude"]
    [job] = jobs_in(stack, stack_env)
    assert job["model"].endswith("/claude-sonnet-4-5")  # the default --claude-model
    assert stack.wait_job(job["name"])["state"] == "JOB_STATE_CANCELLED"


def test_a_failed_get_is_retried_and_a_job_past_the_timeout_is_cancelled(
    stack: LocalStack, stack_env: str, tmp_path: Path
) -> None:
    """A 503 on a poll is retried; a job still held at --timeout is cancelled and reported so."""
    stack.faults.fail("get", status=503)
    stack.faults.hold(state="PENDING")
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        main,
        ["probe", "--yes", "--out", str(out), "--interval", "0.01", "--timeout", "0.5"],
        catch_exceptions=False,
    )
    assert result.exit_code == ExitCode.OK, result.output
    assert "still JOB_STATE_PENDING after 0 s: cancelling" in result.output
    report = load(out)
    for job in report["jobs"].values():
        assert job["timed_out"] is True
        assert job["states"][-1]["state"] in {"JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED"}
    assert stack.calls()["get"] >= 3  # the failed one, then each job's


@pytest.mark.processes
def test_the_emulator_command_serves_a_report(tmp_path: Path) -> None:
    """`run_foreground(probe_report=...)` (the command's --probe-report) serves its behaviour."""
    import io
    import threading

    from tests.emulator.test_stack import FlushedOutput
    from vertexbatch.emulator import run_foreground

    report = {"vertexbatch_probe": 1, "facts": {"claude.custom_id_echoed": False}, "jobs": {}}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    out, stop = FlushedOutput(), threading.Event()
    runner = threading.Thread(
        target=run_foreground,
        kwargs={"out": out, "err": io.StringIO(), "stop": stop, "probe_report": path},
    )
    runner.start()
    try:
        assert out.flushed.wait(10)
        env = dict(
            line.removeprefix("export ").split("=", 1) for line in out.getvalue().splitlines()
        )
        client = vb.Client.from_env(env, retry=vb.RetryPolicy.no_wait())
        job = client.submit_claude("served", "claude-opus-5-5@default", [CLAIM])
        assert client.wait(job, floor=0.01).state == "JOB_STATE_SUCCEEDED"
        [result] = client.results(job)  # matched by the canonical digest: no custom_id echoed
        assert result.key == "k" and result.error is None
        gcs = storage.Client(
            project="p",
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options={"api_endpoint": env["STORAGE_EMULATOR_HOST"]},
        )
        [output] = [
            blob
            for blob in gcs.list_blobs(env["VERTEXBATCH_BUCKET"])
            if blob.name.endswith("/predictions.jsonl")
        ]
        [row] = [json.loads(line) for line in output.download_as_bytes().splitlines()]
        assert "custom_id" not in row and "request" in row
    finally:
        stop.set()
        runner.join(10)
    assert not runner.is_alive()


CLAIM = vb.ClaudeRequest(
    key="k", params={"max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
)


def test_the_emulator_command_takes_a_probe_report(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """--probe-report reaches run_foreground; a file that is no report is one usage line."""
    not_report = tmp_path / "other.json"
    not_report.write_text("[]")
    result = CliRunner().invoke(main, ["emulator", "--probe-report", str(not_report)], env={})
    assert result.exit_code == ExitCode.USAGE
    assert "not a vertexbatch probe report" in result.output
    import vertexbatch.emulator

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(vertexbatch.emulator, "run_foreground", lambda **kw: calls.append(kw))
    result = CliRunner().invoke(main, ["emulator", "--probe-report", str(not_report)], env={})
    assert result.exit_code == 0, result.output
    assert calls[0]["probe_report"] == str(not_report)


def test_no_invalid_rows_leaves_the_error_row_out(
    stack: LocalStack, stack_env: str, tmp_path: Path
) -> None:
    """--no-invalid-rows: two rows a job, no error status seen (so no fact about it)."""
    out = tmp_path / "report.json"
    result = probe(out, "--yes", "--no-invalid-rows")
    assert result.exit_code == ExitCode.OK, result.output
    report = load(out)
    assert report["invalid_rows"] is False
    assert [len(rows) for rows in report["rows"].values()] == [2, 2]
    assert report["facts"]["claude.error_status"] is None
    assert report["differences"] == []


ORDER = ["JOB_STATE_QUEUED", "JOB_STATE_PENDING", "JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED"]


@pytest.mark.processes
def test_states_are_recorded_in_order_with_timings(tmp_path: Path) -> None:
    """A queued, paced stack: create answers QUEUED, later states follow in order, in time."""
    timing = Timing(queued_seconds=0.2, pending_seconds=0.2, row_seconds=0.05)
    with LocalStack(timing=timing) as paced:
        paced.create_bucket("paced")
        out = tmp_path / "report.json"
        result = probe(out, "--yes", env=paced.environment("paced", prefix="jobs"))
        assert result.exit_code == ExitCode.OK, result.output
    report = load(out)
    for name, job in report["jobs"].items():
        states = [step["state"] for step in job["states"]]
        assert states[0] == "JOB_STATE_QUEUED" and states[-1] == "JOB_STATE_SUCCEEDED", states
        assert [ORDER.index(state) for state in states] == sorted(ORDER.index(s) for s in states)
        seconds = [step["seconds"] for step in job["states"]]
        assert seconds == sorted(seconds) and seconds[-1] >= 0.4, seconds
        assert report["facts"][f"{name}.create_state"] == "JOB_STATE_QUEUED"
    assert 'claude.create_state: service "JOB_STATE_QUEUED"' in result.stdout


def test_the_poll_interval_defaults_to_half_a_second_on_the_local_stack(
    stack: LocalStack, stack_env: str
) -> None:
    """On the stack, jobs end in seconds: the default poll must see them, not wait 30 s."""
    from vertexbatch._checks.probe import LOCAL_INTERVAL, run_probe

    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        time.sleep(0.01)  # record the pause asked for; poll on without waiting for it

    report = run_probe(stack.environment(stack_env), sleep=pause)
    assert pauses and set(pauses) == {LOCAL_INTERVAL}, pauses
    assert all(
        job["states"][-1]["state"] == "JOB_STATE_SUCCEEDED" for job in report["jobs"].values()
    )


def _states_after_settling(stack: LocalStack, bucket: str) -> dict[str, str]:
    """Each of the bucket's jobs' end state, by model publisher, once the stack let them end."""
    return {
        job["model"].split("/")[1]: stack.wait_job(job["name"])["state"]
        for job in jobs_in(stack, bucket)
    }


def test_ctrl_c_while_polling_cancels_both_jobs_and_hands_back_a_partial_report(
    stack: LocalStack, stack_env: str
) -> None:
    """A KeyboardInterrupt in the poll loop cancels every live job, names it, and re-raises."""
    from vertexbatch._checks.probe import run_probe

    stack.faults.hold(state="RUNNING")
    pauses: list[float] = []
    lines: list[str] = []
    partials: list[dict[str, Any]] = []

    def interrupt(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_probe(
            stack.environment(stack_env),
            interval=0.01,
            sleep=interrupt,
            progress=lines.append,
            on_partial=partials.append,
        )
    assert _states_after_settling(stack, stack_env) == {
        "anthropic": "JOB_STATE_CANCELLED",
        "google": "JOB_STATE_CANCELLED",
    }
    [report] = partials
    assert report["partial"] is True and report["stopped_by"] == "KeyboardInterrupt"
    assert "facts" not in report and "rows" not in report
    for job in report["jobs"].values():
        assert job["cancel"] == "requested"
        assert any(job["resource"] in line and "stopped early" in line for line in lines), lines


def test_ctrl_c_between_the_two_creates_cancels_the_first_job(
    stack: LocalStack, stack_env: str
) -> None:
    """An interrupt right after the Claude create (here from progress) cancels that job."""
    from vertexbatch._checks.probe import run_probe

    stack.faults.hold(state="PENDING")

    def progress(line: str) -> None:
        if "claude: created" in line:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_probe(stack.environment(stack_env), interval=0.01, progress=progress)
    assert _states_after_settling(stack, stack_env) == {"anthropic": "JOB_STATE_CANCELLED"}


def test_a_get_that_keeps_failing_cancels_both_jobs_and_writes_a_partial_report(
    stack: LocalStack, stack_env: str, tmp_path: Path
) -> None:
    """Polls refused for good (403): the error is raised, the jobs cancelled, --out partial."""
    stack.faults.hold(state="RUNNING")
    stack.faults.fail("get", status=403, times=1000)
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        main, ["probe", "--yes", "--out", str(out), "--interval", "0.01"], catch_exceptions=False
    )
    assert result.exit_code != ExitCode.OK
    assert "403" in result.output
    stack.faults.reset()
    assert _states_after_settling(stack, stack_env) == {
        "anthropic": "JOB_STATE_CANCELLED",
        "google": "JOB_STATE_CANCELLED",
    }
    report = load(out)
    assert report["partial"] is True and report["stopped_by"] == "Forbidden"
    assert "partial report (no rows, no facts) written to" in result.output
    with pytest.raises(ValueError, match="partial"):
        LocalStack.from_probe_report(out)


def test_a_refused_cancel_at_the_timeout_is_an_error_not_a_report(
    stack: LocalStack, stack_env: str
) -> None:
    """Only FAILED_PRECONDITION (the job ended meanwhile) is a quiet cancel; a 400 is raised."""
    from google.api_core import exceptions as api_exceptions

    from vertexbatch._checks.probe import run_probe

    stack.faults.hold(state="PENDING")
    stack.faults.fail("cancel", status=400)
    partials: list[dict[str, Any]] = []
    with pytest.raises(api_exceptions.BadRequest) as raised:
        run_probe(
            stack.environment(stack_env),
            interval=0.01,
            timeout=0.0,
            sleep=lambda seconds: None,
            on_partial=partials.append,
        )
    assert not isinstance(raised.value, api_exceptions.FailedPrecondition)
    assert partials[0]["jobs"]["claude"]["timed_out"] is True  # its cancel was the refused one
    assert set(_states_after_settling(stack, stack_env).values()) == {"JOB_STATE_CANCELLED"}


def test_cancelling_a_job_that_already_ended_is_quiet(stack: LocalStack, client: vb.Client) -> None:
    """Vertex's 400 FAILED_PRECONDITION for a finished job reads as "already ended"."""
    import requests

    from vertexbatch._checks.probe import _cancel_live, _Job

    job = client.submit_claude("ended", "claude-opus-5-5@default", [CLAIM])
    ended = stack.wait_job(job.name)
    assert ended["state"] == "JOB_STATE_SUCCEEDED"
    probe_job = _Job("claude", "claude-opus-5-5@default", ended, 0.0)
    policy = vb.RetryPolicy.no_wait()
    assert _cancel_live(requests.Session(), stack.vertex_endpoint, policy, probe_job) is False


def test_an_interval_below_five_seconds_is_refused_against_vertex(stack_env: str) -> None:
    """Against real Vertex (no endpoints) --interval must be >= 5 s; nothing is called."""
    from vertexbatch._checks.probe import run_probe

    env = {
        "GOOGLE_CLOUD_PROJECT": "p",
        "GOOGLE_CLOUD_LOCATION": "us-east5",
        "VERTEXBATCH_BUCKET": "b",
    }
    with pytest.raises(vb.InvalidRequestError, match=r"interval 0 s is below 5 s") as raised:
        run_probe(env, interval=0.0)
    assert raised.value.field == "interval"
    result = CliRunner().invoke(
        main,
        ["probe", "--yes", "--out", "r.json", "--interval", "1"],
        env={"STORAGE_EMULATOR_HOST": None, "VERTEXBATCH_VERTEX_ENDPOINT": None},
    )
    assert result.exit_code == ExitCode.INVALID_REQUEST, result.output
    assert "interval 1 s is below 5 s" in result.output


def test_a_report_whose_providers_differ_keeps_each_providers_facts(
    stack: LocalStack, stack_env: str, tmp_path: Path
) -> None:
    """Claude echoes custom_id and an object request, Gemini neither: a stack rebuilt from that
    report shows both providers' facts, none taken over by the other's."""
    from vertexbatch.emulator._report import options_from_report

    stack.set_job_options(
        JobOptions(
            echo_siblings=True,
            request_echo="object",
            gemini_echo_siblings=False,
            gemini_request_echo="string",
        )
    )
    first = tmp_path / "service.json"
    assert probe(first, "--yes").exit_code == ExitCode.OK
    facts = load(first)["facts"]
    assert (facts["claude.custom_id_echoed"], facts["gemini.sibling_echoed"]) == (True, False)
    assert (facts["claude.request_echo"], facts["gemini.request_echo"]) == ("object", "string")
    options, _ = options_from_report(load(first))
    assert (options.siblings_echoed("anthropic"), options.siblings_echoed("google")) == (
        True,
        False,
    )
    assert options.echo_of_request("anthropic") == "object"
    assert options.echo_of_request("google") == "string"
    with LocalStack.from_probe_report(first) as rebuilt:
        rebuilt.create_bucket("rebuilt")
        second = tmp_path / "rebuilt.json"
        env = rebuilt.environment("rebuilt", prefix="jobs")
        result = probe(second, "--yes", *LANES, env=env)
        assert result.exit_code == ExitCode.OK, result.output
    again = load(second)["facts"]
    for key in (
        "claude.custom_id_echoed",
        "gemini.sibling_echoed",
        "claude.request_echo",
        "gemini.request_echo",
    ):
        assert again[key] == facts[key], key
