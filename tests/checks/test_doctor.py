"""``vertexbatch doctor``, through the real entry point against the local stack."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from click.testing import CliRunner, Result

import vertexbatch as vb
from tests.gcs_gate import deny_bucket_metadata
from vertexbatch._checks.doctor import (
    DOCTOR_OBJECT,
    Check,
    check_credentials,
    check_model,
)
from vertexbatch._checks.doctor_location import check_location
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode
from vertexbatch._config import Config
from vertexbatch.emulator import LocalStack

ORDER = [
    "configuration",
    "location",
    "credentials",
    "vertex",
    "job-create",
    "bucket",
    "bucket-location",
    "bucket-objects",
    "service-agent",
    "model",
]


def doctor(*args: str, env: Mapping[str, str | None] | None = None) -> Result:
    return CliRunner().invoke(main, ["doctor", *args], env=env, catch_exceptions=False)


def lines_by_check(output: str) -> dict[str, str]:
    return {line.split()[1]: line for line in output.splitlines()}


def test_doctor_is_all_ok_on_the_local_stack(stack_env: str) -> None:
    result = doctor()
    assert result.exit_code == ExitCode.OK, result.output
    lines = lines_by_check(result.output)
    assert list(lines) == ORDER
    for name in (
        "configuration",
        "location",
        "vertex",
        "job-create",
        "bucket",
        "bucket-location",
        "bucket-objects",
        "model",
    ):
        assert lines[name].startswith("ok "), lines[name]
    assert lines["credentials"].startswith("skip ")
    assert "anonymous on the local stack" in lines["credentials"]
    assert lines["model"].endswith(
        "claude-sonnet-4-5 exists for publisher anthropic; "
        "gemini-2.5-flash exists for publisher google"
    )
    assert "us-central1" not in lines["model"]  # Model Garden is asked per publisher, not here
    # fake-gcs-server serves no bucket IAM policy: doctor says it cannot tell, never guesses.
    assert lines["service-agent"].startswith("warn ") and "cannot tell" in lines["service-agent"]
    assert "service-123456789012@gcp-sa-aiplatform" in lines["service-agent"]
    assert not any(line.startswith("fail") for line in result.output.splitlines())


def test_doctor_leaves_no_object_under_the_prefix(stack: LocalStack, stack_env: str) -> None:
    assert doctor().exit_code == ExitCode.OK
    names = [blob.name for blob in stack.storage_client().list_blobs(stack_env)]
    assert not [name for name in names if DOCTOR_OBJECT in name], names
    assert names == []


def test_a_missing_bucket_fails_with_the_fix(stack_env: str) -> None:
    result = doctor("--bucket", "t-no-such-bucket-for-doctor")
    assert result.exit_code == ExitCode.CHECK_FAILED
    lines = lines_by_check(result.output)
    assert lines["bucket"].startswith("fail ")
    assert "t-no-such-bucket-for-doctor does not exist" in lines["bucket"]
    assert "VERTEXBATCH_BUCKET" in lines["bucket"]
    assert lines["bucket-objects"].startswith("skip ")
    assert lines["vertex"].startswith("ok ")


def test_json_prints_a_list_of_check_result_detail(stack_env: str) -> None:
    result = doctor("--json")
    assert result.exit_code == ExitCode.OK
    checks = json.loads(result.output)
    assert isinstance(checks, list)
    assert [c["check"] for c in checks] == ORDER
    for c in checks:
        assert set(c) == {"check", "result", "detail"}
        assert c["result"] in {"ok", "warn", "fail", "skip"}
        assert isinstance(c["detail"], str)


def test_a_missing_configuration_variable_fails_naming_it(stack_env: str) -> None:
    result = doctor(env={"GOOGLE_CLOUD_PROJECT": None})
    assert result.exit_code == ExitCode.CHECK_FAILED
    lines = lines_by_check(result.output)
    assert lines["configuration"].startswith("fail ")
    assert "GOOGLE_CLOUD_PROJECT" in lines["configuration"]
    assert "--project" in lines["configuration"]
    for name in ("location", "credentials", "vertex", "bucket", "bucket-objects"):
        assert lines[name].startswith("skip ") and "needs the configuration" in lines[name]


def test_a_model_is_looked_up_for_its_publisher(stack: LocalStack, stack_env: str) -> None:
    """get_publisher_model finds a catalogue model; a missing one fails naming it and where."""
    result = doctor("--model", "claude-opus-5-5@default")
    assert result.exit_code == ExitCode.OK
    assert lines_by_check(result.output)["model"].endswith(
        "claude-opus-5-5 exists for publisher anthropic (version default not checked)"
    )
    missing = doctor("--model", "gemini-3.8-flash", "--model", "claude-opus-0-1@default")
    assert missing.exit_code == ExitCode.CHECK_FAILED
    line = lines_by_check(missing.output)["model"]
    assert line.startswith("fail ")
    assert "claude-opus-0-1 is not found for publisher anthropic in Model Garden" in line
    assert stack.calls()["getPublisherModel"] == 3
    bad = doctor("--model", "publishers/anthropic/models/claude-opus-5-5")
    assert bad.exit_code == ExitCode.CHECK_FAILED
    assert lines_by_check(bad.output)["model"].startswith("fail ")


def test_a_model_lookup_that_fails_cannot_tell(stack: LocalStack, stack_env: str) -> None:
    """A lookup refused (403) is a warn, not a verdict on the model."""
    stack.faults.fail("getPublisherModel", status=403)
    result = doctor("--model", "claude-opus-5-5@default")
    assert result.exit_code == ExitCode.OK
    line = lines_by_check(result.output)["model"]
    assert line.startswith("warn ") and "cannot tell whether claude-opus-5-5" in line


def test_global_location_fails_for_claude_and_warns_without_a_model() -> None:
    config = Config(project="p", location="global", bucket="b")
    assert check_location(config, "claude-opus-5-5@default").result == "fail"
    assert check_location(config, "gemini-3.8-flash").result == "ok"
    assert check_location(config, None).result == "warn"
    assert check_location(Config("p", "us-east5", "b"), "claude-x").result == "ok"
    assert check_model(config, ["gpt-4"]).result == "fail"


def test_vertex_refusing_to_list_fails_naming_the_role(stack: LocalStack, stack_env: str) -> None:
    stack.faults.fail("list", status=403)
    result = doctor()
    assert result.exit_code == ExitCode.CHECK_FAILED
    line = lines_by_check(result.output)["vertex"]
    assert line.startswith("fail ") and "roles/aiplatform.user" in line
    assert lines_by_check(result.output)["bucket-objects"].startswith("ok ")


def test_vertex_is_asked_once(stack: LocalStack, stack_env: str) -> None:
    stack.reset_calls()
    assert doctor().exit_code == ExitCode.OK
    assert stack.calls()["list"] == 1
    assert stack.calls()["create"] == 0
    assert stack.calls()["testIamPermissions"] == 1


def test_a_caller_who_may_not_create_jobs_fails_naming_the_role(
    stack: LocalStack, stack_env: str
) -> None:
    """job-create asks testIamPermissions (no job is made); a missing permission fails."""
    stack.faults.deny("aiplatform.batchPredictionJobs.create")
    result = doctor()
    assert result.exit_code == ExitCode.CHECK_FAILED
    line = lines_by_check(result.output)["job-create"]
    assert line.startswith("fail ") and "roles/aiplatform.user" in line
    assert "aiplatform.batchPredictionJobs.create" in line
    assert stack.calls()["create"] == 0


def test_job_create_cannot_tell_when_resource_manager_refuses(
    stack: LocalStack, stack_env: str
) -> None:
    stack.faults.fail("testIamPermissions", status=403)
    result = doctor()
    assert result.exit_code == ExitCode.OK
    line = lines_by_check(result.output)["job-create"]
    assert line.startswith("warn ") and "cannot tell" in line


def test_a_bucket_in_another_region_fails(stack_env: str) -> None:
    """fake-gcs-server's buckets are in US-CENTRAL1: a europe-west4 job cannot use them."""
    result = doctor("--location", "europe-west4")
    assert result.exit_code == ExitCode.CHECK_FAILED
    line = lines_by_check(result.output)["bucket-location"]
    assert line.startswith("fail ") and "US-CENTRAL1" in line and "europe-west4" in line
    assert doctor("--location", "us-central1").exit_code == ExitCode.OK


