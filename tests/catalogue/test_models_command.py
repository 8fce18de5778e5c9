"""`vertexbatch models`: the catalogue listed, in words and as JSON (reads no cloud)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from vertexbatch._catalogue import catalogue
from vertexbatch._command.cli import main
from vertexbatch._providers import of_model


def test_models_lists_every_catalogued_model_with_its_facts() -> None:
    shown = CliRunner().invoke(main, ["models"])
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert [line.split()[0] for line in lines] == [model.id for model in catalogue()]
    opus = next(line for line in lines if line.startswith("claude-opus-5-5 "))
    assert "anthropic" in opus and "batch=yes" in opus and "flex=no" in opus
    assert "locations=eu,global,us" in opus and "schema=tool" in opus
    assert "$4 in / $20 out / $0.2 cache read / $5 cache write" in opus
    # Launch rates carry the last day they hold.
    flash = next(line for line in lines if line.startswith("gemini-3.8-flash "))
    assert flash.endswith("$0.75 in / $3.75 out / $0.075 cache read, until 2026-12-31")
    fable = next(line for line in lines if line.startswith("claude-fable-5-2 "))
    assert fable.endswith("unknown")  # no page prices it
    assert f"{len(lines)} models" in shown.stderr


def test_models_json_gives_each_fact_with_its_sources() -> None:
    shown = CliRunner().invoke(main, ["models", "--json", "--publisher", "google"])
    assert shown.exit_code == 0, shown.output
    records = [json.loads(line) for line in shown.stdout.splitlines()]
    assert records and {r["publisher"] for r in records} == {"google"}
    flash = next(r for r in records if r["id"] == "gemini-2.5-flash")
    assert flash["batch"] is True and flash["flex"] is False
    assert flash["rates"] == {
        "input": 0.3, "output": 2.5, "cache_read": 0.03, "cache_write": None, "above": None,
        "until": None,
    }  # fmt: skip
    # A model priced in bands by prompt size gives its band over the threshold.
    pro = next(r for r in records if r["id"] == "gemini-2.5-pro")
    assert pro["rates"]["above"] == {
        "prompt_tokens": 200_000, "input": None, "output": None, "cache_read": None,
        "cache_write": None,
    }  # fmt: skip
    launch = next(r for r in records if r["id"] == "gemini-3.8-flash")
    assert launch["rates"]["until"] == "2026-12-31"  # an ISO day, JSON-ready
    assert all(s["url"].startswith("https://") and s["read"] for s in flash["sources"])
    assert set(flash) == {
        "id", "name", "publisher", "batch", "locations", "rates", "flex", "concurrent_jobs",
        "job_rows", "job_bytes", "structured_output", "sources",
    }  # fmt: skip
    # Gemini's batch page: 200,000 requests and 1 GB a job; no quota of jobs at once.
    assert (flash["job_rows"], flash["job_bytes"]) == (200_000, 1_000_000_000)
    assert flash["concurrent_jobs"] is None and flash["structured_output"] == "responseSchema"


def test_models_refuses_an_unknown_publisher() -> None:
    shown = CliRunner().invoke(main, ["models", "--publisher", "meta"])
    assert shown.exit_code == 2 and "meta" in shown.output


@pytest.mark.parametrize(
    ("lane", "expected"),
    [
        ("embeddings", {"gemini-embedding-001", "gemini-embedding-2", "text-embedding-005"}),
        ("openmaas", {"meta/llama-3.3-70b-instruct-maas", "meta/llama-3.1-8b-instruct-maas"}),
    ],
)
def test_models_keeps_one_lane_s_models(lane: str, expected: set[str]) -> None:
    """A lane's name keeps its models: Google's embedding models, the open models (whose
    publisher, ``meta``, their ids name)."""
    shown = CliRunner().invoke(main, ["models", "--json", "--publisher", lane])
    assert shown.exit_code == 0, shown.output
    ids = {json.loads(line)["id"] for line in shown.stdout.splitlines()}
    assert expected <= ids
    assert all(of_model(model).provider == lane for model in ids)  # type: ignore[union-attr]
