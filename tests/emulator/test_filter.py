"""The list filter subset (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from vertexbatch.emulator._filter import FilterError, JobView, compile_filter

T0 = datetime(2026, 5, 18, 12, 0, 0, 500000, tzinfo=UTC)

JOBS = {
    "a": JobView(
        "my_job_1", "JOB_STATE_SUCCEEDED", {"team": "x", "env": "prod"}, T0, T0, "gemini-2.5-flash"
    ),
    "b": JobView(
        "my_job_2", "JOB_STATE_RUNNING", {"team": "y"}, T0.replace(hour=13), T0, "claude-sonnet-5"
    ),
    "c": JobView("other", "JOB_STATE_FAILED", {}, T0.replace(hour=14), T0, "gemini-2.5-flash"),
}


def matching(text: str) -> str:
    predicate = compile_filter(text)
    return "".join(k for k, job in JOBS.items() if predicate(job))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "abc"),
        ('display_name="my_job_1"', "a"),
        ("display_name=other", "c"),
        ('display_name!="other"', "ab"),
        ('display_name:"job"', "ab"),
        ('display_name:"my_job_*"', "ab"),
        ('display_name:"*_2"', "b"),
        ("state=JOB_STATE_SUCCEEDED", "a"),
        ('state="JOB_STATE_RUNNING"', "b"),
        ("state!=JOB_STATE_SUCCEEDED", "bc"),
        ('labels.team="x"', "a"),
        ("labels.team=y", "b"),
        ('labels.team!="x"', "bc"),
        ("labels.env:*", "a"),
        ("labels.team:*", "ab"),
        ('create_time>"2026-05-18T12:00:00.5Z"', "bc"),
        ('create_time>="2026-05-18T12:00:00.500000Z"', "abc"),
        ('create_time<"2026-05-18T13:00:00Z"', "a"),
        ('create_time<="2026-05-18T13:00:00.5+00:00"', "ab"),
        ('create_time="2026-05-18T12:00:00.500Z"', "a"),
        ('create_time!="2026-05-18T12:00:00.500Z"', "bc"),
        ('create_time>"2026-05-18T14:30:00+02:00"', "bc"),
        ('state="JOB_STATE_SUCCEEDED" AND display_name:"my_job_*"', "a"),
        ("labels.team=x OR labels.team=y", "ab"),
        ("NOT labels.team=x", "bc"),
        ("-labels.team=x", "bc"),
        ("NOT (labels.team=x OR state=JOB_STATE_FAILED)", "b"),
        # AIP-160: OR binds tighter than AND.
        ("state=JOB_STATE_FAILED OR labels.team=x AND labels.env=prod", "a"),
        ("(state=JOB_STATE_FAILED OR labels.team=x) AND display_name:job", "a"),
        ('display_name:job labels.team="y"', "b"),
        ('display_name="say \\"hi\\""', ""),
        # Every field and operator the Vertex reference documents, by both its names.
        ('model_display_name="gemini-2.5-flash"', "ac"),
        ('modelDisplayName!="gemini-2.5-flash"', "b"),
        ('displayName:"my_job_*"', "ab"),
        ('createTime>"2026-05-18T12:30:00Z"', "bc"),
        ('state!="JOB_STATE_FAILED" OR display_name="other"', "abc"),
        ('NOT display_name="my_job_1"', "bc"),
        ("labels.env:* AND model_display_name=gemini-2.5-flash", "a"),
    ],
)
def test_filters(text: str, expected: str) -> None:
    """Each supported form selects the expected jobs."""
    assert matching(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "display_name",
        "display_name=",
        '"display_name"="x"',
        "(state=JOB_STATE_FAILED",
        "state=JOB_STATE_FAILED)",
        "state:JOB_STATE_FAILED",
        "state=NOT_A_STATE",
        'create_time>"yesterday"',
        'create_time>"2026-05-18"',
        'create_time:"2026-05-18T00:00:00Z"',
        "model=x",
        'update_time>"2026-05-18T12:00:00Z"',
        "model_display_name:gemini",
        "labels.team:x",
        "labels.team>x",
        'end_time<"2026-05-18T12:00:00Z"',
        "labels.=x",
        "display_name=x AND",
        "OR display_name=x",
        "display_name=x & y",
    ],
)
def test_bad_filters(text: str) -> None:
    """Malformed or unsupported filters raise FilterError."""
    with pytest.raises(FilterError):
        compile_filter(text)
