"""Which Vertex AI host serves a location: the one place a ``*aiplatform*.googleapis.com`` host is
built (pure; tests/guards/test_hosts.py fails on any other module that writes one).

Three kinds of location, three forms of host:

    a region     us-east5, europe-west4   {region}-aiplatform.googleapis.com
    a multi-     us, eu                   aiplatform.{us|eu}.rep.googleapis.com
    region
    global       global                   aiplatform.googleapis.com

Sources (read 2026-12-07):

- Multi-region endpoints: Google's locations page for generative AI on Vertex
  (https://docs.cloud.google.com/gemini-enterprise-agent-platform/resources/locations, "Multi-
  region endpoints"): the United States (``us``) at ``https://aiplatform.us.rep.googleapis.com``,
  the European Union (``eu``) at ``https://aiplatform.eu.rep.googleapis.com``
  (``API_ENDPOINT="https://aiplatform.${GOOGLE_CLOUD_LOCATION}.rep.googleapis.com"``).
- The global endpoint: https://cloud.google.com/vertex-ai/generative-ai/docs/learn/locations
  ("Use the global endpoint": "exclude the location from the endpoint name", e.g.
  ``https://aiplatform.googleapis.com/v1/projects/test-project/locations/global/...``).
- A region: https://cloud.google.com/vertex-ai/docs/general/locations ("use the appropriate
  regional endpoint", e.g. ``https://europe-west4-aiplatform.googleapis.com``).

The SDKs agree: google-cloud-aiplatform 2.7 (``utils.mrep_endpoint``, ``constants.
MREP_JURISDICTIONS = {"us", "eu"}``), google-genai 2.34 (``_MULTI_REGIONAL_LOCATIONS``) and
anthropic 2.17 (``AnthropicVertex``'s ``base_url`` for ``us``/``eu``/``global``).

Every call vertexbatch makes to Vertex on Google Cloud starts here: the jobs client
(``_lifecycle``), the online fallback and count-tokens (which follow the jobs client's endpoint,
``_vertex.online``), doctor's Model Garden lookups and probe's REST session (``_checks``).
"""

from __future__ import annotations

__all__ = ["GLOBAL", "MULTI_REGIONS", "is_multi_region", "vertex_base_url", "vertex_host"]

GLOBAL = "global"
MULTI_REGIONS = ("us", "eu")
"""The multi-region locations Vertex serves on a ``.rep.`` host (the jurisdictions above)."""

_SERVICE = "aiplatform"
_DOMAIN = "googleapis.com"


def is_multi_region(location: str) -> bool:
    """Whether ``location`` is a multi-region (``us``, ``eu``): served on its ``.rep.`` host."""
    return location in MULTI_REGIONS


def vertex_host(location: str) -> str:
    """The Vertex AI host of ``location``: ``aiplatform.googleapis.com`` for ``global``,
    ``aiplatform.{us|eu}.rep.googleapis.com`` for a multi-region, else
    ``{location}-aiplatform.googleapis.com``."""
    if location == GLOBAL:
        return f"{_SERVICE}.{_DOMAIN}"
    if is_multi_region(location):
        return f"{_SERVICE}.{location}.rep.{_DOMAIN}"
    return f"{location}-{_SERVICE}.{_DOMAIN}"


def vertex_base_url(location: str) -> str:
    """``https://`` and the host of ``location`` (no version, no trailing slash)."""
    return f"https://{vertex_host(location)}"
