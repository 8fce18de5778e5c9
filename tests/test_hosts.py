"""``_hosts.vertex_host``: each kind of location and its Vertex AI host (Google's locations pages,
the sources in vertexbatch/_hosts.py)."""

from __future__ import annotations

import pytest

from vertexbatch._hosts import MULTI_REGIONS, is_multi_region, vertex_base_url, vertex_host


@pytest.mark.parametrize(
    ("location", "host"),
    [
        ("us-east5", "us-east5-aiplatform.googleapis.com"),
        ("europe-west4", "europe-west4-aiplatform.googleapis.com"),
        ("us-central1", "us-central1-aiplatform.googleapis.com"),
        ("us", "aiplatform.us.rep.googleapis.com"),
        ("eu", "aiplatform.eu.rep.googleapis.com"),
        ("global", "aiplatform.googleapis.com"),
    ],
)
def test_each_location_has_its_host(location: str, host: str) -> None:
    assert vertex_host(location) == host
    assert vertex_base_url(location) == f"https://{host}"


def test_the_multi_regions_are_us_and_eu() -> None:
    assert MULTI_REGIONS == ("us", "eu")
    assert is_multi_region("us") and is_multi_region("eu")
    # A region whose name starts like a multi-region is a region.
    assert not is_multi_region("us-east5") and not is_multi_region("europe-west1")
    assert not is_multi_region("global") and not is_multi_region("asia")


def test_the_sdks_agree_on_every_kind_of_location() -> None:
    """google-cloud-aiplatform and google-genai build the same hosts (their own rules, read from
    the installed packages)."""
    from google.cloud.aiplatform import constants, utils
    from google.genai import _api_client

    assert set(constants.base.MREP_JURISDICTIONS) == set(MULTI_REGIONS)
    assert set(_api_client._MULTI_REGIONAL_LOCATIONS) == set(MULTI_REGIONS)
    for location in MULTI_REGIONS:
        assert utils.mrep_endpoint(constants.base.API_BASE_PATH, location) == vertex_host(location)
