"""google-genai's own BigQuery batch tests, unchanged, in API mode against the stack.

google-genai ships its tests in its wheel (`google/genai/tests/`); the BigQuery ones are
`batches/test_create_with_bigquery.py`. Only the harness is ours: a pytest subprocess in genai's
`--mode api`, Vertex only, pointed at the stack by `GOOGLE_VERTEX_BASE_URL` (which
tests/emulator/genai_harness.py hands genai's replay client, as `genai.Client` would), the
stack's project and location, a credentials file holding a token that never expires (no
refresh is tried), and
the tables the tests name (`bq://vertex-sdk-dev.unified_genai_tests_batches.*`) made in the
stack's BigQuery, in the job's location. The embedding model the tests name is added to the
stack's catalogue.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from google import genai
from google.cloud import bigquery

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


@pytest.mark.skipif(not BATCH_TESTS.exists(), reason="this google-genai ships no BigQuery tests")
def test_genai_bigquery_batch_tests_pass(bq_stack: LocalStack, tmp_path: Path) -> None:
    """Every Vertex test of genai's test_create_with_bigquery.py passes against the stack."""
    seed_tables(bq_stack)
    bq_stack.add_model("google", "text-embedding-004")
    credentials = tmp_path / "credentials.json"
    credentials.write_text(
        json.dumps(
            {
                "type": "authorized_user",
                "client_id": "local",
                "client_secret": "local",
                "refresh_token": "local",
                "token": "local-token",
                "expiry": "2099-01-01T00:00:00Z",
            }
        )
    )
    env: dict[str, Any] = {
        **os.environ,
        "GOOGLE_VERTEX_BASE_URL": bq_stack.vertex_endpoint,
        "GOOGLE_CLOUD_PROJECT": bq_stack.project,
        "GOOGLE_CLOUD_LOCATION": bq_stack.location,
        "GOOGLE_APPLICATION_CREDENTIALS": str(credentials),
        "GOOGLE_GENAI_REPLAYS_DIRECTORY": str(tmp_path / "replays"),
        "GOOGLE_GENAI_RUN_VERTEX_ONLY_IN_API_MODE": "1",
        "PYTHONPATH": str(REPO),
    }
    env.pop("GOOGLE_API_KEY", None)
    env.pop("GEMINI_API_KEY", None)
    command = [
        sys.executable, "-m", "pytest", str(BATCH_TESTS),
        "--mode", "api",
        "-c", os.devnull, "--rootdir", str(GENAI_TESTS),
        "-p", "no:bqemulator", "-p", "no:cacheprovider", "-p", "tests.emulator.genai_harness",
        "-q", "-rA",
    ]  # fmt: skip
    done = subprocess.run(
        command,
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    passed = [line for line in report.splitlines() if line.startswith("PASSED")]
    # Three table tests and the async test, on Vertex; the Gemini API ones are skipped.
    assert len(passed) == 4, report
    assert bq_stack.calls()["create"] >= 4
