"""What Vertex checks of a call before its own rules: unknown JSON names and query parameters,
the location catalogue, echoed create fields, readMask, and what the stack does not emulate."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.cloud import aiplatform_v1, aiplatform_v1beta1
from google.protobuf import field_mask_pb2, struct_pb2

from vertexbatch.emulator import DEFAULT_LOCATIONS, LocalStack

JOBS = "/v1/projects/local-project/locations/us-central1/batchPredictionJobs"


def test_unknown_names_in_a_create_body_are_refused_as_google_refuses_them(lab: Any) -> None:
    """An unknown field at any depth is Google's 400 "Invalid JSON payload received. Unknown
    name …", naming its path; no job is made. Proto names are accepted as JSON names are."""
    before = len(lab.stack.jobs())
    status, body = lab.raw("POST", JOBS, lab.job_body(temprature=0.2))
    assert status == 400 and body["error"]["status"] == "INVALID_ARGUMENT"
    assert body["error"]["message"] == (
        'Invalid JSON payload received. Unknown name "temprature" at '
        "'batch_prediction_job': Cannot find field."
    )
    nested = lab.job_body()
    nested["inputConfig"]["gcsSource"]["uri"] = "gs://x/y"
    status, body = lab.raw("POST", JOBS, nested)
    assert status == 400 and body["error"]["message"] == (
        'Invalid JSON payload received. Unknown name "uri" at '
        "'batch_prediction_job.input_config.gcs_source': Cannot find field."
    )
    # A field only v1beta1 has is unknown to /v1.
    status, body = lab.raw("POST", JOBS, lab.job_body(modelMonitoringConfig={}))
    assert status == 400 and 'Unknown name "modelMonitoringConfig"' in body["error"]["message"]
    assert len(lab.stack.jobs()) == before
    snake = lab.job_body()
    snake["display_name"] = snake.pop("displayName")
    status, body = lab.raw("POST", JOBS, snake)
    assert status == 200, body


def test_unknown_query_parameters_are_refused(lab: Any) -> None:
    """get has no readMask (GetBatchPredictionJobRequest holds only `name`): Google's "Cannot
    bind query parameter"; list takes its own parameters and the system ones."""
    job = lab.create()
    status, body = lab.raw("GET", f"/v1/{job.name}?readMask=state")
    assert status == 400 and body["error"]["message"] == (
        'Invalid JSON payload received. Unknown name "readMask": Cannot bind query parameter. '
        "Field 'readMask' could not be found in request message."
    )
    status, _ = lab.raw("GET", f"{JOBS}?pageSize=1&$alt=json;enum-encoding%3Dint&prettyPrint=false")
    assert status == 200
    status, body = lab.raw("GET", f"{JOBS}?page_sise=1")
    assert status == 400 and 'Unknown name "page_sise"' in body["error"]["message"]


def test_model_parameters_and_instance_config_are_echoed(lab: Any) -> None:
    """Through the real client: both are echoed on create, get and list as Vertex does."""
    uri = lab.upload([lab.gemini_line("hi")])
    params = struct_pb2.Value()
    params.struct_value.update({"temperature": 0.5, "stop": ["x"]})
    job = aiplatform_v1.BatchPredictionJob(
        display_name="echo-fields",
        model=lab.GEMINI,
        input_config=aiplatform_v1.BatchPredictionJob.InputConfig(
            instances_format="jsonl", gcs_source=aiplatform_v1.GcsSource(uris=[uri])
        ),
        instance_config=aiplatform_v1.BatchPredictionJob.InstanceConfig(
            instance_type="object", excluded_fields=["key"]
        ),
        model_parameters=params,
        output_config=aiplatform_v1.BatchPredictionJob.OutputConfig(
            predictions_format="jsonl",
            gcs_destination=aiplatform_v1.GcsDestination(output_uri_prefix=f"gs://{lab.bucket}/o"),
        ),
    )
    created = lab.jobs.create_batch_prediction_job(parent=lab.parent, batch_prediction_job=job)
    got = lab.jobs.get_batch_prediction_job(name=created.name)
    for seen in (created, got):
        assert seen.instance_config.instance_type == "object"
        assert list(seen.instance_config.excluded_fields) == ["key"]
        as_json = json.loads(aiplatform_v1.BatchPredictionJob.to_json(seen))
        assert as_json["modelParameters"] == {"temperature": 0.5, "stop": ["x"]}
    listed = lab.stack.wait_job(created.name)
    assert listed["instanceConfig"] == {"instanceType": "object", "excludedFields": ["key"]}
    plain = lab.jobs.get_batch_prediction_job(name=lab.create().name)
    plain_json = json.loads(aiplatform_v1.BatchPredictionJob.to_json(plain))
    assert "instanceConfig" not in plain_json and "modelParameters" not in plain_json


def test_read_mask_on_list(lab: Any) -> None:
    """list's readMask keeps only the fields named (camelCase or snake_case, nested paths); a
    path BatchPredictionJob does not have is a 400."""
    job = lab.create(labels={"mask": "yes"})
    lab.stack.wait_job(job.name)
    request = aiplatform_v1.ListBatchPredictionJobsRequest(
        parent=lab.parent,
        filter='labels.mask="yes"',
        read_mask=field_mask_pb2.FieldMask(
            paths=["name", "state", "output_info.gcs_output_directory"]
        ),
    )
    (listed,) = list(lab.jobs.list_batch_prediction_jobs(request=request))
    assert listed.name == job.name and listed.state.name == "JOB_STATE_SUCCEEDED"
    assert listed.output_info.gcs_output_directory.startswith(f"gs://{lab.bucket}/")
    assert not listed.display_name and not listed.model and not listed.labels
    status, body = lab.raw("GET", f"{JOBS}?readMask=displayName,nope")
    assert status == 400 and "'displayName,nope'" not in body["error"]["message"]
    assert "'nope' is not a field of BatchPredictionJob" in body["error"]["message"]