def test_an_object_only_caller_warns_on_the_bucket_and_still_checks_objects(
    stack: LocalStack, stack_env: str
) -> None:
    """roles/storage.objectAdmin (docs/operations.md's grant) cannot GET the bucket: GCS answers
    403 there. doctor warns that it cannot see the metadata, and bucket-objects proves access."""
    with deny_bucket_metadata(stack.storage_endpoint) as gate:
        result = doctor("--storage-endpoint", gate)
    assert result.exit_code == ExitCode.OK, result.output
    lines = lines_by_check(result.output)
    assert lines["bucket"].startswith("warn ") and "cannot see" in lines["bucket"]
    assert "vertexbatch does not need it" in lines["bucket"]
    assert lines["bucket-location"].startswith("skip ")
    assert lines["bucket-objects"].startswith("ok "), lines["bucket-objects"]
    assert lines["service-agent"].startswith("warn ") and "cannot tell" in lines["service-agent"]


def test_an_object_only_caller_on_a_missing_bucket_fails_at_bucket_objects(
    stack: LocalStack, stack_env: str
) -> None:
    """With the metadata GET refused, a bucket that does not exist shows at its object create."""
    with deny_bucket_metadata(stack.storage_endpoint) as gate:
        result = doctor("--storage-endpoint", gate, "--bucket", "t-no-such-bucket-behind-gate")
    assert result.exit_code == ExitCode.CHECK_FAILED, result.output
    lines = lines_by_check(result.output)
    assert lines["bucket"].startswith("warn ")
    line = lines["bucket-objects"]
    assert line.startswith("fail ") and "t-no-such-bucket-behind-gate does not exist" in line
    assert lines["service-agent"].startswith("skip ")


