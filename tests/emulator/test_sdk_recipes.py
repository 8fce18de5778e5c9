"""The SDK recipes of docs/testing.md (docs/examples/sdks/), run against the session stack, and
the SDK gaps the stack reproduces."""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from google.api_core import exceptions as gexc

from vertexbatch.emulator import LocalStack, Timing

RECIPES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "sdks"


def _recipe(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"recipe_{name}", RECIPES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Collected here, run with this suite's `stack` and `bucket` fixtures.
test_raw_aiplatform_v1 = _recipe("aiplatform_v1_recipe").test_raw_aiplatform_v1
test_high_level_aiplatform = _recipe("aiplatform_recipe").test_high_level_aiplatform
test_vertexai_batch_prediction = _recipe("vertexai_recipe").test_vertexai_batch_prediction
test_google_genai = _recipe("genai_recipe").test_google_genai


def test_aiplatform_init_restores_what_it_changes(stack: LocalStack) -> None:
    """aiplatform's global configuration and STORAGE_EMULATOR_HOST are as before once the block
    ends, also when it raises; inside, both point at the stack."""
    from google.cloud.aiplatform import initializer

    before = dict(vars(initializer.global_config))
    previous = os.environ.get("STORAGE_EMULATOR_HOST")
    with pytest.raises(RuntimeError, match="inside"), stack.aiplatform_init() as aiplatform:
        assert initializer.global_config.api_endpoint == stack.vertex_endpoint
        assert initializer.global_config.project == stack.project
        assert os.environ["STORAGE_EMULATOR_HOST"] == stack.storage_endpoint
        assert aiplatform.__name__ == "google.cloud.aiplatform"
        raise RuntimeError("inside")
    assert dict(vars(initializer.global_config)) == before
    assert os.environ.get("STORAGE_EMULATOR_HOST") == previous


def test_genai_client_is_configured(stack: LocalStack) -> None:
    """genai_client() is a Vertex-mode client at the stack, v1 or v1beta1."""
    for version in ("v1", "v1beta1"):
        client = stack.genai_client(version)
        assert client.vertexai
        assert list(client.batches.list(config={"filter": 'display_name="none-such"'})) == []


@pytest.mark.processes
def test_wait_for_completion_never_returns_on_expired(lab_factory: Any) -> None:
    """aiplatform's wait_for_completion() knows no JOB_STATE_EXPIRED (its complete states are
    SUCCEEDED, FAILED, CANCELLED, PAUSED): on an expired job it polls on. The stack reproduces
    it: the SDK sees EXPIRED, then asks again; the test ends the loop by failing that call."""
    with LocalStack(timing=Timing(expire_seconds=0.0, row_seconds=1.0)) as stack:
        stack.create_bucket("expiring")
        lab = lab_factory(stack, "expiring")
        job = lab.create([lab.gemini_line("a"), lab.gemini_line("b", key="k2")])
        assert stack.wait_job(job.name)["state"] == "JOB_STATE_EXPIRED"
        errors: list[BaseException] = []
        with stack.aiplatform_init() as aiplatform:
            high = aiplatform.BatchPredictionJob(job.name)
            stack.faults.block("get", when="before")

            def wait() -> None:
                try:
                    high.wait_for_completion()
                except BaseException as exc:  # the injected 400 below
                    errors.append(exc)

            waiter = threading.Thread(target=wait, daemon=True)
            waiter.start()
            stack.faults.wait_blocked("get", timeout=30)  # its first look: EXPIRED
            stack.faults.unblock("get")
            stack.faults.block("get", when="before")
            stack.faults.wait_blocked("get", timeout=60)  # it polls again (after 5 s): no end
            stack.faults.fail("get", status=400)
            stack.faults.unblock("get")
            waiter.join(30)
        assert not waiter.is_alive() and isinstance(errors[0], gexc.BadRequest)
