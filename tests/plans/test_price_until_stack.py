"""A price's last day through the local stack: ``plan_*`` and ``budget=`` hold it to today
(UTC, read where the client makes the plan), and a job's spend is priced on the day Vertex
created the job."""

from __future__ import annotations

import datetime

import pytest

import vertexbatch as vb
from tests.helpers import gemini_requests, global_client
from vertexbatch._command.cli_progress import job_meter
from vertexbatch.emulator import LocalStack

FLASH = "gemini-3.8-flash"  # served on global; the catalogue's rates hold until 2026-12-31


@pytest.fixture
def client(stack: LocalStack, bucket: str) -> vb.Client:
    return global_client(stack, bucket)


def _today() -> datetime.date:
    return datetime.datetime.now(datetime.UTC).date()


def test_a_plan_and_a_budget_hold_a_price_to_today_in_utc(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A price that held until yesterday is not used: the plan's cost is unknown and a budget
    refuses before anything is staged; one that holds until today prices the plan."""
    today = _today()
    yesterday = today - datetime.timedelta(days=1)
    lapsed = [vb.Price(FLASH, 1.5, 7.5, until=yesterday)]
    plan = client.plan_gemini("until-plan", FLASH, gemini_requests(2), prices=lapsed)
    assert plan.price is None and plan.cost_high is None
    assert plan.price_until == yesterday.isoformat()
    assert any(f"on {today.isoformat()} (UTC" in a for a in plan.assumptions)
    holds = [vb.Price(FLASH, 1.5, 7.5, until=today)]
    priced = client.plan_gemini("until-plan", FLASH, gemini_requests(2), prices=holds)
    assert priced.price == holds[0] and priced.cost_low is not None and priced.cost_low > 0
    with pytest.raises(vb.InvalidRequestError, match=f"holds until {yesterday.isoformat()}"):
        client.submit_gemini("until-plan", FLASH, gemini_requests(2), budget=100.0, prices=lapsed)
    with pytest.raises(vb.InvalidRequestError, match=f"holds until {yesterday.isoformat()}"):
        client.run_gemini("until-run", FLASH, gemini_requests(2), budget=100.0, prices=lapsed)
    assert list(stack.storage_client().list_blobs(bucket)) == []


def test_a_job_s_spend_is_priced_on_the_day_vertex_created_it(
    client: vb.Client, stack: LocalStack
) -> None:
    """The day in UTC: 01:00 on 2027-01-01 at +02:00 is still 2026-12-31, priced at the
    catalogue's launch rates; midnight UTC on 2027-01-01 is after them: unknown."""
    job = client.submit_gemini("until-spend", FLASH, gemini_requests(2))
    stack.wait_job(job.name)
    assert client.status(job).created is not None  # what `vertexbatch results` passes
    east = datetime.timezone(datetime.timedelta(hours=2))
    on_time = job_meter(client, job, datetime.datetime(2027, 1, 1, 1, tzinfo=east))
    late = job_meter(client, job, datetime.datetime(2027, 1, 1, tzinfo=datetime.UTC))
    for result in client.results(job):
        on_time.add(result)
        late.add(result)
    assert on_time.spend.dollars is not None and on_time.spend.dollars > 0
    assert late.spend.dollars is None and late.spend.answers == 2
    assert "holds until 2026-12-31" in late.spend.notes[0]
