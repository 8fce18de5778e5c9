"""``vertexbatch probe --multi-region``: a batch create on ``us`` / ``eu``, reported and cancelled,
through the real entry points against the local stack (which serves both multi-regions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from vertexbatch._checks.probe import PROBE_MODELS
from vertexbatch._checks.probe_regions import check_regions, probe_regions
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode
from vertexbatch.emulator import LocalStack


def test_only_a_multi_region_is_probed() -> None:
    assert check_regions(["eu", "us", "eu"]) == ("eu", "us")
    for location in ("us-east5", "global", "US", "asia"):
        with pytest.raises(vb.InvalidRequestError, match=f"multi-region {location!r}"):
            check_regions([location])


def test_each_multi_region_create_is_reported_and_cancelled(
    stack: LocalStack, stack_env: str
) -> None:
    stack.reset_calls()
    said: list[str] = []
    # The lanes ``vertexbatch probe --multi-region`` probes (PROBE_MODELS also names the
    # embeddings lane's model, whose catalogued locations are regions only).
    models = {name: PROBE_MODELS[name] for name in ("claude", "gemini")}
    report = probe_regions(stack.environment(stack_env), models=models, progress=said.append)
    assert set(report["locations"]) == {"us", "eu"}
    for location, lanes in report["locations"].items():
        assert set(lanes) == {"claude", "gemini"}
        for entry in lanes.values():
            assert entry["accepted"] is True
            assert f"/locations/{location}/batchPredictionJobs/" in entry["job"]
            assert entry["cancel"] in ("requested", "already ended")
    calls = stack.calls()
    assert calls["create"] == 4 and calls["cancel"] == 4
    made = {job["name"] for job in stack.jobs()}
    assert {e["job"] for lanes in report["locations"].values() for e in lanes.values()} <= made
    assert sum("cancelling" in line for line in said) == 4


def test_a_refused_create_is_reported_with_its_code_and_status(
    stack: LocalStack, stack_env: str
) -> None:
    stack.faults.fail("create", status=400)
    report = probe_regions(stack.environment(stack_env), locations=["eu"])
    refused = report["locations"]["eu"]["claude"]
    assert refused["accepted"] is False
    assert refused["code"] == 400 and refused["status"] and refused["message"]
    assert report["locations"]["eu"]["gemini"]["accepted"] is True


def test_the_command_writes_the_report_and_says_each_verdict(
    stack: LocalStack, stack_env: str, tmp_path: Path
) -> None:
    out = tmp_path / "regions.json"
    args = ["probe", "--yes", "--out", str(out), "--multi-region", "us"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == ExitCode.OK, result.output
    assert "us claude: batch create accepted" in result.output
    assert "us gemini: batch create accepted" in result.output
    report = json.loads(out.read_text())
    assert report["vertexbatch_probe_regions"] == 1 and list(report["locations"]) == ["us"]
    refused = CliRunner().invoke(main, [*args[:-1], "global"])
    assert refused.exit_code == ExitCode.USAGE
