"""The ``vertexbatch`` command, through click's runner."""

from __future__ import annotations

import io
import json
import socket
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import requests
from click.testing import CliRunner, Result
from google.api_core import exceptions as api_exceptions

import vertexbatch as vb
from tests.helpers import (
    CLAUDE,
    GEMINI,
    claude_requests,
    one_error_line,
    request_line,
    write_lines,
)
from tests.install_fixtures import Ran
from vertexbatch._command import cli as _cli
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode, Progress, describe_error, result_record
from vertexbatch._config import SETTINGS
from vertexbatch._errors import shorten
from vertexbatch._retry import LOCAL_STACK_HINT
from vertexbatch.emulator import LocalStack

SECRET = "zebra-secret-prompt-words"  # request content that must never reach an error line


def run(args: list[str], env: Mapping[str, str | None], stdin: str | None = None) -> Result:
    return CliRunner().invoke(main, args, env=env, input=stdin, catch_exceptions=False)


def jobs_of(stack: LocalStack, submission_id: str, bucket: str) -> list[dict[str, Any]]:
    prefix = f"gs://{bucket}/"
    return [
        j
        for j in stack.jobs()
        if j["displayName"] == submission_id
        and j["inputConfig"]["gcsSource"]["uris"][0].startswith(prefix)
    ]


# -- submit -------------------------------------------------------------------------------------


def test_submit_claude_file_prints_job_and_resubmit_adopts(
    stack: LocalStack, bucket: str, env: dict[str, str | None], client: vb.Client, tmp_path: Path
) -> None:
    """submit prints the job; the same id and file again gives the same job, not a second one."""
    path = write_lines(tmp_path / "in.jsonl", [request_line("a"), "", request_line("b")])
    args = ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "cli-1", str(path)]
    first = run(args, env)
    assert first.exit_code == 0, first.output
    job = client.find("cli-1")
    assert job is not None and job.keys == 2
    assert f"name     {job.name}" in first.stdout
    second = run([*args, "--json"], env)
    assert second.exit_code == 0, second.output
    assert vb.Job.from_dict(json.loads(second.stdout)) == job
    assert len(jobs_of(stack, "cli-1", bucket)) == 1


def test_submit_gemini_from_stdin_json(env: dict[str, str | None], client: vb.Client) -> None:
    """'-' reads Gemini lines from stdin; --json prints Job.to_dict()."""
    lines = [
        json.dumps({"key": "t1", "contents": "Classify: refund please.", "config": None}),
        json.dumps(
            {
                "key": "t2",
                "contents": [{"role": "user", "parts": [{"text": "Classify: app crashes."}]}],
                "config": {"temperature": 0, "max_output_tokens": 50},
            }
        ),
    ]
    args = ["submit", "--provider", "gemini", "--model", GEMINI, "--id", "gem-1", "--json", "-"]
    result = run(args, env, stdin="\n".join(lines))
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["provider"] == "google" and data["keys"] == 2
    assert client.find("gem-1") == vb.Job.from_dict(data)


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ('{"key": "x", "params": ', "line 3: not valid JSON"),
        ('["x"]', "line 3: expected a JSON object, got list"),
        (
            '{"key": "x", "params": {}, "prompt": 1}',
            "line 3: unknown field(s) <field 3>: a claude line",
        ),
        ('{"params": {"max_tokens": 5, "messages": []}}', "line 3: 'key' must be"),
        ('{"key": "x", "params": [1]}', "line 3: 'params' must be an object"),
        # Rejected by the library itself: the command adds the line number.
        (request_line("a"), "line 3: request key 'a' appears twice"),
        (
            json.dumps({"key": "x", "params": {"messages": [{"role": "user", "content": SECRET}]}}),
            "line 3: params of request 'x' lack 'max_tokens'",
        ),
    ],
)
def test_submit_bad_line_is_invalid_request_naming_the_line(
    env: dict[str, str | None], tmp_path: Path, bad: str, expected: str, client: vb.Client
) -> None:
    """A bad request line exits 3 with one stderr line naming the line, never its content."""
    path = write_lines(
        tmp_path / "in.jsonl", [request_line("a", SECRET), request_line("b", SECRET), bad]
    )
    args = ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "bad-1", str(path)]
    result = run(args, env)
    assert result.exit_code == 3
    line = one_error_line(result)
    assert expected in line and str(path) in line
    assert SECRET not in result.output
    assert client.find("bad-1") is None


