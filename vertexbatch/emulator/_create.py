"""What Vertex checks of a REST call before its own rules (pure): query parameters, unknown JSON
names, and what the local stack does not emulate.

- An unknown query parameter is Google's 400 `Invalid JSON payload received. Unknown name "X":
  Cannot bind query parameter. Field 'X' could not be found in request message.` (the system
  parameters `$alt`, `fields`, `key`, `prettyPrint`, … are always allowed).
- An unknown field anywhere in a create body is `Invalid JSON payload received. Unknown name
  "X" at 'batch_prediction_job.input_config': Cannot find field.`. The fields that exist are the
  SDK's own: the descriptor of `aiplatform_v1.BatchPredictionJob` (or `v1beta1`'s, for a
  `/v1beta1/` call), so the check follows SDK upgrades. Both the proto name and the JSON name
  of a field are accepted, as Google's JSON mapping accepts both.
- A source, sink, model or field the stack does not emulate is refused in one sentence that
  says so (`not_emulated`), rather than misreported as the caller's mistake.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

from google.protobuf.descriptor import (  # type: ignore[import-untyped,unused-ignore]
    Descriptor,
    FieldDescriptor,
)

from vertexbatch.emulator._errors import bad_request

__all__ = [
    "apply_mask",
    "check_fields",
    "check_query",
    "express_parent",
    "instance_config",
    "not_emulated",
    "read_mask",
]

_SYSTEM_PARAMETERS = frozenset(
    {
        "$alt",
        "alt",
        "$fields",
        "fields",
        "key",
        "prettyPrint",
        "$prettyPrint",
        "quotaUser",
        "access_token",
        "callback",
        "$callback",
        "uploadType",
        "upload_protocol",
    }
)
_QUERY: Mapping[str, frozenset[str]] = {
    "list": frozenset(
        {"filter", "pageSize", "page_size", "pageToken", "page_token", "readMask", "read_mask"}
    ),
    "listOperations": frozenset(
        {"filter", "pageSize", "page_size", "pageToken", "page_token", "returnPartialSuccess"}
    ),
    "waitOperation": frozenset({"timeout"}),
}
_JOB_OPS = frozenset(
    {"create", "list", "get", "delete", "cancel", "getOperation", "listOperations", "waitOperation"}
)


def express_parent(parent: str, project: str, location: str) -> dict[str, str]:
    """The project and location of a call of the express form (no project or location in its
    path): its ``parent`` query parameter, else the stack's own ``project`` and ``location``.

    Vertex AI's v1 API has a top-level ``batchPredictionJobs`` collection: create (an optional
    ``parent``, ``projects/{project}/locations/{location}``), get and list; no cancel or delete
    (its discovery document, as google-api-python-client prints it:
    https://github.com/googleapis/google-api-python-client/blob/main/docs/dyn/aiplatform_v1.batchPredictionJobs.html,
    read 2026-12-07). google-genai 2.34.0 calls it in Vertex's express mode (an API key and no
    project or location: docs/local-stack.md, "Point code at it").

    Raises:
        ApiError: 400 INVALID_ARGUMENT, a ``parent`` of another form.
    """
    if not parent:
        return {"project": project, "location": location}
    found = re.fullmatch(r"projects/([^/]+)/locations/([^/]+)", parent)
    if found is None:
        shown = parent[:100]
        raise bad_request(f"Invalid parent {shown!r}: not projects/PROJECT/locations/LOCATION.")
    return {"project": found.group(1), "location": found.group(2)}


def check_query(op: str, query: Mapping[str, list[str]]) -> None:
    """Refuse a query parameter the operation's request message does not have, as Google does."""
    if op not in _JOB_OPS:
        return
    allowed = _QUERY.get(op, frozenset())
    for name in query:
        if name not in _SYSTEM_PARAMETERS and name not in allowed:
            shown = name[:100]
            raise bad_request(
                f'Invalid JSON payload received. Unknown name "{shown}": Cannot bind query '
                f"parameter. Field '{shown}' could not be found in request message."
            )


