"""``vertexbatch doctor --dest``: the dataset exists, is in a region the job can use, and who
may read and write it, or "cannot tell".

Through the real google-cloud-bigquery client and Resource Manager's testIamPermissions on the
BigQuery stack. bqemulator keeps a dataset's location but serves no access entries (no IAM), so
the agent check's reading of entries is table-tested on the pure ``access_grants``; the stack's
answer is the honest "cannot tell".
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result
from google.auth.credentials import AnonymousCredentials
from google.cloud import bigquery

from tests.helpers import free_ports
from vertexbatch._checks.doctor import NETWORK_FIX
from vertexbatch._checks.doctor_bigquery import (
    SAME_REGION_SOURCE,
    access_grants,
    check_bigquery,
    dataset_location_fit,
)
from vertexbatch._checks.doctor_run import lookups
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode
from vertexbatch._config import Config
from vertexbatch.emulator import LocalStack

AGENT = "service-123@gcp-sa-aiplatform.iam.gserviceaccount.com"
NAMES = ["dest-dataset", "dest-location", "dest-caller", "dest-agent"]


def doctor(bq: LocalStack, *args: str) -> Result:
    env = bq.environment("doctor-bq", prefix="jobs")
    return CliRunner().invoke(main, ["doctor", "--json", *args], env=env, catch_exceptions=False)


def by_name(result: Result) -> dict[str, dict[str, str]]:
    return {c["check"]: c for c in json.loads(result.stdout)}


@pytest.fixture
def made(bq: LocalStack) -> Iterator[bigquery.Client]:
    client = bq.bigquery_client()
    yield client
    client.close()  # type: ignore[no-untyped-call]


def dataset_in(client: bigquery.Client, bq: LocalStack, location: str) -> str:
    made = bigquery.Dataset(f"{bq.project}.doc_{uuid.uuid4().hex[:10]}")
    made.location = location
    client.create_dataset(made)
    return f"bq://{bq.project}.{made.dataset_id}"


def checks(bq: LocalStack, client: bigquery.Client, uri: str, **options: str) -> dict[str, str]:
    config = Config("local-project", bq.location, "b", "jobs", bq.vertex_endpoint, "x")
    found = check_bigquery(
        client,
        lookups(config).projects,
        uri,
        bq.location,
        bq.project,
        agent_number="123",
        **options,
    )
    assert [c.check for c in found] == [
        n.replace("dest", options.get("side", "dest")) for n in NAMES
    ]
    return {c.check: f"{c.result} {c.detail}" for c in found}


def test_doctor_dest_checks_a_dataset_in_the_jobs_region(bq: LocalStack, dataset: str) -> None:
    bq.create_bucket("doctor-bq")
    result = doctor(bq, "--dest", dataset)
    assert result.exit_code == 0, result.output
    found = by_name(result)
    assert list(found)[-4:] == NAMES
    assert found["dest-dataset"] == {
        "check": "dest-dataset",
        "result": "ok",
        "detail": f"{dataset} exists",
    }
    assert found["dest-location"]["result"] == "ok"
    assert found["dest-location"]["detail"] == f"the dataset is in {bq.location}, the job's region"
    assert found["dest-caller"]["result"] == "ok"
    agent = found["dest-agent"]
    assert agent["result"] == "warn" and agent["detail"].startswith("cannot tell whether service-")
    assert "shows no access entries" in agent["detail"]


def test_a_missing_dataset_fails_and_the_rest_is_skipped(bq: LocalStack) -> None:
    bq.create_bucket("doctor-bq")
    missing = f"bq://{bq.project}.no_such_{uuid.uuid4().hex[:8]}"
    result = doctor(bq, "--dest", missing)
    assert result.exit_code == ExitCode.CHECK_FAILED
    found = by_name(result)
    assert found["dest-dataset"]["result"] == "fail"
    assert (
        found["dest-dataset"]["detail"]
        == f"{missing} does not exist: create it in the job's region."
    )
    assert [found[n]["result"] for n in NAMES[1:]] == ["skip"] * 3


def test_a_bad_dest_is_a_usage_error(bq: LocalStack) -> None:
    result = doctor(bq, "--dest", "bq://p")
    assert result.exit_code == ExitCode.USAGE
    assert "--dest: dest 'bq://p' is not a BigQuery sink" in result.output


def test_a_dataset_elsewhere_fails_and_a_multi_region_cannot_tell(
    bq: LocalStack, made: bigquery.Client
) -> None:
    """Read from the real client: europe-west4 fails; US (which holds us-central1) is "cannot
    tell", citing Vertex's same-region sentence."""
    far = checks(bq, made, dataset_in(made, bq, "europe-west4"))
    assert far["dest-location"] == (
        "fail the dataset is in europe-west4, not the job's region us-central1: use one in "
        "us-central1."
    )
    multi = checks(bq, made, dataset_in(made, bq, "US"))
    assert multi["dest-location"].startswith("warn cannot tell: the dataset is in US, a multi")
    assert SAME_REGION_SOURCE in multi["dest-location"]


def test_the_caller_lacking_read_sessions_fails_and_lacking_get_data_cannot_tell(
    bq: LocalStack, made: bigquery.Client, dataset: str
) -> None:
    bq.faults.deny("bigquery.tables.getData")
    assert checks(bq, made, dataset)["dest-caller"].startswith(
        "warn cannot tell: the caller holds no bigquery.tables.getData"
    )
    bq.faults.deny("bigquery.readsessions.create")
    assert "grant it roles/bigquery.readSessionUser" in checks(bq, made, dataset)["dest-caller"]