def test_submit_gemini_line_without_contents(env: dict[str, str | None]) -> None:
    """A Gemini line needs contents; config must be an object."""
    args = ["submit", "--provider", "gemini", "--model", GEMINI, "--id", "g-bad", "-"]
    result = run(args, env, stdin='{"key": "a"}\n')
    assert result.exit_code == 3
    assert "<stdin> line 1: lacks 'contents'" in one_error_line(result)
    result = run(args, env, stdin='{"key": "a", "contents": "hi", "config": 3}\n')
    assert "line 1: 'config' must be an object or null" in one_error_line(result)


def test_submit_bad_model_and_id_exit_3(env: dict[str, str | None], tmp_path: Path) -> None:
    """Errors from the library's own rules are exit 3 with the library's message."""
    path = write_lines(tmp_path / "in.jsonl", [request_line("a")])
    model = "publishers/anthropic/models/" + CLAUDE
    result = run(["submit", "--provider", "claude", "--model", model, "--id", "m", str(path)], env)
    assert result.exit_code == 3
    assert "must be a bare Vertex model id" in one_error_line(result)
    result = run(
        ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "A!", str(path)], env
    )
    assert result.exit_code == 3
    assert "submission id 'A!' is invalid" in one_error_line(result)


@pytest.mark.parametrize("command", [["submit"], ["run", "submit"]])
def test_unreadable_request_file_is_one_usage_line(
    env: dict[str, str | None], tmp_path: Path, command: list[str]
) -> None:
    """A request file that does not exist, or is a directory, is one line naming it, exit 2."""
    args = [*command, "--provider", "claude", "--model", CLAUDE, "--id", "x"]
    missing = str(tmp_path / "nope.jsonl")
    result = run([*args, missing], env)
    assert result.exit_code == ExitCode.USAGE
    line = one_error_line(result)
    assert line == f"vertexbatch: cannot read request file {missing}: No such file or directory"
    result = run([*args, str(tmp_path)], env)
    assert result.exit_code == ExitCode.USAGE
    assert f"cannot read request file {tmp_path}: Is a directory" in one_error_line(result)


@pytest.mark.parametrize(
    ("provider", "model", "expected"),
    [
        ("claude", GEMINI, f"model '{GEMINI}' is a Gemini model: use --provider gemini"),
        ("gemini", CLAUDE, f"model '{CLAUDE}' is a Claude model: use --provider claude"),
        ("claude", "opus-5", "--provider claude takes Claude models only"),
    ],
)
@pytest.mark.parametrize("command", [["submit"], ["run", "submit"]])
def test_model_of_another_provider_names_the_option(
    env: dict[str, str | None], command: list[str], provider: str, model: str, expected: str
) -> None:
    """A model the provider does not serve is exit 3 naming --provider, not a Python method."""
    args = [*command, "--provider", provider, "--model", model, "--id", "m", "-"]
    result = run(args, env, stdin=request_line("a"))
    assert result.exit_code == ExitCode.INVALID_REQUEST
    line = one_error_line(result)
    assert line.startswith("vertexbatch: invalid request: model ") and expected in line
    assert "submit_" not in line and "run_" not in line


def test_model_in_a_line_names_the_option(env: dict[str, str | None]) -> None:
    """A Claude line that sets its own model is told that --model gives it, not a method."""
    line = json.dumps({"key": "a", "params": {"model": CLAUDE, "max_tokens": 5, "messages": []}})
    args = ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "m", "-"]
    result = run(args, env, stdin=line)
    assert result.exit_code == ExitCode.INVALID_REQUEST
    error = one_error_line(result)
    assert "<stdin> line 1: 'params' sets 'model': --model gives the model of the whole job" in (
        error
    )
    assert "submit_claude" not in error


# -- configuration ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("unset", "flag"),
    [
        ("GOOGLE_CLOUD_PROJECT", "--project"),
        ("GOOGLE_CLOUD_LOCATION", "--location"),
        ("VERTEXBATCH_BUCKET", "--bucket"),
        ("VERTEXBATCH_VERTEX_ENDPOINT", "--vertex-endpoint"),
        ("STORAGE_EMULATOR_HOST", "--storage-endpoint"),
    ],
)
def test_missing_config_names_flag_and_variable(
    env: dict[str, str | None], unset: str, flag: str
) -> None:
    """Missing configuration is one line naming the flag and the variable, exit 2."""
    result = run(["find", "some-id"], {**env, unset: None})
    assert result.exit_code == 2
    line = one_error_line(result)
    assert f"missing {flag} (or set {unset})" in line


