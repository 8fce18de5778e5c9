"""What docs/testing.md and docs/local-stack.md say code configured by the environment needs
beyond the stack's variables: google-genai's base URL variable, and BigQuery reads that do not
open a Storage Read client on Google's endpoint. Each runs against the local stack as shown."""

from __future__ import annotations

import io
import json
import re
import subprocess
import uuid
from pathlib import Path

import pytest

from vertexbatch.emulator import LocalStack

DOCS = Path(__file__).resolve().parents[2] / "docs"
_EXPORT = re.compile(r"^\s*export GOOGLE_\w+_BASE_URL=.*$", re.MULTILINE)


def _documented_lines(page: str) -> list[str]:
    return [line.strip() for line in _EXPORT.findall((DOCS / page).read_text())]


def test_both_pages_show_the_same_lines() -> None:
    """testing.md and local-stack.md give the same lines, and both the BigQuery setting."""
    lines = _documented_lines("testing.md")
    assert len(lines) == 2 and lines == _documented_lines("local-stack.md")
    for page in ("testing.md", "local-stack.md"):
        text = (DOCS / page).read_text()
        assert "create_bqstorage_client=False" in text and "reset_calls()" in text, page
    assert 'eval "$(vertexbatch emulator)"` would never return' in (DOCS / "testing.md").read_text()


def _environment_after_the_lines(stack: LocalStack, bucket: str) -> dict[str, str]:
    """The stack's variables, then the documented lines run by a shell, as a user runs them."""
    script = "\n".join(_documented_lines("testing.md")) + "\nenv -0"
    shown = subprocess.run(
        ["bash", "-c", script],
        env=stack.environment(bucket),
        capture_output=True,
        check=True,
        timeout=30,
    ).stdout.decode()
    return dict(item.split("=", 1) for item in shown.split("\0") if "=" in item)


@pytest.mark.parametrize("by", ["argument", "variable"])
def test_genai_reaches_the_stack_by_the_variables(
    stack: LocalStack, bucket: str, monkeypatch: pytest.MonkeyPatch, by: str
) -> None:
    """google-genai in Vertex mode reaches the stack once the documented lines ran, given the
    project and location from the stack's variables (and any credentials): with `vertexai=True`
    and with GOOGLE_GENAI_USE_VERTEXAI=true."""
    from google import genai
    from google.genai import errors
    from google.oauth2.credentials import Credentials

    env = _environment_after_the_lines(stack, bucket)
    assert env["GOOGLE_VERTEX_BASE_URL"] == stack.vertex_endpoint
    for name in ("GOOGLE_VERTEX_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_CLOUD_PROJECT"):
        monkeypatch.setenv(name, env[name])
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", env["GOOGLE_CLOUD_LOCATION"])
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_ENTERPRISE"):
        monkeypatch.delenv(name, raising=False)
    # As the pages show it: project and location passed, from the same variables.
    where = {"project": env["GOOGLE_CLOUD_PROJECT"], "location": env["GOOGLE_CLOUD_LOCATION"]}
    credentials = Credentials(token="local")  # any token: the stack checks none
    if by == "argument":
        monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
        client = genai.Client(vertexai=True, credentials=credentials, **where)
    else:
        monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
        client = genai.Client(credentials=credentials, **where)
    before = len(stack.received("generateContent"))
    # Without them google-genai 2.34.0 takes the base URL for an API gateway's: every call goes
    # to the bare URL (the stack answers 404), whatever GOOGLE_CLOUD_PROJECT/LOCATION say.
    bare = genai.Client(credentials=credentials, **({"vertexai": True} if by == "argument" else {}))
    with bare, pytest.raises(errors.ClientError) as lost:
        bare.models.generate_content(model="gemini-2.5-flash", contents="Hello.")
    assert lost.value.code == 404
    with client:
        answer = client.models.generate_content(model="gemini-2.5-flash", contents="Hello.")
    assert answer.text
    assert len(stack.received("generateContent")) == before + 1


def test_bigquery_reads_by_the_documented_settings(
    bigquery_local: LocalStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`to_arrow()` (as `to_dataframe()`) reads a table and a query's results from the stack with
    `create_bqstorage_client=False`, the client built from BIGQUERY_EMULATOR_HOST; a table also
    through `bqstorage_client=stack.bigquery_read_client()`."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import bigquery

    stack = bigquery_local
    for name, value in stack.bigquery_environment().items():
        monkeypatch.setenv(name, value)
    client = bigquery.Client(project=stack.project, credentials=AnonymousCredentials())
    dataset = f"reads_{uuid.uuid4().hex[:8]}"
    client.create_dataset(dataset)
    table = f"{stack.project}.{dataset}.rows"
    rows = "".join(json.dumps({"key": f"k{i}"}) + "\n" for i in range(3)).encode()
    config = bigquery.LoadJobConfig(
        schema=[bigquery.SchemaField("key", "STRING")], source_format="NEWLINE_DELIMITED_JSON"
    )
    client.load_table_from_file(io.BytesIO(rows), table, job_config=config).result()
    listed = client.list_rows(client.get_table(table))
    assert listed.to_arrow(create_bqstorage_client=False).num_rows == 3
    queried = client.query(f"SELECT key FROM `{table}` ORDER BY key").result()
    # to_dataframe() takes the same keyword (it needs pandas, which this install lacks).
    arrow = queried.to_arrow(create_bqstorage_client=False)
    assert arrow.column("key").to_pylist() == ["k0", "k1", "k2"]
    through = client.list_rows(client.get_table(table))
    assert through.to_arrow(bqstorage_client=stack.bigquery_read_client()).num_rows == 3