@functools.cache
def _job_descriptor(version: str) -> Descriptor:
    if version == "v1beta1":
        from google.cloud.aiplatform_v1beta1.types import BatchPredictionJob
    else:
        from google.cloud.aiplatform_v1.types import BatchPredictionJob
    descriptor: Descriptor = BatchPredictionJob.pb().DESCRIPTOR
    return descriptor


def check_fields(body: Any, version: str) -> None:
    """Refuse the first name in a create body that BatchPredictionJob does not have.

    Values of the wrong JSON type are left to the create's own checks (`_spec.py`).
    """
    _walk(body, _job_descriptor(version), "batch_prediction_job")


def _walk(value: Any, descriptor: Descriptor, path: str) -> None:
    if not isinstance(value, dict):
        return
    fields: dict[str, FieldDescriptor] = {}
    for field in descriptor.fields:
        fields[field.name] = field
        fields[field.json_name] = field
    for key, item in value.items():
        field = fields.get(key)
        if field is None:
            raise bad_request(
                f'Invalid JSON payload received. Unknown name "{str(key)[:100]}" at '
                f"'{path}': Cannot find field."
            )
        message = field.message_type
        if message is None or message.full_name.startswith("google.protobuf."):
            continue  # a scalar, or Value/Struct/Timestamp: any JSON of its kind
        if message.GetOptions().map_entry:
            continue  # labels: string to string, checked by the create
        inner = f"{path}.{field.name}"
        if _repeated(field):
            for index, element in enumerate(item if isinstance(item, list) else []):
                _walk(element, message, f"{inner}[{index}]")
        else:
            _walk(item, message, inner)