@pytest.mark.parametrize("location", ["us-east5", "europe-west4", "northamerica-northeast1"])
def test_a_listed_region_is_ok_and_says_only_that(location: str) -> None:
    check = check_location(Config("p", location, "b"), "claude-opus-5-5@default")
    assert (check.result, check.detail) == (
        "ok",
        f"{location} is a region Generative AI is offered in",
    )


@pytest.mark.parametrize("location", ["me-central2", "us-west3", "africa-south1"])
def test_a_region_outside_googles_generative_ai_list_warns_naming_the_list(location: str) -> None:
    check = check_location(Config("p", location, "b"), "claude-opus-5-5@default")
    assert check.result == "warn"
    assert check.detail.startswith(f"{location} is not among the regions in Google's list")
    assert "read 2026-11-30" in check.detail


@pytest.mark.parametrize("location", ["US", "EU", "asia", "us_east5", "useast5", "us-east", ""])
def test_a_location_that_is_no_region_name_fails_naming_it_and_the_rule(location: str) -> None:
    check = check_location(Config("p", location, "b"), None)
    assert check.result == "fail"
    assert f"location {location!r} is not a region name" in check.detail
    assert "such as us-east5" in check.detail


def test_a_model_version_the_stack_does_not_serve_is_refused_at_submit(
    client: vb.Client,
) -> None:
    """The stack's catalogue holds @default, @YYYYMMDD and @NNN of a bare id, no other
    version: doctor does not check the version, so submit must."""
    request = vb.ClaudeRequest(
        key="a", params={"max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
    )
    with pytest.raises(vb.InvalidRequestError, match="no-such-version"):
        client.submit_claude("v-bad", "claude-opus-5-5@no-such-version", [request])
    job = client.submit_claude("v-dated", "claude-opus-5-5@20261001", [request])
    assert job.name


class _MetadataCredentials:
    """Stands in for GCE / Cloud Run credentials: the email is "default" until a refresh."""

    def __init__(self, refused: bool = False) -> None:
        self.service_account_email = "default"
        self.refreshed = 0
        self.refused = refused

    def refresh(self, request: object) -> None:
        from google.auth.exceptions import RefreshError

        self.refreshed += 1
        if self.refused:
            raise RefreshError("invalid_grant: Token has been expired or revoked.")
        self.service_account_email = "runner@my-project.iam.gserviceaccount.com"


def _user_credentials(refused: bool) -> Any:
    """Real user credentials whose refresh answers as Google's token endpoint would."""
    import google.oauth2.credentials
    from google.auth.exceptions import RefreshError

    class User(google.oauth2.credentials.Credentials):
        def refresh(self, request: object) -> None:
            if refused:
                raise RefreshError("invalid_grant: Token has been expired or revoked.")

    return User(token=None, refresh_token="r", client_id="c", client_secret="s")


def _with_credentials(monkeypatch: pytest.MonkeyPatch, credentials: Any) -> None:
    import google.auth

    monkeypatch.setattr(google.auth, "default", lambda **kwargs: (credentials, "my-project"))


CLOUD = Config("my-project", "us-east5", "b")


def test_credentials_are_refreshed_before_naming_their_account(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A metadata-server account shows its real email only after a refresh: doctor refreshes."""
    credentials = _MetadataCredentials()
    _with_credentials(monkeypatch, credentials)
    check = check_credentials(CLOUD)
    assert credentials.refreshed == 1
    assert (check.result, check.detail) == (
        "ok",
        "service account runner@my-project.iam.gserviceaccount.com",
    )
    _with_credentials(monkeypatch, _user_credentials(refused=False))
    assert check_credentials(CLOUD) == Check("credentials", "ok", "user credentials (ADC)")


@pytest.mark.parametrize("kind", ["metadata", "user"])
def test_expired_credentials_fail_with_the_login_fix(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Credentials whose refresh is refused are a fail naming the gcloud command, not ok."""
    refused = _MetadataCredentials(refused=True) if kind == "metadata" else _user_credentials(True)
    _with_credentials(monkeypatch, refused)
    check = check_credentials(CLOUD)
    assert check.result == "fail"
    assert "gcloud auth application-default login" in check.detail
    assert "expired or revoked" in check.detail
