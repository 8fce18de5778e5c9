"""A caller's BigQuery table submitted under an id (``BigQuerySource``), through the real clients.

The same requests go once from Python and once from a table loaded with them; each key's Result
is compared field by field. Bad rows, another table under the id, the same table twice, plans,
runs, ``client.aio`` and ``resubmit`` from a table.
"""

from __future__ import annotations

import asyncio
import io
import json
import sys
import uuid
from typing import Any

import pytest
from google.cloud import bigquery

import vertexbatch as vb
from tests.bigquery.test_sink import DIRECTIVES, requests, seen
from tests.helpers import CLAUDE, GEMINI, bucket_names, claude_request, jobs_in
from vertexbatch._requests.gemini_body import gemini_request_body
from vertexbatch.emulator import LocalStack

JSON_SCHEMA = [
    bigquery.SchemaField("custom_id", "STRING"),
    bigquery.SchemaField("request", "JSON"),
    bigquery.SchemaField("note", "STRING"),
]


def body(request: Any) -> dict[str, Any]:
    """The request column's value of a request: Claude's params, Gemini's GenerateContentRequest."""
    if isinstance(request, vb.ClaudeRequest):
        return dict(request.params)
    return gemini_request_body(request.key, request.contents, request.config)


def make_table(
    stack: LocalStack,
    dataset: str,
    rows: list[dict[str, Any]],
    schema: list[bigquery.SchemaField] = JSON_SCHEMA,
) -> str:
    """A fresh table in ``dataset`` (``bq://P.D``) loaded with ``rows``: its ``bq://P.D.T``."""
    client = stack.bigquery_client()
    table = f"{dataset.removeprefix('bq://')}.t_{uuid.uuid4().hex[:8]}"
    client.create_table(bigquery.Table(table, schema))
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    config = bigquery.LoadJobConfig(schema=schema, source_format="NEWLINE_DELIMITED_JSON")
    client.load_table_from_file(io.BytesIO(data), table, job_config=config).result()
    client.close()  # type: ignore[no-untyped-call]
    return f"bq://{table}"


def table_of(stack: LocalStack, dataset: str, given: list[Any]) -> str:
    # Loaded in reverse: the staged rows (sorted by key) must not depend on the table's order.
    rows = [{"custom_id": r.key, "request": body(r), "note": "x"} for r in reversed(given)]
    return make_table(stack, dataset, rows)


def submit(client: vb.Client, provider: str, id: str, requests: Any, **options: Any) -> vb.Job:
    if provider == "anthropic":
        return client.submit_claude(id, CLAUDE, requests, **options)
    return client.submit_gemini(id, GEMINI, requests, **options)


def manifest(stack: LocalStack, bucket: str, id: str) -> dict[str, Any]:
    blob = stack.storage_client().bucket(bucket).blob(f"jobs/{id}/manifest.json")
    data: dict[str, Any] = json.loads(blob.download_as_bytes())
    return data


@pytest.mark.parametrize("provider", ["anthropic", "google"])
def test_a_table_gives_each_key_the_result_its_requests_give(
    bq: LocalStack, bq_client: vb.Client, dataset: str, provider: str
) -> None:
    """Every outcome kind is correlated to the caller's keys as from the same requests given in
    Python; the manifest records the table beside the rows' count and digests."""
    given = requests(provider)
    table = table_of(bq, dataset, given)
    # The table's rows are staged sorted by key: the same requests in that order stage the same
    by_key = sorted(given, key=lambda r: r.key)
    from_python = submit(bq_client, provider, f"py-{provider}", by_key)
    from_table = submit(bq_client, provider, f"bq-{provider}", vb.BigQuerySource(table))
    for job in (from_python, from_table):
        assert bq_client.wait(job, floor=0.01, ceiling=0.05).state == "JOB_STATE_SUCCEEDED"
    expected = {r.key: seen(r) for r in bq_client.results(from_python)}
    got = {r.key: seen(r) for r in bq_client.results(from_table)}
    assert len(got) == len(DIRECTIVES) and got == expected
    assert {value[1] for value in got.values()} >= {"ok", "refused", "truncated", "missing"}
    recorded = manifest(bq, bq_client.bucket, f"bq-{provider}")
    plain = manifest(bq, bq_client.bucket, f"py-{provider}")
    assert recorded["source"] == table and "source" not in plain
    assert {k: v for k, v in recorded.items() if k not in ("source", "snapshot")} == plain
    # resubmit works from what the manifest recorded (the staged input), as for any job
    again = bq_client.resubmit(from_table)
    assert again.id == f"bq-{provider}.r1" and again.keys == sum(
        value[1] in ("retryable", "missing") for value in got.values()
    )