def instance_config(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """`instanceConfig` as Vertex echoes it: camelCase names, zero values left out."""
    raw = body.get("instanceConfig", body.get("instance_config"))
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise bad_request("BatchPredictionJob.instance_config must be an object.")
    from google.cloud.aiplatform_v1.types import BatchPredictionJob
    from google.protobuf import json_format  # type: ignore[import-untyped,unused-ignore]

    message = BatchPredictionJob.InstanceConfig.pb()()
    try:
        json_format.ParseDict(raw, message)
    except json_format.ParseError:
        raise bad_request(
            "Invalid JSON payload received: BatchPredictionJob.instance_config has a value of "
            "the wrong type."
        ) from None
    echoed: dict[str, Any] = json_format.MessageToDict(message)
    return echoed


_EMBEDDING = re.compile(
    r"(?:text-embedding|text-multilingual-embedding|textembedding|gemini-embedding|"
    r"multimodalembedding)",
)
# Top-level fields for custom-model and explanation jobs, by JSON name, with their proto names.
_CUSTOM_MODEL_FIELDS = (
    ("unmanagedContainerModel", "unmanaged_container_model"),
    ("dedicatedResources", "dedicated_resources"),
    ("manualBatchTuningParameters", "manual_batch_tuning_parameters"),
    ("explanationSpec", "explanation_spec"),
    ("endpoint", "endpoint"),
    ("modelMonitoringConfig", "model_monitoring_config"),
)
_PUBLISHER_MODEL = re.compile(
    r"^(?:projects/[^/]+/locations/[^/]+/)?publishers/([^/]+)/models/([^/]+)"
)


def not_emulated(
    body: Mapping[str, Any], holds: Callable[[str, str], bool] | None = None
) -> str | None:
    """The one sentence saying what in a create body the local stack does not emulate, or None.

    `holds(publisher, model_id)` is the catalogue's: an embedding model the caller added to it
    (`LocalStack.add_model`) is let through, its rows answered as its family's (`_embeddings`).
    """

    def given(*names: str) -> Any:
        for name in names:
            if name in body:
                return body[name]
        return None

    for part, names in (
        ("inputConfig", ("vertexMultimodalDatasetSource", "vertex_multimodal_dataset_source")),
        (
            "outputConfig",
            ("vertexMultimodalDatasetDestination", "vertex_multimodal_dataset_destination"),
        ),
    ):
        config = given(part, _snake(part))
        if isinstance(config, dict) and any(config.get(name) is not None for name in names):
            return (
                f"The local stack does not emulate Vertex multimodal datasets ({part}."
                f"{names[0]}): use gcsSource/gcsDestination or BigQuery."
            )
    for json_name, proto_name in _CUSTOM_MODEL_FIELDS:
        if given(json_name, proto_name) is not None:
            return (
                f"The local stack does not emulate {json_name}: it runs batch jobs of publisher "
                "models (Gemini, Claude) only, not custom models, endpoints or monitoring."
            )
    if given("generateExplanation", "generate_explanation"):
        return "The local stack does not emulate generateExplanation (explanations of predictions)."
    model = given("model")
    if not isinstance(model, str) or not model:
        return None
    match = _PUBLISHER_MODEL.match(model)
    if match is None:
        return (
            f"The local stack does not emulate batch jobs on {model[:200]!r}: it runs "
            "publisher models (publishers/google/models/…, publishers/anthropic/models/…) only, "
            "not Model resources (custom or tuned models) or endpoints."
        )
    publisher, model_id = match.group(1), match.group(2)
    if _EMBEDDING.match(model_id) and not (holds is not None and holds(publisher, model_id)):
        return (
            f"The local stack does not emulate embedding models outside its catalogue "
            f"({model_id[:100]}): it answers the catalogue's embedding models (`vertexbatch "
            "models --publisher embeddings`) and any added with LocalStack.add_model."
        )
    return None


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def read_mask(text: str, version: str) -> tuple[tuple[str, ...], ...] | None:
    """A list's `readMask` (a FieldMask: comma-separated paths, camelCase or snake_case) as
    camelCase path tuples; None for no mask (every field).

    Raises:
        ApiError: 400 for a path BatchPredictionJob does not have (wording UNCONFIRMED).
    """
    paths = [part.strip() for part in text.split(",") if part.strip()]
    if not paths:
        return None
    masks: list[tuple[str, ...]] = []
    for path in paths:
        descriptor: Descriptor | None = _job_descriptor(version)
        steps: list[str] = []
        for step in path.split("."):
            field = None
            if descriptor is not None:
                field = descriptor.fields_by_name.get(_snake(step)) or next(
                    (f for f in descriptor.fields if f.json_name == step), None
                )
            if field is None and descriptor is not None:
                raise bad_request(
                    f"Invalid read_mask: {path[:200]!r} is not a field of BatchPredictionJob."
                )
            steps.append(field.json_name if field is not None else step)
            message = field.message_type if field is not None else None
            descriptor = None
            if message is not None and _is_object(message):
                descriptor = message
        masks.append(tuple(steps))
    return tuple(masks)


def _is_object(message: Descriptor) -> bool:
    """Whether a field of this message type holds named sub-fields (not a map, not a WKT)."""
    return not message.GetOptions().map_entry and not message.full_name.startswith(
        "google.protobuf."
    )


def apply_mask(job: Mapping[str, Any], masks: tuple[tuple[str, ...], ...]) -> dict[str, Any]:
    """The job JSON with only the masked paths (a path absent from the job stays absent)."""
    out: dict[str, Any] = {}
    for path in masks:
        source: Any = job
        for step in path:
            if not isinstance(source, Mapping) or step not in source:
                break
            source = source[step]
        else:
            target = out
            for step in path[:-1]:
                target = target.setdefault(step, {})
            target[path[-1]] = source
    return out


def _repeated(field: FieldDescriptor) -> bool:
    """Whether a field is a list: ``is_repeated`` where protobuf has it (protobuf 7 dropped
    ``label``), ``label`` before it."""
    repeated = getattr(field, "is_repeated", None)
    if repeated is not None:
        return bool(repeated)
    return bool(field.label == FieldDescriptor.LABEL_REPEATED)
