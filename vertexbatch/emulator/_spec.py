"""A create request's body, validated into a JobSpec as Vertex validates it (pure).

The checks of `batchPredictionJobs.create`'s JSON: display name, publisher model (in the stack's
model catalogue, and whether the location serves it), input and output configuration (gs:// URIs
and jsonl, or BigQuery tables: `_bq_spec.py`), labels (at most 64, in Google's label syntax),
the CMEK key (`encryptionSpec.kmsKeyName`: a Cloud KMS key resource name in the job's location)
and the service account (an email of one). A bad body raises the ApiError Vertex answers with.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vertexbatch.emulator._bq_spec import bigquery_destination, bigquery_source
from vertexbatch.emulator._catalogue import OPEN_PUBLISHERS, Catalogue
from vertexbatch.emulator._create import instance_config
from vertexbatch.emulator._errors import bad_request
from vertexbatch.emulator._rows import Provider

__all__ = ["JobSpec", "parse_create_body"]

_MODEL = re.compile(r"^(?:projects/[^/]+/locations/[^/]+/)?publishers/([^/]+)/models/([^/]+)$")
_DEFAULT_CATALOGUE = Catalogue()
_KMS_KEY = re.compile(
    r"projects/[^/\s]+/locations/(?P<location>[^/\s]+)/keyRings/[A-Za-z0-9_-]{1,63}"
    r"/cryptoKeys/[A-Za-z0-9_-]{1,63}"
)
_SERVICE_ACCOUNT = re.compile(r"[a-z0-9][a-z0-9._-]*@[a-z0-9][a-z0-9.:-]*gserviceaccount\.com")


def _lane(publisher: str) -> Provider:
    """The lane a publisher's lines are answered in: Claude, an open model's, else Gemini."""
    if publisher == "anthropic":
        return "anthropic"
    return "openmaas" if publisher in OPEN_PUBLISHERS else "google"


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A validated create request."""

    display_name: str
    model: str
    publisher: Provider
    model_id: str
    input_uris: tuple[str, ...]
    instances_format: str
    output_prefix: str
    predictions_format: str
    labels: dict[str, str]
    kms_key_name: str = ""
    service_account: str = ""
    # BigQuery sides (`_bq_spec.py`): the input table and output dataset or table, "" for GCS.
    bigquery_source: str = ""
    bigquery_destination: str = ""
    # Echoed as created: `modelParameters` (any JSON value) and `instanceConfig` (camelCase).
    model_parameters: Any = None
    instance_config: Mapping[str, Any] | None = None


def _label_ok(text: str, *, key: bool) -> bool:
    if len(text) > 63 or (key and not text):
        return False
    if key and not (text[0].isalpha() and text[0].islower()):
        return False
    return all(c.isdigit() or c in "_-" or (c.isalpha() and c == c.lower()) for c in text)