def test_custom_columns_and_a_string_request_column(
    bq: LocalStack, bq_client: vb.Client, dataset: str
) -> None:
    """The caller names the columns; a STRING column of JSON text is read as a JSON column is."""
    schema = [bigquery.SchemaField("id", "STRING"), bigquery.SchemaField("body", "STRING")]
    given = [claude_request("a", "one"), claude_request("b", "two")]
    rows = [{"id": r.key, "body": json.dumps(body(r))} for r in given]
    table = make_table(bq, dataset, rows, schema)
    source = vb.BigQuerySource(table, key_column="id", request_column="body")
    job = bq_client.submit_claude("cols", CLAUDE, source)
    bq_client.wait(job, floor=0.01, ceiling=0.05)
    assert sorted((r.key, r.outcome) for r in bq_client.results(job)) == [("a", "ok"), ("b", "ok")]


def test_the_same_table_twice_adopts_and_another_is_refused(
    bq: LocalStack, bq_client: vb.Client, dataset: str
) -> None:
    """The id claims the table's rows: the same table again returns the job; another table (even
    one of the same rows), or the rows given in Python, is refused naming both origins."""
    given = [claude_request(f"k{i}", f"task {i}") for i in range(3)]
    table = table_of(bq, dataset, given)
    first = bq_client.submit_claude("twice", CLAUDE, vb.BigQuerySource(table))
    assert bq_client.submit_claude("twice", CLAUDE, vb.BigQuerySource(table)) == first
    assert len(jobs_in(bq, bq_client.bucket)) == 1
    other = table_of(bq, dataset, given)
    with pytest.raises(vb.InvalidRequestError, match=f"rows from table {table}, not from table"):
        bq_client.submit_claude("twice", CLAUDE, vb.BigQuerySource(other))
    with pytest.raises(vb.InvalidRequestError, match="not from requests given in Python"):
        bq_client.submit_claude("twice", CLAUDE, given)
    assert len(jobs_in(bq, bq_client.bucket)) == 1
    # a plan of the same table says the id holds its job; of another table, refuses it
    plan = bq_client.plan_claude("twice", CLAUDE, vb.BigQuerySource(table))
    assert plan.submitted == first.name
    with pytest.raises(vb.InvalidRequestError, match="rows from table"):
        bq_client.plan_claude("twice", CLAUDE, vb.BigQuerySource(other))


GOOD = {"max_tokens": 16, "messages": [{"role": "user", "content": "SECRET-CONTENT"}]}


