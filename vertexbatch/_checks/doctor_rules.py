"""The pure rules behind ``vertexbatch doctor``'s bucket and IAM checks (table-tested).

- ``bucket_location_fit``: whether a bucket's location is one a job's region can use. The rule
  is Vertex's batch-prediction one (https://cloud.google.com/vertex-ai/docs/predictions/
  get-batch-predictions, "Limitations and requirements"): input and output in the job's region
  or in a multi-region containing it ("if your input is in us-central1, your output can be in
  us-central1 or US, but not europe-west4"). Containment follows Cloud Storage's locations page:
  ``US`` holds the ``us-*`` regions, ``EU`` the ``europe-*`` regions inside the European Union
  (not ``europe-west2`` London or ``europe-west6`` Zurich), ``ASIA`` the ``asia-*`` regions;
  a dual-region holds its two regions (``NAM4``, ``EUR4``, ``ASIA1``, or a configurable one's
  ``dataLocations``).
- ``agent_grants``: which of read (``storage.objects.get``) and create
  (``storage.objects.create``) a bucket IAM policy grants a member, through the predefined
  roles whose permissions are documented; a custom role or a conditional binding is "cannot
  tell", never a guess.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .._hosts import MULTI_REGIONS as JOB_MULTI_REGIONS  # Vertex's: a job's location

__all__ = [
    "AGENT_ROLE",
    "GENAI_REGIONS",
    "GENAI_REGIONS_SOURCE",
    "Fit",
    "Grants",
    "agent_grants",
    "bucket_location_fit",
    "service_agent",
]

Fit = Literal["ok", "warn", "fail"]

READ, CREATE = "storage.objects.get", "storage.objects.create"
AGENT_ROLE = "roles/storage.objectViewer and roles/storage.objectCreator"
"""The roles doctor's fix grants the service agent on the bucket (docs/operations.md's)."""

GENAI_REGIONS = frozenset(
    {
        "us-central1", "us-east1", "us-east4", "us-east5", "us-south1", "us-west1", "us-west4",
        "northamerica-northeast1", "southamerica-east1",
        "europe-central2", "europe-north1", "europe-southwest1", "europe-west1", "europe-west2",
        "europe-west3", "europe-west4", "europe-west6", "europe-west8", "europe-west9",
        "asia-east1", "asia-east2", "asia-northeast1", "asia-northeast3", "asia-south1",
        "asia-southeast1", "australia-southeast1", "me-west1",
    }
)  # fmt: skip
"""The regions Google lists for Generative AI on Vertex AI (``GENAI_REGIONS_SOURCE``). Which
models, and whether batch, each region serves varies by model: the list only rules regions out."""
GENAI_REGIONS_SOURCE = (
    "Google's list of Generative AI on Vertex AI regions "
    "(firebase.google.com/docs/vertex-ai/locations, read 2026-11-30)"
)

MULTI_REGIONS = ("us", "eu", "asia")  # Cloud Storage's
_OUTSIDE_EU = frozenset({"europe-west2", "europe-west6"})  # London, Zurich
DUAL_REGIONS: Mapping[str, frozenset[str]] = {
    "nam4": frozenset({"us-central1", "us-east1"}),
    "eur4": frozenset({"europe-north1", "europe-west4"}),
    "asia1": frozenset({"asia-northeast1", "asia-northeast2"}),
}
_CONTINENTS = ("us-", "europe-", "asia-", "northamerica-", "southamerica-", "australia-", "me-")

# Predefined roles → the two object permissions they carry (Cloud Storage IAM roles page).
# legacyBucketOwner and legacyBucketWriter can create but not read objects: a known trap.
ROLE_PERMISSIONS: Mapping[str, frozenset[str]] = {
    "roles/storage.admin": frozenset({READ, CREATE}),
    "roles/storage.objectAdmin": frozenset({READ, CREATE}),
    "roles/storage.objectUser": frozenset({READ, CREATE}),
    "roles/storage.objectCreator": frozenset({CREATE}),
    "roles/storage.objectViewer": frozenset({READ}),
    "roles/storage.legacyObjectOwner": frozenset({READ}),
    "roles/storage.legacyObjectReader": frozenset({READ}),
    "roles/storage.legacyBucketOwner": frozenset({CREATE}),
    "roles/storage.legacyBucketWriter": frozenset({CREATE}),
    "roles/storage.legacyBucketReader": frozenset(),
    "roles/storage.insightsCollectorService": frozenset(),
}


def service_agent(project_number: str) -> str:
    """The Vertex AI service agent of a project: it reads inputs and writes outputs."""
    return f"service-{project_number}@gcp-sa-aiplatform.iam.gserviceaccount.com"


def _in_multi_region(region: str, multi: str) -> bool:
    if multi == "us":
        return region.startswith("us-")
    if multi == "eu":
        return region.startswith("europe-") and region not in _OUTSIDE_EU
    return region.startswith("asia-")


def bucket_location_fit(
    region: str, location: str, location_type: str = "", data_locations: Sequence[str] = ()
) -> tuple[Fit, str]:
    """Whether a bucket at ``location`` serves jobs in ``region``: (ok/warn/fail, why).

    ``location`` and ``data_locations`` are as GCS reports them (``US-CENTRAL1``, ``US``,
    ``NAM4``; any case). ``warn`` means the rule cannot tell.
    """
    region = region.lower()
    where = location.lower()
    here = f"the bucket is in {location}"
    if region == "global":
        return "warn", f"{here}; Vertex documents no bucket rule for the global location"
    if region in JOB_MULTI_REGIONS:  # a job in a multi-region (``us``, ``eu``)
        if where == region:
            return "ok", f"{here}, the job's multi-region"
        return "warn", f"{here}; Vertex documents no bucket rule for the {region} multi-region"
    placed = [d.lower() for d in data_locations]
    if placed:
        if region in placed:
            return "ok", f"{here} ({', '.join(data_locations)}), which holds {region}"
        if where in MULTI_REGIONS and _in_multi_region(region, where):
            return "warn", f"{here} ({', '.join(data_locations)}), not {region} itself"
        return "fail", f"{here} ({', '.join(data_locations)}), which does not hold {region}"
    if where == region:
        return "ok", f"{here}, the job's region"
    if where in MULTI_REGIONS:
        if _in_multi_region(region, where):
            return "ok", f"{here}, a multi-region that holds {region}"
        if region.startswith(_CONTINENTS):
            return "fail", f"{here}, a multi-region that does not hold {region}"
        return "warn", f"{here}; whether that multi-region holds {region} is not known"
    if where in DUAL_REGIONS:
        if region in DUAL_REGIONS[where]:
            return "ok", f"{here}, a dual-region that holds {region}"
        return "fail", f"{here}, a dual-region that does not hold {region}"
    if location_type.lower() == "region" or where.startswith(_CONTINENTS):
        return "fail", f"{here}, another region than the job's {region}"
    return "warn", f"{here}; vertexbatch does not know which regions that location holds"


@dataclass(frozen=True, slots=True)
class Grants:
    """What a bucket policy grants one member: the permissions, and what it cannot tell."""

    permissions: frozenset[str]
    unknown_roles: tuple[str, ...] = ()
    conditional_roles: tuple[str, ...] = ()

    @property
    def read(self) -> bool:
        return READ in self.permissions

    @property
    def create(self) -> bool:
        return CREATE in self.permissions


def agent_grants(bindings: Iterable[Mapping[str, Any]], member: str) -> Grants:
    """The object read/create a policy's bindings grant ``member`` (an email, no prefix).

    A binding counts when it names ``serviceAccount:<member>`` (or ``allUsers`` /
    ``allAuthenticatedUsers``); a role not in ``ROLE_PERMISSIONS`` is unknown, and a binding
    with a ``condition`` is reported apart: neither is assumed to grant anything.
    """
    wanted = {f"serviceAccount:{member}".lower(), "allusers", "allauthenticatedusers"}
    permissions: set[str] = set()
    unknown: list[str] = []
    conditional: list[str] = []
    for binding in bindings:
        members = binding.get("members") or ()
        if not any(str(m).lower() in wanted for m in members):
            continue
        role = str(binding.get("role", ""))
        if binding.get("condition"):
            conditional.append(role)
        elif role in ROLE_PERMISSIONS:
            permissions |= ROLE_PERMISSIONS[role]
        else:
            unknown.append(role)
    return Grants(frozenset(permissions), tuple(unknown), tuple(conditional))