def test_a_source_table_must_exist_and_its_agent_must_read(
    bq: LocalStack, made: bigquery.Client, dataset: str
) -> None:
    """The same checks for a table a source names: a missing table fails (a sink's would be
    created by the job)."""
    table = f"{dataset}.absent"
    assert checks(bq, made, table)["dest-dataset"] == f"ok {dataset} exists"
    source = checks(bq, made, table, side="source")
    assert (
        source["source-dataset"] == f"fail {table} does not exist: create it in the job's region."
    )
    made.create_table(
        bigquery.Table(f"{table.removeprefix('bq://')}", [bigquery.SchemaField("request", "JSON")])
    )
    source = checks(bq, made, table, side="source", service_account="me@p.iam.gserviceaccount.com")
    assert source["source-dataset"] == f"ok {dataset} exists"
    assert source["source-agent"].startswith(
        "warn cannot tell whether me@p.iam.gserviceaccount.com may read"
    )


def test_a_bigquery_that_cannot_be_reached_says_so_with_the_network_fix(bq: LocalStack) -> None:
    closed = f"http://127.0.0.1:{free_ports(1)[0]}"
    client = bigquery.Client(
        project=bq.project,
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": closed},
    )
    config = Config("local-project", bq.location, "b", "jobs", closed, closed)
    found = check_bigquery(
        client, lookups(config).projects, f"bq://{bq.project}.ds", bq.location, bq.project
    )
    assert found[0].result == "warn"
    assert (
        found[0].detail == f"cannot tell: BigQuery did not answer (cannot connect): {NETWORK_FIX}"
    )
    assert [c.result for c in found[1:]] == ["skip"] * 3


@pytest.mark.parametrize(
    ("region", "location", "fit"),
    [
        ("us-central1", "us-central1", "ok"),
        ("us-central1", "US-CENTRAL1", "ok"),
        ("us-central1", "US", "warn"),
        ("europe-west4", "EU", "warn"),
        ("europe-west2", "EU", "fail"),  # London is not in the EU multi-region
        ("us-central1", "EU", "fail"),
        ("us-central1", "us-east5", "fail"),
        ("asia-northeast1", "US", "fail"),
        ("global", "US", "warn"),
    ],
)
def test_dataset_location_fit(region: str, location: str, fit: str) -> None:
    assert dataset_location_fit(region, location)[0] == fit


@pytest.mark.parametrize(
    ("entry", "write", "granted"),
    [
        ({"role": "WRITER", "userByEmail": AGENT}, True, True),
        ({"role": "roles/bigquery.dataEditor", "iamMember": f"serviceAccount:{AGENT}"}, True, True),
        ({"role": "READER", "userByEmail": AGENT}, True, None),
        ({"role": "READER", "userByEmail": AGENT}, False, True),
        ({"role": "OWNER", "userByEmail": "someone@example.com"}, True, None),
        ({"role": "WRITER", "groupByEmail": "team@example.com"}, True, None),  # cannot tell
        ({"role": "roles/custom.writer", "userByEmail": AGENT}, True, None),
    ],
)
def test_access_grants(entry: dict[str, str], write: bool, granted: bool | None) -> None:
    assert access_grants([entry], AGENT, write) is granted


def test_a_resource_manager_that_cannot_be_reached_leaves_the_caller_cannot_tell(
    bq: LocalStack, made: bigquery.Client, dataset: str
) -> None:
    """BigQuery answers, Resource Manager does not: the dataset checks run, the caller's says
    it got no answer, with the network fix, never a role."""
    closed = f"http://127.0.0.1:{free_ports(1)[0]}"
    config = Config("local-project", bq.location, "b", "jobs", closed, closed)
    found = {
        c.check: c
        for c in check_bigquery(
            made, lookups(config).projects, dataset, bq.location, bq.project, agent_number="1"
        )
    }
    assert found["dest-dataset"].result == "ok" and found["dest-location"].result == "ok"
    caller = found["dest-caller"]
    assert caller.result == "warn" and "roles/" not in caller.detail
    assert caller.detail == (
        f"cannot tell: Resource Manager did not answer (cannot connect): {NETWORK_FIX}"
    )


def test_doctor_source_checks_a_table_and_refuses_a_dataset(
    bq: LocalStack, made: bigquery.Client, dataset: str
) -> None:
    """`doctor --source` runs the same four checks read-side: the table must exist."""
    bq.create_bucket("doctor-bq")
    table = f"{dataset}.requests_{uuid.uuid4().hex[:6]}"
    missing = doctor(bq, "--source", table)
    assert missing.exit_code == ExitCode.CHECK_FAILED, missing.output
    assert by_name(missing)["source-dataset"]["result"] == "fail"
    made.create_table(
        bigquery.Table(table.removeprefix("bq://"), [bigquery.SchemaField("request", "JSON")])
    )
    found = doctor(bq, "--source", table)
    assert found.exit_code == 0, found.output
    names = [n.replace("dest", "source") for n in NAMES]
    assert list(by_name(found))[-4:] == names
    assert by_name(found)["source-dataset"]["result"] == "ok"
    refused = doctor(bq, "--source", dataset)
    assert refused.exit_code == ExitCode.USAGE
    assert "--source:" in refused.output and "give a table" in refused.output