def test_flags_override_environment(
    stack: LocalStack, bucket: str, env: dict[str, str | None], client: vb.Client
) -> None:
    """Flags take the same names as the variables and win over them."""
    job = client.submit_claude("flags-1", CLAUDE, claude_requests(1))
    flags = [
        "--project",
        stack.project,
        "--location",
        stack.location,
        "--bucket",
        bucket,
        "--prefix",
        "jobs",
        "--vertex-endpoint",
        stack.vertex_endpoint,
        "--storage-endpoint",
        stack.storage_endpoint,
    ]
    blank = {name: None for name in env}
    result = run(["find", "flags-1", "--json", *flags], blank)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == job.to_dict()
    wrong = {**env, "VERTEXBATCH_PREFIX": "elsewhere"}
    assert run(["find", "flags-1"], wrong).exit_code == 4
    assert run(["find", "flags-1", "--prefix", "jobs"], wrong).exit_code == 0


def test_help_names_the_environment() -> None:
    """--help lists every variable the commands read; each command's options name theirs."""
    top = run(["--help"], {})
    assert top.exit_code == 0
    for setting in SETTINGS:
        assert f"{setting.variable:<28} {setting.flag}" in top.stdout
    assert "GOOGLE_APPLICATION_CREDENTIALS" in top.stdout
    commands = [["submit"], ["find"], ["status"], ["cancel"], ["results"], ["watch"]]
    commands += [["run", name] for name in ("submit", "advance", "status", "results")]
    for command in commands:
        text = " ".join(run([*command, "--help"], {}).stdout.split())
        for setting in SETTINGS:
            assert f"[env: {setting.variable}]" in text, (command, setting)
    emulator = " ".join(run(["emulator", "--help"], {}).stdout.split())
    assert "[env: VERTEXBATCH_BUCKET]" in emulator and "--env-file" in emulator


def test_stopped_local_stack_fails_fast_with_a_hint(
    env: dict[str, str | None], caplog: pytest.LogCaptureFixture
) -> None:
    """Loopback endpoints where nothing listens fail at once (no retries: -v would show each),
    saying to start the emulator: through the command (exit 6) and through Client.from_env."""
    with socket.socket() as sock:  # a port nothing listens on once the socket is closed
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    stopped = {**env, "VERTEXBATCH_VERTEX_ENDPOINT": closed, "STORAGE_EMULATOR_HOST": closed}
    result = run(["-v", "find", "any-id"], stopped)
    assert result.exit_code == ExitCode.CLOUD_ERROR
    assert "retrying" not in result.stderr
    line = result.stderr.splitlines()[-1]
    assert f"cannot reach the local stack at {closed.removeprefix('http://')}" in line
    assert "Start it with 'vertexbatch emulator'" in line
    client = vb.Client.from_env({k: v for k, v in stopped.items() if v is not None})
    with (
        caplog.at_level("WARNING", logger="vertexbatch"),
        pytest.raises(requests.ConnectionError) as raised,
    ):
        client.find("any-id")
    assert not [r for r in caplog.records if "retrying" in r.getMessage()]
    assert LOCAL_STACK_HINT in getattr(raised.value, "__notes__", [])


def test_endpoint_without_scheme_is_usage_error(env: dict[str, str | None]) -> None:
    """An endpoint without http:// is refused before any call (it would fail with a TLS error)."""
    endpoint = str(env["VERTEXBATCH_VERTEX_ENDPOINT"]).removeprefix("http://")
    result = run(["find", "x"], {**env, "VERTEXBATCH_VERTEX_ENDPOINT": endpoint})
    assert result.exit_code == 2
    assert "must be a URL such as http://127.0.0.1:PORT" in one_error_line(result)


def test_real_client_without_credentials_is_cloud_error(
    env: dict[str, str | None], tmp_path: Path
) -> None:
    """Without endpoints the real client is built; no credentials is one line, exit 6."""
    no_endpoints = {
        **env,
        "VERTEXBATCH_VERTEX_ENDPOINT": None,
        "STORAGE_EMULATOR_HOST": None,
        "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "missing.json"),
    }
    result = run(["find", "x"], no_endpoints)
    assert result.exit_code == 6
    assert "DefaultCredentialsError" in one_error_line(result)