def test_locations_the_stack_does_not_serve_are_refused(lab: Any) -> None:
    """`us-centrl1` creates no job and lists nothing: 400 naming the location; the catalogue is
    aiplatform's own regions plus us and eu, and extends."""
    parent = f"projects/{lab.stack.project}/locations/us-centrl1"
    with pytest.raises(gexc.BadRequest) as raised:
        lab.create(parent=parent)
    assert "`us-centrl1` is not a valid location" in raised.value.message
    with pytest.raises(gexc.BadRequest):
        list(lab.jobs.list_batch_prediction_jobs(parent=parent))
    from google.cloud.aiplatform.constants import base

    assert set(base.SUPPORTED_REGIONS) <= set(DEFAULT_LOCATIONS)
    assert {"us", "eu", "global"} <= set(DEFAULT_LOCATIONS)
    job = lab.create(parent=f"projects/{lab.stack.project}/locations/europe-west4")
    assert "/locations/europe-west4/" in job.name
    with pytest.raises(ValueError, match="not a location name"):
        LocalStack(locations=["Bad Place"])


@pytest.mark.processes
def test_an_added_location_is_served() -> None:
    """LocalStack(locations=...) and add_location serve more locations."""
    with LocalStack(locations=["my-region1"]) as stack:
        jobs = stack.jobs_client()

        def listed(location: str) -> list[Any]:
            parent = f"projects/local-project/locations/{location}"
            return list(jobs.list_batch_prediction_jobs(parent=parent))

        assert listed("my-region1") == []
        with pytest.raises(gexc.BadRequest):
            listed("other-region2")
        stack.add_location("other-region2")
        assert listed("other-region2") == []


NOT_EMULATED = [
    (
        {
            "inputConfig": {
                "instancesFormat": "jsonl",
                "vertexMultimodalDatasetSource": {"datasetName": "d"},
            }
        },
        "does not emulate Vertex multimodal datasets (inputConfig.vertexMultimodalDatasetSource)",
    ),
    # Embedding models the stack does not hold (it serves the catalogue's: gemini-embedding-001,
    # gemini-embedding-2, text-embedding-005; tests/embeddings).
    ({"model": "publishers/google/models/text-embedding-004"}, "does not emulate embedding models"),
    (
        {"model": "publishers/google/models/multimodalembedding"},
        "does not emulate embedding models",
    ),
    ({"model": "projects/p/locations/us-central1/models/123"}, "not Model resources"),
    ({"dedicatedResources": {"startingReplicaCount": 1}}, "does not emulate dedicatedResources"),
    ({"generateExplanation": True}, "does not emulate generateExplanation"),
]


@pytest.mark.parametrize(("overrides", "sentence"), NOT_EMULATED)
def test_what_the_stack_does_not_emulate_is_refused_in_one_sentence(
    lab: Any, overrides: dict[str, Any], sentence: str
) -> None:
    """Each is a 400 whose message says the local stack does not emulate it, and makes no job."""
    body = lab.job_body()
    for key, value in overrides.items():
        if key == "inputConfig":
            value = {**body["inputConfig"], **value}
        body[key] = value
    before = len(lab.stack.jobs())
    status, answer = lab.raw("POST", JOBS, body)
    message = answer["error"]["message"]
    assert status == 400 and message.startswith("The local stack does not emulate"), answer
    assert sentence in message and message.count(". ") == 0
    assert len(lab.stack.jobs()) == before


def test_not_emulated_through_the_sdks(lab: Any) -> None:
    """The same refusals reach aiplatform_v1 (an embedding model it does not hold) and
    aiplatform_v1beta1 (a monitoring config, a v1beta1 field) as BadRequest."""
    with pytest.raises(gexc.BadRequest, match="does not emulate embedding models"):
        lab.create(model="publishers/google/models/text-embedding-004")
    beta = aiplatform_v1beta1.JobServiceClient(
        transport="rest",
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": lab.stack.vertex_endpoint},
    )
    job = aiplatform_v1beta1.BatchPredictionJob(
        display_name="monitored",
        model=lab.GEMINI,
        input_config=aiplatform_v1beta1.BatchPredictionJob.InputConfig(
            instances_format="jsonl",
            gcs_source=aiplatform_v1beta1.GcsSource(uris=[lab.upload([lab.gemini_line("x")])]),
        ),
        output_config=aiplatform_v1beta1.BatchPredictionJob.OutputConfig(
            predictions_format="jsonl",
            gcs_destination=aiplatform_v1beta1.GcsDestination(
                output_uri_prefix=f"gs://{lab.bucket}/o"
            ),
        ),
        model_monitoring_config=aiplatform_v1beta1.ModelMonitoringConfig(
            analysis_instance_schema_uri="gs://x/schema.yaml"
        ),
    )
    with pytest.raises(gexc.BadRequest, match="does not emulate modelMonitoringConfig"):
        beta.create_batch_prediction_job(parent=lab.parent, batch_prediction_job=job)


def test_the_command_takes_locations() -> None:
    """`vertexbatch emulator --location NAME` adds to the catalogue; a bad name is a usage error
    naming the flag, before anything starts."""
    from click.testing import CliRunner

    from vertexbatch._command.cli import main

    result = CliRunner().invoke(main, ["emulator", "--location", "Bad Place"])
    assert result.exit_code == 2
    assert "--location: location 'Bad Place' is not a location name" in result.output