def parse_create_body(
    body: Any,
    *,
    project: str,
    project_number: str,
    location: str,
    catalogue: Catalogue | None = None,
) -> JobSpec:
    """Validate a create body as Vertex does.

    Raises:
        ApiError: 400 for a missing or malformed field; for a publisher model the catalogue
            (default: DEFAULT_MODELS) does not hold, its code (404 by default).
    """
    if not isinstance(body, dict):
        raise bad_request("Invalid JSON payload: the body must be a BatchPredictionJob object.")
    display_name = body.get("displayName", body.get("display_name"))
    if not isinstance(display_name, str) or not display_name:
        raise bad_request("BatchPredictionJob.display_name is required.")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("BatchPredictionJob.model is required.")
    input_config = body.get("inputConfig")
    bq_source = bigquery_source(input_config, location)
    source = input_config.get("gcsSource") if isinstance(input_config, dict) else None
    uris = source.get("uris") if isinstance(source, dict) else None
    if isinstance(uris, str):
        uris = [uris]
    if bq_source is not None:
        uris = []
    elif not isinstance(uris, list) or not uris:
        raise bad_request("BatchPredictionJob.input_config.gcs_source.uris is required.")
    if not all(isinstance(u, str) and u.startswith("gs://") and len(u) > 5 for u in uris):
        raise bad_request("Every input URI must be a gs:// URI.")
    assert isinstance(input_config, dict)
    instances_format = input_config.get("instancesFormat", "jsonl")
    if instances_format != "jsonl" and bq_source is None:
        raise bad_request("Only the jsonl instances format is supported for this model.")
    output_config = body.get("outputConfig")
    bq_destination = bigquery_destination(output_config)
    destination = output_config.get("gcsDestination") if isinstance(output_config, dict) else None
    prefix = destination.get("outputUriPrefix") if isinstance(destination, dict) else None
    if bq_destination is not None:
        prefix = ""
    elif not isinstance(prefix, str) or not prefix.startswith("gs://") or len(prefix) <= 5:
        raise bad_request(
            "BatchPredictionJob.output_config.gcs_destination.output_uri_prefix is required."
        )
    assert isinstance(output_config, dict)
    predictions_format = output_config.get("predictionsFormat", "jsonl")
    if predictions_format != "jsonl" and bq_destination is None:
        raise bad_request("Only the jsonl predictions format is supported for this model.")
    labels = body.get("labels", {})
    if not isinstance(labels, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
    ):
        raise bad_request("BatchPredictionJob.labels must map strings to strings.")
    if len(labels) > 64 or not all(
        _label_ok(k, key=True) and _label_ok(v, key=False) for k, v in labels.items()
    ):
        raise bad_request(
            "Label keys and values can be no longer than 63 characters, can only contain "
            "lowercase letters, numeric characters, underscores and dashes; keys must start "
            "with a letter."
        )
    kms_key_name = _kms_key_name(body.get("encryptionSpec"), location)
    service_account = body.get("serviceAccount", "")
    if not isinstance(service_account, str) or (
        service_account and not _SERVICE_ACCOUNT.fullmatch(service_account)
    ):
        raise bad_request(
            f"BatchPredictionJob.service_account {str(service_account)[:100]!r} is not a valid "
            "service account email."
        )
    match = _MODEL.match(model)
    if match is None:
        raise bad_request("BatchPredictionJob.model must name a publisher model.")
    publisher, model_id = match.group(1), match.group(2)
    (catalogue or _DEFAULT_CATALOGUE).check(project_number, location, publisher, model_id)
    if publisher == "anthropic" and location == "global":
        raise bad_request(
            "Batch prediction for Anthropic models is not supported in the global location; "
            "use a regional location."
        )
    if publisher in OPEN_PUBLISHERS and location == "global":
        raise bad_request(
            "Batch prediction for OpenMaaS models is not supported in the global location; "
            "use a regional location."
        )
    return JobSpec(
        display_name=display_name,
        model=model,
        publisher=_lane(publisher),
        model_id=model_id,
        input_uris=tuple(uris),
        instances_format=instances_format,
        output_prefix=prefix,
        predictions_format=predictions_format,
        labels=dict(labels),
        kms_key_name=kms_key_name,
        service_account=service_account,
        bigquery_source=bq_source or "",
        bigquery_destination=bq_destination or "",
        model_parameters=body.get("modelParameters", body.get("model_parameters")),
        instance_config=instance_config(body),
    )


def _kms_key_name(spec: Any, location: str) -> str:
    """The create's CMEK key ("" for none), checked as Vertex checks it."""
    if spec is None:
        return ""
    key = spec.get("kmsKeyName", "") if isinstance(spec, dict) else None
    if not isinstance(key, str):
        raise bad_request("BatchPredictionJob.encryption_spec.kms_key_name must be a string.")
    if not key:
        return ""
    match = _KMS_KEY.fullmatch(key)
    if match is None:
        raise bad_request(
            f"Invalid KMS key name {key[:200]!r}: it must be of the form "
            "projects/*/locations/*/keyRings/*/cryptoKeys/*."
        )
    if match.group("location") != location:
        raise bad_request(
            f"KMS key {key!r} is in location {match.group('location')!r}, but the resource is "
            f"in {location!r}: the key must be in the same region as the resource."
        )
    return key