# -- find, status, cancel -----------------------------------------------------------------------


def test_find(env: dict[str, str | None], client: vb.Client) -> None:
    """find prints the job of an id, exits 4 without one and 3 for an invalid id."""
    job = client.submit_claude("find-1", CLAUDE, claude_requests(2))
    result = run(["find", "find-1"], env)
    assert result.exit_code == 0
    assert f"id       find-1\nname     {job.name}\n" in result.stdout
    assert json.loads(run(["find", "find-1", "--json"], env).stdout) == job.to_dict()
    missing = run(["find", "find-2"], env)
    assert missing.exit_code == 4
    assert "no job for id 'find-2'" in one_error_line(missing)
    assert run(["find", "Find_2"], env).exit_code == 3


def test_status_exit_codes(
    stack: LocalStack, env: dict[str, str | None], client: vb.Client
) -> None:
    """status exits 0 succeeded, 10 not terminal, 11 failed, 12 cancelled; 4 for no job."""
    done = client.submit_claude("st-done", CLAUDE, claude_requests(2))
    vertex_job = stack.wait_job(done.name)
    result = run(["status", "st-done"], env)
    assert result.exit_code == 0
    assert result.stdout.startswith("st-done  JOB_STATE_SUCCEEDED  succeeded 2  failed 0")
    as_json = run(["status", "st-done", "--json"], env)
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.stdout)
    assert data["state"] == "JOB_STATE_SUCCEEDED" and data["exit_code"] == 0
    assert data["name"] == done.name and data["keys"] == 2
    created = datetime.fromisoformat(vertex_job["createTime"])
    assert datetime.fromisoformat(data["created"]) == created

    stack.faults.hold("st-held")
    held = client.submit_claude("st-held", CLAUDE, claude_requests(1))
    result = run(["status", "st-held", "--json"], env)
    assert result.exit_code == 10
    assert json.loads(result.stdout)["terminal"] is False
    client.cancel(held)
    stack.wait_job(held.name)
    assert run(["status", "st-held"], env).exit_code == 12

    stack.faults.fail_job("st-failed", code=3, message="Failed to import data")
    failed = client.submit_claude("st-failed", CLAUDE, claude_requests(1))
    stack.wait_job(failed.name)
    result = run(["status", "st-failed"], env)
    assert result.exit_code == 11
    assert "error 3: Failed to import data" in result.stdout

    assert run(["status", "st-none"], env).exit_code == 4


def test_status_explains_vertex_counts(
    stack: LocalStack, env: dict[str, str | None], client: vb.Client
) -> None:
    """status says, on stderr under its line, that refusals and truncations count as succeeded."""
    job = client.submit_claude("st-note", CLAUDE, outcome_requests())
    stack.wait_job(job.name)
    result = run(["status", "st-note"], env)
    assert result.exit_code == 0
    assert result.stdout.startswith("st-note  JOB_STATE_SUCCEEDED  succeeded 3  failed 2")
    assert result.stderr == (
        "vertexbatch: these are Vertex's row counts: 'succeeded' rows include refusals and "
        "truncations (rows with a response); 'vertexbatch results st-note' gives each key's "
        "outcome\n"
    )
    assert run(["status", "st-note", "--json"], env).stderr == ""


def test_cancel(stack: LocalStack, env: dict[str, str | None], client: vb.Client) -> None:
    """cancel asks Vertex to cancel the id's job; a job already ended is left alone and the
    command says so; no job is exit 4."""
    stack.faults.hold("cancel-1")
    job = client.submit_claude("cancel-1", CLAUDE, claude_requests(1))
    result = run(["cancel", "cancel-1"], env)
    assert result.exit_code == 0
    assert result.stdout == f"cancel requested for job {job.name} (id cancel-1)\n"
    assert stack.wait_job(job.name)["state"] == "JOB_STATE_CANCELLED"
    assert run(["cancel", "cancel-2"], env).exit_code == 4

    done = client.submit_claude("cancel-3", CLAUDE, claude_requests(1))
    stack.wait_job(done.name)
    stack.reset_calls()
    result = run(["cancel", "cancel-3"], env)
    assert result.exit_code == 0
    assert result.stdout == (
        f"job {done.name} (id cancel-3) already ended JOB_STATE_SUCCEEDED: nothing to cancel\n"
    )
    assert stack.calls()["cancel"] == 0
    again = run(["cancel", "cancel-1"], env)
    assert "already ended JOB_STATE_CANCELLED: nothing to cancel" in again.stdout


