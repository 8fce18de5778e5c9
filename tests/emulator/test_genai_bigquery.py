"""google-genai's own batch tests, unchanged, in API mode against the stack: the BigQuery ones
and the others (`test_genai_batch_tests_pass`: get, cancel, delete, list, create with GCS or
BigQuery, embedding, Vertex datasets), each passing or a strict xfail naming why.

google-genai ships its tests in its wheel (`google/genai/tests/`); the BigQuery ones are
`batches/test_create_with_bigquery.py`. Only the harness is ours: a pytest subprocess in genai's
`--mode api`, Vertex only, pointed at the stack by `GOOGLE_VERTEX_BASE_URL` (which
tests/emulator/genai_harness.py hands genai's replay client, as `genai.Client` would), the
stack's project and location, a credentials file holding a token that never expires (no
refresh is tried), and
the tables the tests name (`bq://vertex-sdk-dev.unified_genai_tests_batches.*`) made in the
stack's BigQuery, in the job's location. The embedding model the tests name is added to the
stack's catalogue. For the other files, jobs with the fixed ids the tests get, cancel and
delete are made first (`LocalStack.use_job_ids`), and the GCS inputs they name are uploaded.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from google import genai
from google.cloud import bigquery

from tests.helpers import local_credentials
from vertexbatch.emulator import LocalStack

GENAI_TESTS = Path(genai.__file__).parent / "tests"
BATCH_TESTS = GENAI_TESTS / "batches" / "test_create_with_bigquery.py"
DATASET = "vertex-sdk-dev.unified_genai_tests_batches"
REPO = Path(__file__).resolve().parents[2]


def seed_tables(stack: LocalStack) -> None:
    """The input tables genai's tests name, each with one request row."""
    client = stack.bigquery_client(project="vertex-sdk-dev")
    dataset = bigquery.Dataset(DATASET)
    dataset.location = stack.location
    client.create_dataset(dataset, exists_ok=True)
    request = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}
    for name in ("generate_content_requests", "embedding_requests"):
        table = f"{DATASET}.{name}"
        client.delete_table(table, not_found_ok=True)
        client.create_table(bigquery.Table(table, [bigquery.SchemaField("request", "JSON")]))
        client.query(
            f"INSERT INTO `{table}` (request) VALUES (JSON '{json.dumps(request)}')"
        ).result()
    client.close()