@pytest.mark.parametrize(
    ("rows", "source", "said"),
    [
        ([{"custom_id": "a", "request": GOOD}], {"key_column": "id"}, "has no column 'id'"),
        (
            [{"custom_id": "a", "request": GOOD}],
            {"request_column": "body"},
            "has no column 'body' (request_column)",
        ),
        ([{"custom_id": None, "request": GOOD}], {}, "row 1: its key ('custom_id') is NULL"),
        ([{"custom_id": "", "request": GOOD}], {}, "must be a non-empty string"),
        ([{"custom_id": "a", "request": None}], {}, "key 'a': its request ('request') is NULL"),
        ([{"custom_id": "a", "request": ["SECRET-CONTENT"]}], {}, "is a JSON list, not a JSON"),
        (
            [{"custom_id": "a", "request": GOOD}, {"custom_id": "a", "request": GOOD}],
            {},
            "key 'a': it is on more than one row (rows 1 and 2)",
        ),
        (  # an importer rule, checked as for requests given in Python
            [{"custom_id": "a", "request": {**GOOD, "model": "x"}}],
            {},
            "'a'",
        ),
        ([{"custom_id": "a", "request": GOOD}], {"key_column": "note"}, "key ('note') is NULL"),
        (  # a bad row staged last, after uploads began: they are abandoned, nothing is left
            [{"custom_id": k, "request": GOOD} for k in "ab"]
            + [{"custom_id": "z", "request": {**GOOD, "max_tokens": "SECRET"}}],
            {},
            "'z'",
        ),
    ],
)
def test_a_bad_row_is_refused_before_anything_is_staged(
    bq: LocalStack,
    bq_client: vb.Client,
    dataset: str,
    rows: list[dict[str, Any]],
    source: dict[str, str],
    said: str,
) -> None:
    """The error names the table, the column, the row's key (or its position) and the rule,
    never the content; nothing is staged and no job exists, and a good table then goes through."""
    table = make_table(bq, dataset, rows)
    with pytest.raises(vb.InvalidRequestError) as raised:
        bq_client.submit_claude("bad", CLAUDE, vb.BigQuerySource(table, **source))
    assert said in str(raised.value)
    assert "SECRET" not in str(raised.value)
    assert bucket_names(bq, bq_client.bucket) == [] and jobs_in(bq, bq_client.bucket) == []
    good = make_table(bq, dataset, [{"custom_id": "a", "request": GOOD}])
    assert bq_client.submit_claude("bad", CLAUDE, vb.BigQuerySource(good)).keys == 1


def test_table_and_column_kinds_are_refused_naming_them(
    bq: LocalStack, bq_client: vb.Client, dataset: str
) -> None:
    """A missing table, a key column that is not a STRING, a request that is not JSON text."""
    missing = f"{dataset}.nowhere"
    with pytest.raises(vb.InvalidRequestError, match="nowhere: it does not exist"):
        bq_client.submit_claude("kinds", CLAUDE, vb.BigQuerySource(missing))
    schema = [bigquery.SchemaField("custom_id", "INT64"), bigquery.SchemaField("request", "JSON")]
    ints = make_table(bq, dataset, [{"custom_id": 1, "request": GOOD}], schema)
    with pytest.raises(vb.InvalidRequestError, match="column 'custom_id': it is of Arrow type"):
        bq_client.submit_claude("kinds", CLAUDE, vb.BigQuerySource(ints))
    schema = [bigquery.SchemaField(name, "STRING") for name in ("custom_id", "request")]
    text = make_table(bq, dataset, [{"custom_id": "a", "request": "SECRET {"}], schema)
    with pytest.raises(vb.InvalidRequestError, match=r"request \('request'\) is not JSON text"):
        bq_client.submit_claude("kinds", CLAUDE, vb.BigQuerySource(text))
    deep = make_table(bq, dataset, [{"custom_id": "a", "request": "[" * 200_000}], schema)
    with pytest.raises(vb.InvalidRequestError, match=r"\('request'\) is nested too deeply"):
        bq_client.submit_claude("kinds", CLAUDE, vb.BigQuerySource(deep))
    # Past MAX_DEPTH but shallow enough for json: measured and refused before it is parsed.
    past = make_table(bq, dataset, [{"custom_id": "a", "request": "[" * 200 + "]" * 200}], schema)
    with pytest.raises(vb.InvalidRequestError, match=r"\('request'\) is nested too deeply"):
        bq_client.submit_claude("kinds", CLAUDE, vb.BigQuerySource(past))
    assert bucket_names(bq, bq_client.bucket) == []


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"table": "bq://local-project.ds"}, "names a dataset"),
        ({"table": "gs://b/t"}, "must start with bq://"),
        ({"table": "bq://local-project.ds.t", "key_column": ""}, "key_column must be a column"),
        ({"table": "bq://local-project.ds.t", "key_column": "x", "request_column": "x"}, "differ"),
    ],
)
def test_a_bad_source_is_refused_when_built(given: dict[str, str], said: str) -> None:
    with pytest.raises(vb.InvalidRequestError, match=said):
        vb.BigQuerySource(**given)


