"""doctor per failure kind: a lookup that cannot connect or times out says so and names the
network fix (no role, no API to enable); one refused (403) names the role; a model not found
(404) fails; every model given is checked and each one that is not ok is named."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from tests.helpers import free_ports
from vertexbatch._checks.doctor import NETWORK_FIX, check_model
from vertexbatch._checks.doctor_access import check_job_create
from vertexbatch._checks.doctor_run import lookups
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode
from vertexbatch._config import Config
from vertexbatch.emulator import LocalStack

MODELS = ["claude-opus-5-5@default", "claude-opus-0-1@default", "gemini-3.8-flash", "gpt-4"]


def _config(endpoint: str) -> Config:
    return Config("local-project", "us-central1", "b", "jobs", endpoint, endpoint)


def _closed() -> str:
    return f"http://127.0.0.1:{free_ports(1)[0]}"


def test_a_lookup_that_cannot_connect_says_so_with_the_network_fix() -> None:
    """Connection refused: the model and job-create lines say so and give the network fix."""
    config = _config(_closed())
    clients = lookups(config)
    model = check_model(config, ["claude-opus-5-5@default", "gemini-3.8-flash"], clients.garden)
    assert model.result == "warn"
    assert "claude-opus-5-5 (cannot connect), gemini-3.8-flash (cannot connect)" in model.detail
    assert NETWORK_FIX.rstrip(".") in model.detail
    assert "roles/" not in model.detail
    job_create = check_job_create(clients.projects, "local-project")
    assert job_create.result == "warn"
    assert (
        job_create.detail
        == f"cannot tell: Resource Manager did not answer (cannot connect): {NETWORK_FIX}"
    )


def test_a_lookup_that_times_out_says_so_with_the_network_fix(stack: LocalStack) -> None:
    """A Model Garden that does not answer in time: timed out, the network fix, no role."""
    stack.faults.delay("getPublisherModel", 2.0)
    config = _config(stack.vertex_endpoint)
    found = check_model(config, ["gemini-3.8-flash"], lookups(config).garden, timeout=0.2)
    assert found.result == "warn"
    assert found.detail.startswith("Model Garden did not answer for gemini-3.8-flash (timed out)")
    assert "roles/" not in found.detail


def test_a_refused_lookup_names_the_role(stack: LocalStack) -> None:
    """403: Model Garden answered, so the fix is the role, not the network."""
    stack.faults.fail("getPublisherModel", status=403)
    config = _config(stack.vertex_endpoint)
    found = check_model(config, ["gemini-3.8-flash"], lookups(config).garden)
    assert found.result == "warn"
    assert "cannot tell whether gemini-3.8-flash" in found.detail
    assert "roles/aiplatform.user" in found.detail and "network" not in found.detail


def test_every_model_given_is_checked_and_each_bad_one_named(stack: LocalStack) -> None:
    """404 and a malformed id both fail, and the line names each, the good ones too."""
    stack.reset_calls()
    config = _config(stack.vertex_endpoint)
    found = check_model(config, MODELS, lookups(config).garden)
    assert found.result == "fail"
    assert "claude-opus-0-1 is not found for publisher anthropic in Model Garden" in found.detail
    assert "model 'gpt-4' is neither a Claude nor a Gemini model id" in found.detail
    assert "claude-opus-5-5 exists for publisher anthropic" in found.detail
    assert "gemini-3.8-flash exists for publisher google" in found.detail
    assert stack.calls()["getPublisherModel"] == 3  # all but the malformed one


def test_doctor_with_nothing_listening_gives_the_network_fix_only() -> None:
    """The whole command against endpoints nobody serves: every line that failed to connect
    says so with the network fix; none says to grant a role or enable an API."""
    endpoint = _closed()
    env = {
        "GOOGLE_CLOUD_PROJECT": "local-project",
        "GOOGLE_CLOUD_LOCATION": "us-central1",
        "VERTEXBATCH_BUCKET": "b",
        "VERTEXBATCH_VERTEX_ENDPOINT": endpoint,
        "STORAGE_EMULATOR_HOST": endpoint,
    }
    result = CliRunner().invoke(main, ["doctor"], env=env, catch_exceptions=False)
    assert result.exit_code == ExitCode.CHECK_FAILED
    lines = {line.split()[1]: line for line in result.output.splitlines()}
    for name in ("vertex", "job-create", "bucket", "model"):
        assert (
            "cannot connect" in lines[name] and "check the endpoint and the network" in lines[name]
        )
    assert "roles/" not in result.output and "enable " not in result.output


@pytest.mark.parametrize("models", [["gpt-4", "gemini-9"], ["claude-opus-0-1@default"]])
def test_the_command_names_every_bad_model(stack_env: str, models: list[str]) -> None:
    """`doctor --model A --model B` names both when both are bad."""
    args = ["doctor", *(arg for model in models for arg in ("--model", model))]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == ExitCode.CHECK_FAILED
    line = next(line for line in result.output.splitlines() if line.split()[1] == "model")
    for model in models:
        assert model.partition("@")[0] in line
