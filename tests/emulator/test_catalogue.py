"""The local stack serves vertexbatch's model catalogue (issue 40, item 7): every anthropic and
google row of ``vertexbatch/_catalogue/models.toml`` in the locations it lists, the ids the tests
use everywhere, and a model outside it is Vertex's 404 saying it is not in the local catalogue
and how to add it (``LocalStack.add_model``, ``vertexbatch emulator --model``)."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest
from google.api_core import exceptions as gexc

from tests.emulator.test_stack import FlushedOutput
from vertexbatch._catalogue import catalogue
from vertexbatch.emulator import DEFAULT_MODELS, LocalStack, run_foreground
from vertexbatch.emulator._catalogue import PUBLISHERS, Catalogue, catalogued, model_option
from vertexbatch.emulator._errors import ApiError


def _rows() -> list[Any]:
    """(publisher, bare id, locations) of the catalogue's rows the stack serves: an open model's
    publisher read from its PUBLISHER/MODEL id."""
    rows = []
    for row in catalogue():
        publisher, model = row.publisher, row.id
        if "/" in model:
            publisher, _, model = model.partition("/")
        if publisher in PUBLISHERS:
            rows.append(SimpleNamespace(publisher=publisher, id=model, locations=row.locations))
    return rows


def test_the_default_catalogue_holds_every_catalogued_model_and_the_test_ids() -> None:
    """Every row of the client's catalogue (whatever models.toml holds) and every DEFAULT_MODELS
    id; a DEFAULT_MODELS id is served everywhere, another row where the catalogue lists it."""
    held = Catalogue()
    assert {(p, m) for p, m, _ in catalogued()} == {(r.publisher, r.id) for r in _rows()}
    assert ("meta", "llama-3.3-70b-instruct-maas") in {(r.publisher, r.id) for r in _rows()}
    for row in _rows():
        assert held.holds(row.publisher, row.id)
        assert held.holds(row.publisher, f"{row.id}@default")
        default = row.id in DEFAULT_MODELS.get(row.publisher, ())
        where = held.locations(row.publisher, row.id)
        assert where == (None if default or not row.locations else frozenset(row.locations))
        for location in row.locations:
            held.check("1", location, row.publisher, row.id)
    for publisher, ids in DEFAULT_MODELS.items():
        for model in ids:
            assert held.locations(publisher, model) is None
            held.check("1", "us-central1", publisher, model)
            held.check("1", "europe-west4", publisher, model)
    served = LocalStack().locations.names()  # not started: nothing runs
    assert all(location in served for row in _rows() for location in row.locations)
    assert Catalogue({}).listed_locations() == frozenset()
    only = Catalogue({"google": ["gemini-9"]})
    assert only.models() == {"anthropic": (), "google": ("gemini-9",)}


def test_a_model_served_in_some_locations_is_404_elsewhere_naming_them() -> None:
    """A row's locations are enforced with Vertex's 404, the message saying where it is served;
    add_model without locations serves it everywhere."""
    held = Catalogue({})
    held.add("google", "gemini-9-pro", ["europe-west4", "global"])
    held.check("1", "europe-west4", "google", "gemini-9-pro@001")
    with pytest.raises(ApiError) as caught:
        held.check("1", "us-central1", "google", "gemini-9-pro@001")
    message = caught.value.message
    assert caught.value.code == 404
    assert message.startswith(
        "The PublisherModel projects/1/locations/us-central1/publishers/google/models/"
        "gemini-9-pro@001 does not exist. (Local stack: its catalogue serves "
        "google/gemini-9-pro in europe-west4, global, not in us-central1"
    )
    held.add("google", "gemini-9-pro")
    held.check("1", "us-central1", "google", "gemini-9-pro")
    with pytest.raises(ValueError, match="locations"):
        held.add("google", "gemini-9-pro", [])


def test_an_unknown_model_is_vertexs_404_with_the_way_to_add_it(lab: Any) -> None:
    """Through aiplatform_v1: Vertex's message first, then the local stack's hint."""
    with pytest.raises(gexc.NotFound) as caught:
        lab.create(model="publishers/google/models/gemini-0.1-nowhere@001")
    message = caught.value.message
    assert (
        f"The PublisherModel projects/{lab.stack.project_number}/locations/us-central1/"
        "publishers/google/models/gemini-0.1-nowhere@001 does not exist." in message
    )
    assert "not in the local stack's model catalogue" in message
    assert "LocalStack.add_model('google', 'gemini-0.1-nowhere')" in message
    assert "`vertexbatch emulator --model google/gemini-0.1-nowhere`" in message


def test_a_model_added_for_some_locations_is_served_only_there(lab: Any) -> None:
    """Through aiplatform_v1: created where served, refused elsewhere naming where."""
    stack: LocalStack = lab.stack
    stack.add_model("google", "gemini-9-regional", locations=["europe-west4"])
    try:
        model = "publishers/google/models/gemini-9-regional"
        here = lab.create(model=model, parent=f"projects/{stack.project}/locations/europe-west4")
        assert stack.wait_job(here.name)["state"] == "JOB_STATE_SUCCEEDED"
        with pytest.raises(gexc.NotFound, match="serves google/gemini-9-regional in europe-west4"):
            lab.create(model=model)
    finally:
        stack.catalogue.remove("google", "gemini-9-regional")


def test_a_catalogued_model_runs_in_a_location_the_catalogue_lists(lab: Any) -> None:
    """Each catalogue row (whatever models.toml holds) creates and runs a job in the first
    regional location its row lists (Claude batch is not served on `global`), or `global` for a
    row served only there."""
    stack: LocalStack = lab.stack
    for row in _rows():
        regional = sorted(n for n in row.locations if n != "global") or sorted(row.locations)
        regional = regional or ["us-central1"]
        line = lab.claude_line("hi") if row.publisher == "anthropic" else lab.gemini_line("hi")
        job = lab.create(
            [line],
            model=f"publishers/{row.publisher}/models/{row.id}",
            parent=f"projects/{stack.project}/locations/{regional[0]}",
        )
        assert stack.wait_job(job.name)["state"] == "JOB_STATE_SUCCEEDED", row.id


def test_model_option_parses_publisher_and_model() -> None:
    """`--model PUBLISHER/MODEL`; anything else is a ValueError starting "model "."""
    assert model_option("google/gemini-3.5-flash") == ("google", "gemini-3.5-flash")
    assert model_option("anthropic/claude-x@20251001") == ("anthropic", "claude-x@20251001")
    for bad in ("gemini-3.5-flash", "nobody/llama", "google/", "google/a/b", "/x"):
        with pytest.raises(ValueError, match=r"^model .* must be PUBLISHER/MODEL"):
            model_option(bad)


def test_the_command_refuses_a_bad_model_before_anything_starts() -> None:
    """`vertexbatch emulator --model x` is a usage error naming the flag."""
    from click.testing import CliRunner

    from vertexbatch._command.cli import main

    result = CliRunner().invoke(main, ["emulator", "--model", "gemini-3.5-flash"])
    assert result.exit_code == 2
    assert "--model: model 'gemini-3.5-flash' must be PUBLISHER/MODEL" in result.output


@pytest.mark.processes
def test_run_foreground_serves_the_models_it_is_given() -> None:
    """run_foreground(models=...) (the command's --model) serves them: a create succeeds."""
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import aiplatform_v1

    out = FlushedOutput()
    stop = threading.Event()
    kwargs = {"out": out, "stop": stop, "models": ["google/gemini-9-added"]}
    runner = threading.Thread(target=run_foreground, kwargs=kwargs)
    runner.start()
    try:
        assert out.flushed.wait(10)
        exports = dict(
            line.removeprefix("export ").split("=", 1) for line in out.getvalue().splitlines()
        )
        garden = aiplatform_v1.ModelGardenServiceClient(
            transport="rest",
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options=ClientOptions(api_endpoint=exports["VERTEXBATCH_VERTEX_ENDPOINT"]),
        )
        found = garden.get_publisher_model(name="publishers/google/models/gemini-9-added")
        assert found.name == "publishers/google/models/gemini-9-added"
        with pytest.raises(gexc.NotFound, match="--model google/gemini-9-other"):
            garden.get_publisher_model(name="publishers/google/models/gemini-9-other")
    finally:
        stop.set()
        runner.join(10)
    assert not runner.is_alive()