def test_a_run_and_the_aio_twins_take_a_table(
    bq: LocalStack, bq_client: vb.Client, dataset: str
) -> None:
    """run_gemini shards a table's rows; client.aio submits and plans one."""
    given = [vb.GeminiRequest(f"g{i}", f"task {i}") for i in range(5)]
    source = vb.BigQuerySource(table_of(bq, dataset, given))
    run = bq_client.run_gemini("run-bq", GEMINI, source, shard_size=2)
    assert len(run.shards) == 3
    while not run.advance().done:
        bq.settle()
    assert sorted(r.key for r in run.results()) == [r.key for r in given]
    again = bq_client.run_gemini("run-bq", GEMINI, source, shard_size=2)  # the same table
    assert again.status().done and len(jobs_in(bq, bq_client.bucket)) == 3

    async def aio() -> tuple[vb.Plan, vb.Job]:
        plan = await bq_client.aio.plan_gemini("aio-bq", GEMINI, source)
        return plan, await bq_client.aio.submit_gemini("aio-bq", GEMINI, source)

    plan, job = asyncio.run(aio())
    assert plan.requests == 5 and job.keys == 5


def test_a_manifest_reads_back_its_source_and_refuses_an_edited_one() -> None:
    from vertexbatch._staged.manifest import Manifest

    written = Manifest(
        "anthropic", CLAUDE, 1, 10, "0" * 32, source="bq://my-proj.ds.t", snapshot="2026-01-01"
    )
    data = written.to_json()
    assert data["source"] == "bq://my-proj.ds.t" and data["snapshot"].startswith("2026")
    assert Manifest.from_json(data, "m") == written
    assert "source" not in Manifest("anthropic", CLAUDE, 1, 10, "0" * 32).to_json()
    for bad in ("bq://my-proj.ds", "gs://b/t", 3):
        with pytest.raises(vb.InvalidRequestError, match="'source'"):
            Manifest.from_json({**data, "source": bad}, "m")


def test_without_the_bigquery_extra_a_source_says_what_to_install(
    bq: LocalStack, bq_client: vb.Client, dataset: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Submit, plan and run from a table refuse before any cloud call, naming the extra."""
    source = vb.BigQuerySource(f"{dataset}.t")
    monkeypatch.setitem(sys.modules, "google.cloud.bigquery_storage_v1", None)
    said = r"a BigQuery source needs the bigquery extra, .*pip install '\.\[bigquery\]'"
    for call in (bq_client.submit_claude, bq_client.plan_claude, bq_client.run_claude):
        with pytest.raises(vb.InvalidRequestError, match=said):
            call("no-extra", CLAUDE, source)
    assert bucket_names(bq, bq_client.bucket) == []


def test_a_gemini_row_with_a_field_no_generate_content_request_has_is_refused(
    bq: LocalStack, bq_client: vb.Client, dataset: str
) -> None:
    good = gemini_request_body("g", "SECRET", None)
    request = {**good, "generation_config": {}, "Patient SECRET": 1}
    table = make_table(bq, dataset, [{"custom_id": "g", "request": request}])
    with pytest.raises(
        vb.InvalidRequestError, match=r"key 'g': the request has unknown field"
    ) as info:
        bq_client.submit_gemini("gem-bad", GEMINI, vb.BigQuerySource(table))
    said = str(info.value).partition("unknown field(s) ")[2]
    assert "(did you mean 'generationConfig'?)" in said and said.count("<field ") == 2
    assert "generation_config" not in said  # the caller's names by position only
    assert "SECRET" not in str(info.value)
    assert bucket_names(bq, bq_client.bucket) == []


def test_a_gemini_row_naming_an_explicit_cache_is_refused(
    bq: LocalStack, bq_client: vb.Client, dataset: str
) -> None:
    """Issue 40, item 6: a source row's cachedContent is refused as in Python, before anything
    is staged, naming the key, never the cache."""
    good = gemini_request_body("g", "Q", None)
    request = {**good, "cachedContent": "projects/p/locations/l/cachedContents/SECRET"}
    table = make_table(bq, dataset, [{"custom_id": "g", "request": request}])
    with pytest.raises(vb.InvalidRequestError, match="request 'g' sets cachedContent") as info:
        bq_client.submit_gemini("gem-cache", GEMINI, vb.BigQuerySource(table))
    assert "SECRET" not in str(info.value)
    assert bucket_names(bq, bq_client.bucket) == []