def test_retries_are_details_under_verbose(
    stack: LocalStack, env: dict[str, str | None], client: vb.Client
) -> None:
    """A failure after a retry is one stderr line; -v adds the retry; a recovered call is quiet."""
    client.submit_claude("retry-1", CLAUDE, claude_requests(1))
    stack.faults.fail("get", status=503)
    stack.faults.fail("get", status=403)
    result = run(["status", "retry-1", "--json"], env)
    assert result.exit_code == ExitCode.CLOUD_ERROR
    assert "Google Cloud error 403 Forbidden" in one_error_line(result)

    stack.faults.fail("get", status=503)
    stack.faults.fail("get", status=403)
    loud = run(["status", "-v", "retry-1", "--json"], env)
    lines = loud.stderr.splitlines()
    assert len(lines) == 2 and "retrying get " in lines[0] and "ServiceUnavailable" in lines[0]
    assert "403 Forbidden" in lines[1]

    stack.faults.fail("get", status=503)
    recovered = run(["status", "retry-1", "--json"], env)
    assert recovered.exit_code in (0, ExitCode.NOT_TERMINAL) and recovered.stderr == ""


def test_cloud_error_is_one_line_exit_6(
    stack: LocalStack, env: dict[str, str | None], client: vb.Client
) -> None:
    """A Vertex error that is not retried (403) is one stderr line, exit 6."""
    client.submit_claude("denied-1", CLAUDE, claude_requests(1))
    stack.faults.fail("get", status=403)
    result = run(["status", "denied-1"], env)
    assert result.exit_code == ExitCode.CLOUD_ERROR
    assert "Google Cloud error 403 Forbidden" in one_error_line(result)


# -- results ------------------------------------------------------------------------------------


def outcome_requests() -> list[vb.ClaudeRequest]:
    texts = {
        "ok": "fine",
        "refused": "x [[vb:refuse category=cyber detail=bad_thing]]",
        "truncated": "x [[vb:truncate]]",
        "retryable": "x [[vb:error 429]]",
        "failed": "x [[vb:error 400]]",
        "missing": "x [[vb:drop]]",
    }
    return [
        vb.ClaudeRequest(k, {"max_tokens": 64, "messages": [{"role": "user", "content": t}]})
        for k, t in texts.items()
    ]


