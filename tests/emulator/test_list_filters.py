"""Every list filter field and operator the Vertex reference documents, through the real
aiplatform_v1 (REST) and google-genai clients; what it does not document is refused."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1
from google.genai import errors as genai_errors

from tests.emulator.test_genai import genai_client


def names(lab: Any, text: str) -> set[str]:
    request = aiplatform_v1.ListBatchPredictionJobsRequest(parent=lab.parent, filter=text)
    return {job.display_name for job in lab.jobs.list_batch_prediction_jobs(request=request)}


def test_documented_filters_select_as_vertex_does(lab: Any) -> None:
    """display_name (= != :), model_display_name (= !=), state (= !=), create_time (all six),
    labels.k=v, labels.k:*, NOT, OR, AND, snake_case and camelCase."""
    run = uuid.uuid4().hex[:8]
    scope = f'labels.run="{run}"'
    gemini = lab.create(display_name=f"f-{run}-gemini", labels={"run": run, "team": "x"})
    claude = lab.create(
        [lab.claude_line("hi")],
        model=lab.CLAUDE,
        display_name=f"f-{run}-claude",
        labels={"run": run},
    )
    for job in (gemini, claude):
        lab.stack.wait_job(job.name)
    lab.stack.faults.fail_job(f"f-{run}-failed")
    failed = lab.create(display_name=f"f-{run}-failed", labels={"run": run})
    assert lab.stack.wait_job(failed.name)["state"] == "JOB_STATE_FAILED"
    g, c, f = f"f-{run}-gemini", f"f-{run}-claude", f"f-{run}-failed"
    middle = aiplatform_v1.BatchPredictionJob.to_dict(claude)["create_time"]
    cases = {
        f'display_name="{g}"': {g},
        f'displayName!="{g}"': {c, f},
        f'display_name:"f-{run}-*"': {g, c, f},
        'model_display_name="claude-sonnet-4-5"': {c},
        'modelDisplayName!="claude-sonnet-4-5"': {g, f},
        'state="JOB_STATE_FAILED"': {f},
        'state!="JOB_STATE_FAILED"': {g, c},
        f'create_time="{middle}"': {c},
        f'create_time!="{middle}"': {g, f},
        f'create_time<"{middle}"': {g},
        f'create_time<="{middle}"': {g, c},
        f'createTime>"{middle}"': {f},
        f'create_time>="{middle}"': {c, f},
        "labels.team=x": {g},
        "labels.team:*": {g},
        "NOT labels.team:*": {c, f},
        f'state="JOB_STATE_FAILED" OR display_name="{g}"': {g, f},
    }
    for text, expected in cases.items():
        assert names(lab, f"{scope} AND ({text})") == expected, text
    client = genai_client(lab.stack)
    listed = client.batches.list(
        config={"filter": f'{scope} AND model_display_name="claude-sonnet-4-5"'}
    )
    assert [job.display_name for job in listed] == [c]


@pytest.mark.parametrize(
    "text",
    [
        'update_time>"2026-01-01T00:00:00Z"',
        "model_display_name:gemini",
        "state<JOB_STATE_FAILED",
        "labels.team:x",
        'model="publishers/google/models/gemini-2.5-flash"',
    ],
)
def test_undocumented_filters_are_refused(lab: Any, text: str) -> None:
    """A field or operator the reference does not document is 400 INVALID_ARGUMENT naming it and
    listing what is supported, to aiplatform_v1 and google-genai alike."""
    request = aiplatform_v1.ListBatchPredictionJobsRequest(parent=lab.parent, filter=text)
    with pytest.raises(gexc.BadRequest) as raised:
        list(lab.jobs.list_batch_prediction_jobs(request=request))
    assert ": Invalid filter: Unsupported " in raised.value.message
    assert "supported: display_name (= != :), model_display_name (= !=)" in raised.value.message
    client = genai_client(lab.stack)
    with pytest.raises(genai_errors.ClientError) as failed:
        list(client.batches.list(config={"filter": text}))
    assert failed.value.code == 400


def test_high_level_aiplatform_list_filters(lab: Any) -> None:
    """google.cloud.aiplatform.BatchPredictionJob.list(filter=...) with the documented fields."""
    run = uuid.uuid4().hex[:8]
    job = lab.create(display_name=f"hl-{run}", labels={"run": run})
    lab.stack.wait_job(job.name)
    with lab.stack.aiplatform_init() as aiplatform:
        text = (
            f'labels.run="{run}" AND model_display_name="gemini-2.5-flash" AND '
            'state="JOB_STATE_SUCCEEDED" AND NOT labels.other:*'
        )
        found = aiplatform.BatchPredictionJob.list(filter=text)
        assert [j.resource_name for j in found] == [job.name]
        with pytest.raises(gexc.BadRequest, match="Unsupported field 'update_time'"):
            aiplatform.BatchPredictionJob.list(filter='update_time>"2026-01-01T00:00:00Z"')
