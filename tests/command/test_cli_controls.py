"""The command's job controls: ``--label``, ``--kms-key``, ``--service-account`` on ``submit``
and ``run submit``, and ``doctor --kms-key … --service-account …`` on the local stack."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import CLAUDE, invoke, jobs_in, one_error_line, request_line, write_lines
from vertexbatch._command.cli_render import ExitCode
from vertexbatch.emulator import LocalStack

ACCOUNT = "runner@local-project.iam.gserviceaccount.com"


def key_of(stack: LocalStack) -> str:
    return f"projects/{stack.project}/locations/{stack.location}/keyRings/r/cryptoKeys/k"


def _controls(stack: LocalStack) -> list[str]:
    return [
        "--label",
        "team=search",
        "--label",
        "env=prod",
        "--kms-key",
        key_of(stack),
        "--service-account",
        ACCOUNT,
    ]


@pytest.mark.parametrize("command", [["submit"], ["run", "submit"]])
def test_the_controls_go_on_the_job_and_into_the_identity(
    stack: LocalStack, bucket: str, env: dict[str, str | None], tmp_path: Path, command: list[str]
) -> None:
    path = write_lines(tmp_path / "in.jsonl", [request_line("a"), request_line("b")])
    args = [*command, "--provider", "claude", "--model", CLAUDE, "--id", "cli-ctl", str(path)]
    first = invoke([*args, *_controls(stack)], env)
    assert first.exit_code == 0, first.output
    (job,) = jobs_in(stack, bucket)
    assert job["labels"]["team"] == "search" and job["labels"]["env"] == "prod"
    assert job["encryptionSpec"] == {"kmsKeyName": key_of(stack)}
    assert job["serviceAccount"] == ACCOUNT
    assert invoke([*args, *_controls(stack)], env).exit_code == 0  # the same again: adopted
    other = invoke([*args, "--label", "team=ads"], env)
    assert other.exit_code == ExitCode.INVALID_REQUEST
    assert "other labels" in one_error_line(other)
    assert len(jobs_in(stack, bucket)) == 1


@pytest.mark.parametrize("command", [["submit"], ["run", "submit"]])
@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--label", "team"], "--label takes KEY=VALUE"),
        (["--label", "a=1", "--label", "a=2"], "given twice"),
        (["--label", "Team=x"], "--label: label key 'Team' is invalid"),
        (["--label", "vertexbatch_id=x"], "vertexbatch's own"),
        (["--kms-key", "my-key"], "--kms-key: kms_key 'my-key' is not a Cloud KMS key"),
        (
            ["--kms-key", "projects/p/locations/europe-west4/keyRings/r/cryptoKeys/k"],
            "not the client's 'us-central1'",
        ),
        (["--service-account", "me@example.com"], "--service-account: service_account"),
    ],
)
def test_a_bad_control_exits_2_with_one_line_naming_the_rule(
    stack: LocalStack,
    bucket: str,
    env: dict[str, str | None],
    tmp_path: Path,
    command: list[str],
    flags: list[str],
    said: str,
) -> None:
    """Before anything is staged or created: the configuration exit code and one line."""
    path = write_lines(tmp_path / "in.jsonl", [request_line("a")])
    args = [*command, "--provider", "claude", "--model", CLAUDE, "--id", "cli-bad", str(path)]
    result = invoke([*args, *flags], env)
    assert result.exit_code == ExitCode.USAGE, result.output
    assert said in one_error_line(result)
    assert not list(stack.storage_client().list_blobs(bucket))
    assert not jobs_in(stack, bucket)


def test_a_dry_run_checks_the_controls_too(
    stack: LocalStack, env: dict[str, str | None], tmp_path: Path
) -> None:
    path = write_lines(tmp_path / "in.jsonl", [request_line("a")])
    args = ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "cli-dry", str(path)]
    assert invoke([*args, "--dry-run", *_controls(stack)], env).exit_code == 0
    bad = invoke([*args, "--dry-run", "--kms-key", "k"], env)
    assert bad.exit_code == ExitCode.USAGE


def test_doctor_checks_the_controls_and_cannot_tell_on_the_local_stack(
    stack: LocalStack, env: dict[str, str | None]
) -> None:
    """The form and region are checked; that the key and account exist, the stack cannot show."""
    result = invoke(
        ["doctor", "--json", "--kms-key", key_of(stack), "--service-account", ACCOUNT], env
    )
    assert result.exit_code == 0, result.output
    checks = {c["check"]: c for c in json.loads(result.stdout)}
    assert checks["kms-key"]["result"] == "warn"
    assert "cannot tell" in checks["kms-key"]["detail"]
    assert checks["service-account"]["result"] == "warn"
    bad = invoke(
        ["doctor", "--kms-key", "projects/p/locations/asia-east1/keyRings/r/cryptoKeys/k"], env
    )
    assert bad.exit_code == ExitCode.CHECK_FAILED
    assert "not the client's" in bad.stdout


def test_doctor_without_controls_checks_none(env: dict[str, str | None]) -> None:
    result = invoke(["doctor", "--json"], env)
    names = [c["check"] for c in json.loads(result.stdout)]
    assert "kms-key" not in names and "service-account" not in names