def test_results_jsonl_fields_and_summary(
    stack: LocalStack, env: dict[str, str | None], client: vb.Client
) -> None:
    """results prints one JSON line per key with stable fields; a summary line goes to stderr."""
    job = client.submit_claude("res-1", CLAUDE, outcome_requests())
    stack.wait_job(job.name)
    result = run(["results", "res-1"], env)
    assert result.exit_code == 0, result.output
    records = {r["key"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert set(records) == {"ok", "refused", "truncated", "retryable", "failed", "missing"}
    for key, record in records.items():
        assert record["outcome"] == key
        assert list(record) == [
            "key",
            "outcome",
            "text",
            "stop",
            "usage",
            "refusal",
            "error",
            "shared",
            "cached",
            "tool_calls",
            "parsed",
        ]
        assert list(record["usage"]) == ["input", "output", "cache_read", "cache_write"]
    assert records["ok"]["error"] is None and records["ok"]["text"]
    assert records["refused"]["refusal"] == {"category": "cyber", "detail": "bad thing"}
    assert records["refused"]["error"] == {"type": "RefusedError", "code": 0, "status": ""}
    assert records["retryable"]["error"] == {
        "type": "LineError",
        "code": 429,
        "status": "RESOURCE_EXHAUSTED",
    }
    assert records["missing"]["error"]["type"] == "MissingError"
    assert records["truncated"]["stop"] == "max_tokens" and records["truncated"]["text"]
    counts, _, spend = result.stderr.partition("; spend ")
    assert counts == (
        "vertexbatch: 6 of 6 keys, job JOB_STATE_SUCCEEDED: ok 1, refused 1, truncated 1, "
        "retryable 1, failed 1, missing 1"
    )
    # What the answers cost: the stack's model is priced once the catalogue prices it.
    assert spend.startswith(("unknown (no price known for model", "$")), spend


def test_results_only(stack: LocalStack, env: dict[str, str | None], client: vb.Client) -> None:
    """--only keeps the named outcomes (repeatable); the summary still counts every key."""
    job = client.submit_claude("res-2", CLAUDE, outcome_requests())
    stack.wait_job(job.name)
    result = run(["results", "res-2", "--only", "retryable", "--only", "missing"], env)
    keys = sorted(json.loads(line)["key"] for line in result.stdout.splitlines())
    assert keys == ["missing", "retryable"]
    assert "6 of 6 keys" in result.stderr
    assert run(["results", "res-2", "--only", "bogus"], env).exit_code == 2
    assert run(["results", "res-none"], env).exit_code == 4


def test_results_before_terminal_says_so(
    stack: LocalStack, env: dict[str, str | None], client: vb.Client
) -> None:
    """Before the job is terminal, results prints the rows so far and says it is not terminal."""
    stack.faults.hold("res-3", state="RUNNING", after_rows=1)
    job = client.submit_claude("res-3", CLAUDE, claude_requests(3))
    stack.wait_job(
        job.name, until=lambda j: j.get("completionStats", {}).get("successfulCount") == "1"
    )
    result = run(["results", "res-3"], env)
    assert result.exit_code == 0
    assert len(result.stdout.splitlines()) == 1
    assert "1 of 3 keys, job JOB_STATE_RUNNING (not terminal" in result.stderr


def test_result_record_is_pure_and_stable() -> None:
    """result_record maps a Result to the documented JSON shape."""
    record = result_record(vb.Result("k", text="t", stop="end_turn", usage=vb.Usage(3, 4, 1, 2)))
    assert record == {
        "key": "k",
        "outcome": "ok",
        "text": "t",
        "stop": "end_turn",
        "usage": {"input": 3, "output": 4, "cache_read": 1, "cache_write": 2},
        "refusal": None,
        "error": None,
        "shared": False,
        "cached": False,
        "tool_calls": [],
        "parsed": None,
    }


# -- watch --------------------------------------------------------------------------------------


def test_watch_until_terminal(
    stack: LocalStack, env: dict[str, str | None], client: vb.Client
) -> None:
    """watch polls until terminal, prints plain progress lines off a terminal, exits 0."""
    job = client.submit_claude("watch-1", CLAUDE, claude_requests(3))
    result = run(["watch", "watch-1", "--floor", "0.01", "--ceiling", "0.05"], env)
    assert result.exit_code == 0, result.output
    assert "watch-1 JOB_STATE_SUCCEEDED 3/3 keys" in result.stderr
    assert "\r" not in result.stderr
    assert result.stdout.startswith("watch-1  JOB_STATE_SUCCEEDED  succeeded 3")
    assert stack.wait_job(job.name)["state"] == "JOB_STATE_SUCCEEDED"


def test_watch_exit_codes(stack: LocalStack, env: dict[str, str | None], client: vb.Client) -> None:
    """watch exits 10 when --timeout passes, 11 on a failed job, 2 on a bad floor, 4 without job."""
    stack.faults.hold("watch-2")
    client.submit_claude("watch-2", CLAUDE, claude_requests(1))
    fast = ["--floor", "0.01", "--ceiling", "0.02"]
    result = run(["watch", "watch-2", *fast, "--timeout", "0.1"], env)
    assert result.exit_code == ExitCode.NOT_TERMINAL
    assert "still JOB_STATE_PENDING" in result.stderr.splitlines()[-1]
    assert result.stdout.startswith("watch-2  JOB_STATE_PENDING")

    stack.faults.fail_job("watch-3", code=3, message="Failed to import data")
    client.submit_claude("watch-3", CLAUDE, claude_requests(1))
    assert run(["watch", "watch-3", *fast], env).exit_code == ExitCode.JOB_FAILED

    assert run(["watch", "watch-2", "--floor", "0"], env).exit_code == 2
    assert run(["watch", "watch-2", "--floor", "2", "--ceiling", "1"], env).exit_code == 2
    assert run(["watch", "watch-none", *fast], env).exit_code == 4


def test_progress_redraws_one_line_on_a_terminal() -> None:
    """On a terminal the bar is redrawn with \\r and ended with a newline."""
    stream = io.StringIO()
    progress = Progress(stream, tty=True, width=10)
    job = vb.Job("p", "n", "anthropic", CLAUDE, "gs://b/i", "gs://b/o", 10)
    progress.update(job, vb.Status("JOB_STATE_RUNNING", False, 4, 1, 5), 3.0)
    progress.update(job, vb.Status("JOB_STATE_SUCCEEDED", True, 9, 1, 0), 4.0)
    progress.close()
    assert stream.getvalue() == (
        "\r[#####.....] p JOB_STATE_RUNNING 5/10 keys 3s"
        "\r[##########] p JOB_STATE_SUCCEEDED 10/10 keys 4s\n"
    )


def test_progress_plain_lines_only_on_change() -> None:
    """Off a terminal a line is written only when the state or counts change."""
    stream = io.StringIO()
    progress = Progress(stream, tty=False)
    job = vb.Job("p", "n", "google", GEMINI, "gs://b/i", "gs://b/o", 2)
    for elapsed in (1.0, 2.0):
        progress.update(job, vb.Status("JOB_STATE_PENDING", False), elapsed)
    progress.update(job, vb.Status("JOB_STATE_SUCCEEDED", True, 2, 0, 0), 3.0)
    progress.close()
    assert stream.getvalue() == (
        "p JOB_STATE_PENDING 0/2 keys (1s)\np JOB_STATE_SUCCEEDED 2/2 keys (3s)\n"
    )


# -- logging, errors ----------------------------------------------------------------------------


def test_verbose_shows_library_logs(env: dict[str, str | None], tmp_path: Path) -> None:
    """-v shows the library's INFO logs (created, recorded) on stderr; without it they are quiet."""
    path = write_lines(tmp_path / "in.jsonl", [request_line("a")])
    args = ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "log-1", str(path)]
    quiet = run(args, env)
    assert quiet.exit_code == 0 and quiet.stderr == ""
    loud = run(["-v", *args], env)  # the group's -v, on a second submit: the job is adopted
    assert "vertexbatch: id log-1 is recorded as job" in loud.stderr
    path2 = write_lines(tmp_path / "in2.jsonl", [request_line("b")])
    loud = run(["submit", "-v", *args[1:-3], "--id", "log-2", str(path2)], env)
    assert "vertexbatch: created job" in loud.stderr
    assert "vertexbatch: recorded job" in loud.stderr


def test_exit_codes_are_the_documented_ones() -> None:
    """The exit codes are pinned: scripts depend on them."""
    assert {c.name: int(c) for c in ExitCode} == {
        "OK": 0,
        "UNEXPECTED": 1,
        "USAGE": 2,
        "INVALID_REQUEST": 3,
        "NOT_FOUND": 4,
        "JOB_ERROR": 5,
        "CLOUD_ERROR": 6,
        "NOT_TERMINAL": 10,
        "JOB_FAILED": 11,
        "JOB_ENDED": 12,
        "CHECK_FAILED": 13,
        "CLOSED_PIPE": 141,
    }
    for code in ExitCode:
        assert f"    {int(code):<4}" in (_cli.__doc__ or "")


def _refused_locally() -> Exception:
    """A refused connection as a policy that does not retry them leaves it (with its note)."""
    policy = vb.RetryPolicy(retry_refused=False)

    def refuse() -> None:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except ConnectionRefusedError as exc:
            raise requests.ConnectionError("refused") from exc

    try:
        policy.call("read", refuse)
    except requests.ConnectionError as exc:
        return exc
    raise AssertionError("the policy did not raise")


@pytest.mark.parametrize(
    ("exc", "code", "text"),
    [
        (vb.InvalidRequestError("bad id"), 3, "invalid request: bad id"),
        (vb.JobError("job j does not exist"), 5, "job error: job j does not exist"),
        (api_exceptions.TooManyRequests("Quota exceeded"), 6, "429 TooManyRequests"),  # type: ignore[no-untyped-call]
        (requests.exceptions.SSLError("[SSL: WRONG_VERSION_NUMBER]"), 6, "http://host:port"),
        (requests.ConnectionError("refused"), 6, "cannot reach Google Cloud"),
        (_refused_locally(), 6, "cannot reach the local stack (connection refused): is it"),
        (KeyError("x"), 1, "unexpected KeyError"),
    ],
)
def test_errors_map_to_exit_codes(exc: Exception, code: int, text: str) -> None:
    """Each kind of exception has its documented exit code and one line."""
    got_code, line = describe_error(exc)
    assert got_code == code
    assert text in line and "\n" not in line


def test_messages_shorten_a_value_one_way() -> None:
    """One helper puts a quoted value on one line and cuts it to the limit, mark included: the
    command's error and status lines (ASCII "...") and a MissingError's job message ("…")."""
    assert shorten("a\n  b\tc", 10) == "a b c"
    assert shorten("x" * 12, 10) == "x" * 7 + "..."
    assert shorten(ValueError("y" * 20), 10, mark="…") == "y" * 9 + "…"
    assert vb.MissingError.bound("z " * 200) == shorten("z " * 200, 300, mark="…")
    long = api_exceptions.ServiceUnavailable("w " * 400)  # type: ignore[no-untyped-call]
    _, line = describe_error(long)
    assert line.endswith(shorten("w " * 400, 300))


# -- emulator, demo, the installed script -------------------------------------------------------


def test_emulator_command_runs_the_stack_in_the_foreground(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`vertexbatch emulator` hands its options to run_foreground."""
    import vertexbatch.emulator

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(vertexbatch.emulator, "run_foreground", lambda **kw: calls.append(kw))
    args = ["emulator", "--bucket", "mine", "--row-seconds", "0.5", "--port", "9100"]
    result = CliRunner().invoke(main, [*args, "--gcs-port", "9101", "--env-file", "e.env"], env={})
    assert result.exit_code == 0, result.output
    assert calls[0]["bucket"] == "mine"
    assert calls[0]["timing"].row_seconds == 0.5
    assert (calls[0]["port"], calls[0]["gcs_port"], calls[0]["env_file"]) == (9100, 9101, "e.env")


def test_emulator_on_a_port_in_use_is_one_usage_line(tmp_path: Path) -> None:
    """A fixed port something listens on is exit 2 naming it; equal ports are refused too."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for flag in ("--port", "--gcs-port"):
            env_file = tmp_path / "local.env"
            result = run(["emulator", flag, str(port), "--env-file", str(env_file)], {})
            assert result.exit_code == ExitCode.USAGE
            assert f"127.0.0.1:{port} is already in use" in one_error_line(result)
            assert not env_file.exists()
    result = run(["emulator", "--port", "9100", "--gcs-port", "9100"], {})
    assert result.exit_code == ExitCode.USAGE
    assert "--port and --gcs-port must differ" in one_error_line(result)


@pytest.mark.processes
def test_demo_fast(readme_demo: Ran) -> None:
    """The demo runs both batches, shows outcomes and resubmits, then adoption on the rerun.
    (`vertexbatch demo --fast`, run once for the tests that read it: tests/install_fixtures.py)"""
    assert readme_demo.returncode == 0, readme_demo.stdout + readme_demo.stderr
    out = readme_demo.stdout
    assert (
        "demo-code-review     JOB_STATE_SUCCEEDED         24"
        "         2         2         2         1" in out
    )
    assert (
        "demo-ticket-triage   JOB_STATE_SUCCEEDED         22"
        "         2         1         2         1" in out
    )
    assert (
        "demo-code-review: resubmit 3 under a new id such as demo-code-review.r1 "
        "(`vertexbatch resubmit demo-code-review`):" in out
    )
    assert out.count("the same job as the first run") == 2
    assert "create calls to Vertex: 2 in the first run, 0 in the second" in out
    assert "jobs Vertex holds per id: demo-code-review 1, demo-ticket-triage 1" in out
    assert "4 keys ended exhausted" in out
    # Every request's fate is named, truncations included, refusals in words.
    assert "demo-code-review: accept or raise max_tokens for 2 (truncated):" in out
    assert "demo-ticket-triage: accept or raise max_tokens for 1 (truncated):" in out
    assert "(Claude's cyber-harm classifier declined it)" in out
    assert "(Gemini blocked the prompt as prohibited content)" in out
    assert "(Gemini stopped the answer on a safety rating)" in out
    assert "cache read: input tokens Claude read from its prompt cache" in out
    # Pay once: the second night is answered mostly from the cache, as its plan predicted.
    assert "night 1: plan: 6 requests, 4 distinct, 0 cached, 4 to send in 1 job(s)" in out
    assert "6 results: 0 from the cache, 2 shared with an equal request, 4 answered" in out
    assert "night 2: plan: 8 requests, 6 distinct, 6 cached, 2 to send in 1 job(s)" in out
    assert "8 results: 6 from the cache, 0 shared with an equal request, 2 answered" in out
    assert "demo-docs-index      8 documents, gemini-embedding-001" in out
    assert "7 vectors of 64 float32 values; not embedded: doc-07 (retryable)" in out