def run_genai_tests(
    stack: LocalStack,
    files: list[Path],
    tmp_path: Path,
    *extra: str,
    xfail: dict[str, str] | None = None,
) -> tuple[int, str]:
    """Run genai's own test files in its API mode, Vertex only, against the stack: (exit code,
    report). The endpoint, project and location go in by environment (genai_harness.py hands
    them to genai's replay client), with a credentials file holding a token that never expires
    (no refresh is tried)."""
    credentials = local_credentials(tmp_path)
    env: dict[str, Any] = {
        **os.environ,
        "GOOGLE_VERTEX_BASE_URL": stack.vertex_endpoint,
        "GOOGLE_CLOUD_PROJECT": stack.project,
        "GOOGLE_CLOUD_LOCATION": stack.location,
        "GOOGLE_APPLICATION_CREDENTIALS": str(credentials),
        "GOOGLE_GENAI_REPLAYS_DIRECTORY": str(tmp_path / "replays"),
        "GOOGLE_GENAI_RUN_VERTEX_ONLY_IN_API_MODE": "1",
        "PYTHONPATH": str(REPO),
        "VERTEXBATCH_GENAI_XFAIL": json.dumps(xfail or {}),
    }
    env.pop("GOOGLE_API_KEY", None)
    env.pop("GEMINI_API_KEY", None)
    command = [
        sys.executable, "-m", "pytest", *map(str, files),
        "--mode", "api",
        "-c", os.devnull, "--rootdir", str(GENAI_TESTS),
        "-p", "no:bqemulator", "-p", "no:cacheprovider", "-p", "tests.emulator.genai_harness",
        "-q", "-rA", *extra,
    ]  # fmt: skip
    done = subprocess.run(
        command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    return done.returncode, done.stdout + done.stderr


@pytest.mark.skipif(not BATCH_TESTS.exists(), reason="this google-genai ships no BigQuery tests")
def test_genai_bigquery_batch_tests_pass(bq_stack: LocalStack, tmp_path: Path) -> None:
    """Every Vertex test of genai's test_create_with_bigquery.py passes against the stack."""
    seed_tables(bq_stack)
    bq_stack.add_model("google", "text-embedding-004")
    code, report = run_genai_tests(bq_stack, [BATCH_TESTS], tmp_path)
    assert code == 0, report
    passed = [line for line in report.splitlines() if line.startswith("PASSED")]
    # Three table tests and the async test, on Vertex; the Gemini API ones are skipped.
    assert len(passed) == 4, report
    assert bq_stack.calls()["create"] >= 4


# google-genai's other batch tests, and the fixed job ids they get, cancel and delete.
OTHER_FILES = [
    "test_get.py",
    "test_cancel.py",
    "test_delete.py",
    "test_list.py",
    "test_create.py",
    "test_create_with_gcs.py",
    "test_create_with_file.py",
    "test_embedding.py",
    "test_create_with_vertex_dataset.py",
]  # not test_create_with_inlined_requests.py: it reads tests/data/google.png, not in the wheel
FIXED_IDS = {"get": "5798522612028014592", "cancel": "6339625664542408704"}
FIXED_IDS["delete"] = "7085929781874655232"
NO_MULTIMODAL = "the local stack does not emulate Vertex multimodal datasets"
XFAIL = {
    "test_get.py::test_async_get_with_multimodal_dataset_output": (
        f"{NO_MULTIMODAL} (no output_info.vertex_multimodal_dataset_name)"
    ),
    **{
        f"test_create_with_vertex_dataset.py::{name}": NO_MULTIMODAL
        for name in (
            "test_async_create",
            "test_generate_content_with_vertex_dataset_source",
            "test_generate_content_with_vertex_dataset_source_dict",
            "test_union_generate_content_with_vertex_dataset_name",
        )
    },
    # Each file acts on one fixed job more than once (its table test, then the async one);
    # Vertex refuses the second, as the stack does (genai marks the table tests
    # skip_in_api_mode, "Cannot cancel a batch job multiple times in Vertex", yet runs them).
    "test_cancel.py::test_async_cancel": "the fixed job was cancelled by the test before",
    "test_delete.py::test_delete_batch_job_full_resource_name": (
        "the fixed job was deleted by the test before"
    ),
    "test_delete.py::test_async_delete": "the fixed job was deleted by the tests before",
    "test_list.py::test_async_pager": (
        "needs aiohttp: without it genai's async client (httpx) lowercases header names, "
        "so 'Content-Type' is not in the headers on any server"
    ),
}


def stand_in_jobs(stack: LocalStack, tmp_path: Path) -> None:
    """The GCS inputs genai's tests name, and jobs with the fixed ids they use: one to get, one
    held PENDING to cancel, one finished to delete."""
    from tests.lab import Lab

    stack.create_bucket("unified-genai-tests")
    lab = Lab(stack, "unified-genai-tests")
    request = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}
    bucket = stack.storage_client().bucket("unified-genai-tests")
    for name in ("generate_content_requests", "embedding_requests"):
        bucket.blob(f"batches/input/{name}.jsonl").upload_from_string(
            json.dumps({"request": request}) + "\n"
        )
    missing = [job_id for job_id in FIXED_IDS.values() if not any(
        job["name"].endswith(f"/{job_id}") for job in stack.jobs()
    )]  # fmt: skip
    if not missing:
        return
    stack.use_job_ids(*FIXED_IDS.values())
    stack.faults.hold(display_name="genai-fixed-cancel", state="PENDING")
    for kind in FIXED_IDS:
        job = lab.create(display_name=f"genai-fixed-{kind}")
        if kind != "cancel":
            stack.wait_job(job.name)


@pytest.mark.skipif(not BATCH_TESTS.exists(), reason="this google-genai ships no batch tests")
def test_genai_batch_tests_pass(bq_stack: LocalStack, tmp_path: Path) -> None:
    """Every Vertex test of genai's other batch test files passes against the stack, or is a
    strict xfail naming what the stack cannot do."""
    seed_tables(bq_stack)
    for model in ("text-embedding-004", "gemini-embedding-001"):
        bq_stack.add_model("google", model)
    stand_in_jobs(bq_stack, tmp_path)
    files = [GENAI_TESTS / "batches" / name for name in OTHER_FILES]
    code, report = run_genai_tests(bq_stack, files, tmp_path, xfail=XFAIL)
    bq_stack.faults.release()
    assert code == 0, report
    passed = [line for line in report.splitlines() if line.startswith("PASSED")]
    # The summary's "FAILED path::test" / "ERROR path::test" lines, not a captured log's
    # "ERROR    asyncio:..." (genai's async client closing after its loop: logged, not failed)
    failed = [line for line in report.splitlines() if re.match(r"(FAILED|ERROR) \S+::", line)]
    assert not failed and len(passed) >= 30, report  # 33 with google-genai 2.x today
