"""Batch in ``global``: where the catalogue and the provider's row allow it, refused elsewhere
before any cloud call, naming the model, the location and where the model is served.

The rule (``_providers.batch_location_refusal``) is pure and tested with this file's own
catalogue rows; ``check_batch_location`` and the ``Client`` read the catalogue, here replaced by
the test's rows (``models.toml`` changes as Google's pages do: no test here depends on it).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import vertexbatch as vb
from tests.helpers import claude_request, gemini_requests, global_client
from vertexbatch._catalogue import Model, Source, catalogue_of
from vertexbatch._providers import (
    GLOBAL_BATCH_SOURCE,
    PROVIDERS,
    batch_location_refusal,
    check_batch_location,
)
from vertexbatch.emulator import LocalStack

SOURCE = Source("https://example.com/gemini-locations", "2026-12-07")
EVERYWHERE = Model(
    "gemini-test-everywhere", "google", True, frozenset({"us-central1", "global"}), None, False,
    (SOURCE,),
)  # fmt: skip
REGIONAL = Model(
    "gemini-test-regional", "google", True, frozenset({"europe-west4", "us-central1"}), None,
    False, (SOURCE,),
)  # fmt: skip
CLAUDE_ROW = Model(
    "claude-test-model", "anthropic", True, frozenset({"us-east5", "global"}), None, False,
    (SOURCE,),
)  # fmt: skip
CLAUDE, GEMINI = PROVIDERS["anthropic"], PROVIDERS["google"]


@pytest.fixture
def own_catalogue() -> Iterator[None]:
    """The catalogue holds this file's rows only."""
    with catalogue_of((EVERYWHERE, REGIONAL, CLAUDE_ROW)):
        yield


@pytest.mark.parametrize("location", ["us-central1", "europe-west4", "us", "eu", "asia-east1"])
def test_a_region_or_multi_region_is_never_refused(location: str) -> None:
    for row, entry in ((GEMINI, REGIONAL), (GEMINI, None), (CLAUDE, CLAUDE_ROW), (CLAUDE, None)):
        assert batch_location_refusal(row, entry, "any-model", location) is None


def test_global_takes_a_catalogued_gemini_model_served_there() -> None:
    assert batch_location_refusal(GEMINI, EVERYWHERE, "gemini-test-everywhere", "global") is None


def test_global_takes_a_gemini_model_the_catalogue_does_not_hold() -> None:
    assert batch_location_refusal(GEMINI, None, "gemini-9-new", "global") is None


def test_global_refuses_a_catalogued_model_not_served_there_naming_where_it_is() -> None:
    why = batch_location_refusal(GEMINI, REGIONAL, "gemini-test-regional@001", "global")
    assert why is not None
    assert "'gemini-test-regional@001'" in why and "'global'" in why
    assert "europe-west4, us-central1" in why and SOURCE.url in why


def test_global_refuses_claude_batch_whatever_the_catalogue_says() -> None:
    """Google lists batch prediction for Anthropic models among the global endpoint's
    limitations: a row listing ``global`` (served online there) does not make batch run."""
    for entry in (CLAUDE_ROW, None):
        why = batch_location_refusal(CLAUDE, entry, "claude-test-model", "global")
        assert why is not None
        assert "'claude-test-model'" in why and "'global'" in why and GLOBAL_BATCH_SOURCE in why
    served = batch_location_refusal(CLAUDE, CLAUDE_ROW, "claude-test-model", "global")
    assert served is not None and "global, us-east5" in served


def test_the_check_reads_the_catalogue(own_catalogue: None) -> None:
    check_batch_location("gemini-test-everywhere", "google", "global")
    check_batch_location("gemini-9-new", "google", "global")  # not catalogued: not refused
    check_batch_location("gemini-test-regional", "google", "europe-west4")
    with pytest.raises(vb.InvalidRequestError, match="europe-west4, us-central1") as caught:
        check_batch_location("gemini-test-regional", "google", "global")
    assert caught.value.field == "location"


def test_a_client_in_global_refuses_before_any_cloud_call(
    own_catalogue: None, stack: LocalStack, bucket: str
) -> None:
    """submit, plan and run refuse a model not served in ``global`` with nothing staged and no
    Vertex call; a model served there, or not catalogued, is planned."""
    client = global_client(stack, bucket)
    stack.reset_calls()
    refused = [
        lambda: client.submit_gemini("g1", "gemini-test-regional", gemini_requests(2)),
        lambda: client.plan_gemini("g2", "gemini-test-regional", gemini_requests(2)),
        lambda: client.run_gemini("g3", "gemini-test-regional", gemini_requests(2)),
        lambda: client.submit_claude("c1", "claude-test-model", [claude_request("k", "hi")]),
    ]
    for call in refused:
        with pytest.raises(vb.InvalidRequestError, match="'global'"):
            call()
    assert sum(stack.calls().values()) == 0
    assert list(stack.storage_client().list_blobs(bucket)) == []
    assert client.plan_gemini("g4", "gemini-test-everywhere", gemini_requests(2)).requests == 2
    assert client.plan_gemini("g5", "gemini-9-new", gemini_requests(2)).requests == 2
    client.close()
