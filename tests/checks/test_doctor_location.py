"""doctor's ``location`` check: multi-regions, and each ``--model``'s catalogue row.

The catalogue is this file's own rows (``models.toml`` changes as Google's pages do).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from vertexbatch._catalogue import Model, Source, catalogue_of
from vertexbatch._checks.doctor_location import check_location
from vertexbatch._command.cli import main
from vertexbatch._config import Config
from vertexbatch.emulator import LocalStack

SOURCE = Source("https://example.com/locations", "2026-12-07")
GEMINI_EU = Model(
    "gemini-test-eu", "google", True, frozenset({"eu", "europe-west4", "global"}), None, False,
    (SOURCE,),
)  # fmt: skip
GEMINI_REGIONAL = Model(
    "gemini-test-regional", "google", True, frozenset({"us-central1"}), None, False, (SOURCE,)
)
CLAUDE_ROW = Model(
    "claude-test-model", "anthropic", True, frozenset({"us-east5", "global"}), None, False,
    (SOURCE,),
)  # fmt: skip


@pytest.fixture
def own_catalogue() -> Iterator[None]:
    with catalogue_of((GEMINI_EU, GEMINI_REGIONAL, CLAUDE_ROW)):
        yield


def _check(location: str, *models: str) -> tuple[str, str]:
    single = models[0] if len({m.split("-")[0] for m in models}) == 1 else None
    check = check_location(Config("p", location, "b"), single, models=models)
    return check.result, check.detail


@pytest.mark.parametrize(
    ("location", "host"),
    [("us", "aiplatform.us.rep.googleapis.com"), ("eu", "aiplatform.eu.rep.googleapis.com")],
)
def test_a_multi_region_warns_naming_its_host_and_the_probe(location: str, host: str) -> None:
    result, detail = _check(location)
    assert result == "warn"
    assert host in detail and f"vertexbatch probe --multi-region {location}" in detail


def test_a_model_listed_in_the_location_keeps_the_forms_verdict(own_catalogue: None) -> None:
    assert _check("europe-west4", "gemini-test-eu")[0] == "ok"
    assert _check("global", "gemini-test-eu") == ("ok", "global (Gemini batch runs there)")
    assert _check("eu", "gemini-test-eu")[0] == "warn"  # a multi-region: batch unstated


def test_a_model_not_listed_in_a_region_warns_naming_where_it_is(own_catalogue: None) -> None:
    result, detail = _check("europe-west4", "gemini-test-eu", "gemini-test-regional")
    assert result == "warn"
    assert "does not list europe-west4 for gemini-test-regional" in detail
    assert "lists it in us-central1" in detail and "gemini-test-eu" not in detail


def test_global_fails_for_a_model_not_served_there_and_for_claude(own_catalogue: None) -> None:
    result, detail = _check("global", "gemini-test-regional")
    assert result == "fail"
    assert "'gemini-test-regional' is not served in location 'global'" in detail
    assert "us-central1" in detail and SOURCE.url in detail
    result, detail = _check("global", "gemini-test-eu", "claude-test-model")
    assert result == "fail" and "Claude batch jobs need a region" in detail


def test_a_model_the_catalogue_does_not_hold_gets_no_verdict(own_catalogue: None) -> None:
    assert _check("us-central1", "gemini-9-new")[0] == "ok"
    assert _check("global", "gemini-9-new")[0] == "ok"


def test_doctor_reports_the_catalogue_verdict(
    own_catalogue: None, stack: LocalStack, stack_env: str
) -> None:
    """Through the command on the stack (its location us-central1): a named model the catalogue
    does not list there is a warn on the location line."""
    result = CliRunner().invoke(main, ["doctor", "--model", "gemini-test-eu"])
    line = next(row for row in result.output.splitlines() if row.split()[1:2] == ["location"])
    assert line.startswith("warn ") and "does not list us-central1 for gemini-test-eu" in line
