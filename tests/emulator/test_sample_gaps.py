"""Three places where the stack answered otherwise than Vertex, found by running Google's batch
samples on it (issue 40, item 8), through aiplatform_v1 and google-cloud-bigquery:

- a project-only BigQuery destination (`bq://PROJECT`, what Google's Node.js batch samples
  give) is taken: the job creates a dataset `prediction_<model>_<create time>` in its location;
- a full output table (`bq://P.D.T`) that already exists fails the job, never appended to ("the
  Dataset must exist and table must not exist", BigQueryDestination, v1 REST reference);
- a Gemini line's `fileData` naming a missing object fails that line 404, an `inlineData` that
  is not base64 fails it 400, a URL the stack cannot read fails it saying so; what is read
  (the object, the bytes) changes the answer.
"""

from __future__ import annotations

import base64
import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from google.cloud import bigquery

from tests.emulator.test_bigquery import LOCATION, create, new_dataset
from tests.lab import GEMINI, Lab
from vertexbatch.emulator import LocalStack


def _gemini_lines(lab: Lab) -> list[dict[str, Any]]:
    return [lab.gemini_line("one", key="a"), lab.gemini_line("two", key="b")]


def test_a_project_only_destination_gets_a_dataset_of_the_jobs_own(bq_stack: LocalStack) -> None:
    """`bq://PROJECT`: created, run, its rows in `prediction_<model>_<time>.<table>`, a dataset
    made in the job's location."""
    bq_stack.create_bucket("sample-gaps")
    lab = Lab(bq_stack, "sample-gaps")
    uri = lab.upload(_gemini_lines(lab))
    job = create(bq_stack, model=f"{GEMINI}@001", gcs_source=uri, destination="bq://local-project")
    assert job.output_config.bigquery_destination.output_uri == "bq://local-project"
    done = bq_stack.wait_job(job.name)
    assert done["state"] == "JOB_STATE_SUCCEEDED", done
    dataset_uri = done["outputInfo"]["bigqueryOutputDataset"]
    found = re.fullmatch(
        r"bq://local-project\.prediction_gemini_2_5_flash_001_"
        r"(\d{4}_\d\d_\d\dT\d\d_\d\d_\d\d_\d{3})Z",
        dataset_uri,
    )
    assert found, dataset_uri
    created = datetime.fromisoformat(done["createTime"].replace("Z", "+00:00"))
    assert found.group(1) == created.astimezone(UTC).strftime("%Y_%m_%dT%H_%M_%S_%f")[:-3]
    client = bq_stack.bigquery_client()
    dataset = client.get_dataset(dataset_uri.removeprefix("bq://"))
    assert dataset.location == LOCATION
    table = client.get_table(
        f"{dataset_uri.removeprefix('bq://')}.{done['outputInfo']['bigqueryOutputTable']}"
    )
    assert table.num_rows == 2


def test_a_full_output_table_that_exists_fails_the_job(bq_stack: LocalStack) -> None:
    """The named table must not exist: one that does fails the job (code 9) and keeps its rows;
    one that does not is created; a second job to the same table fails."""
    bq_stack.create_bucket("sample-gaps-t")
    lab = Lab(bq_stack, "sample-gaps-t")
    uri = lab.upload(_gemini_lines(lab))
    dataset = new_dataset(bq_stack)
    table = f"{bq_stack.project}.{dataset}.mine"
    client = bq_stack.bigquery_client()
    client.create_table(bigquery.Table(table, [bigquery.SchemaField("note", "STRING")]))
    taken = bq_stack.wait_job(
        create(bq_stack, model=GEMINI, gcs_source=uri, destination=f"bq://{table}").name
    )
    assert taken["state"] == "JOB_STATE_FAILED"
    assert taken["error"]["code"] == 9
    assert f"BigQuery table {table} already exists" in taken["error"]["message"]
    assert [f.name for f in client.get_table(table).schema] == ["note"]  # not appended to
    fresh = f"{bq_stack.project}.{dataset}.fresh"
    first = bq_stack.wait_job(
        create(bq_stack, model=GEMINI, gcs_source=uri, destination=f"bq://{fresh}").name
    )
    assert first["state"] == "JOB_STATE_SUCCEEDED", first
    assert client.get_table(fresh).num_rows == 2
    second = bq_stack.wait_job(
        create(bq_stack, model=GEMINI, gcs_source=uri, destination=f"bq://{fresh}").name
    )
    assert second["state"] == "JOB_STATE_FAILED" and second["error"]["code"] == 9
    assert client.get_table(fresh).num_rows == 2


def _media_line(key: str, part: dict[str, Any], text: str = "Describe it.") -> dict[str, Any]:
    contents = [{"role": "user", "parts": [{"text": text}, part]}]
    return {"key": key, "request": {"contents": contents}}


def test_media_parts_are_read_as_vertex_reads_them(lab: Lab) -> None:
    """A fileData object that is not there is a 404 line, bytes that are not base64 a 400 line,
    an http(s) URL a 400 line saying the stack does not emulate it; what is read is answered,
    and other bytes or another object give another answer."""
    bucket = lab.gcs.bucket(lab.bucket)
    bucket.blob("media/one.png").upload_from_string(b"first image")
    bucket.blob("media/two.png").upload_from_string(b"second image")
    png = base64.b64encode(b"\x89PNG pixels").decode()
    other = base64.b64encode(b"\x89PNG other pixels").decode()

    def file(name: str) -> dict[str, Any]:
        return {"fileData": {"mimeType": "image/png", "fileUri": f"gs://{lab.bucket}/{name}"}}

    lines = [
        _media_line("missing", file("media/nowhere.png")),
        _media_line("no-bucket", {"file_data": {"file_uri": "gs://no-such-bucket-x/a.png"}}),
        _media_line("one", file("media/one.png")),
        _media_line("two", file("media/two.png")),
        _media_line("inline", {"inlineData": {"mimeType": "image/png", "data": png}}),
        _media_line("inline-other", {"inline_data": {"mime_type": "image/png", "data": other}}),
        _media_line("not-base64", {"inlineData": {"mimeType": "image/png", "data": "%%%"}}),
        _media_line("web", {"fileData": {"fileUri": "https://example.com/a.png"}}),
    ]
    _, rows = lab.run(lines)
    by_key = {row["key"]: row for row in rows}
    assert by_key["missing"]["status"].startswith("Not Found: ")
    missing = json.loads(by_key["missing"]["status"].removeprefix("Not Found: "))["error"]
    assert (missing["code"], missing["status"]) == (404, "NOT_FOUND")
    assert "contents[0].parts[1].fileData.fileUri" in missing["message"]
    assert "nowhere" not in missing["message"]
    assert by_key["no-bucket"]["status"].startswith("Not Found: ")
    bad = json.loads(by_key["not-base64"]["status"].removeprefix("Bad Request: "))["error"]
    assert bad["message"] == (
        "Invalid value at 'contents[0].parts[1].inlineData.data' (TYPE_BYTES), Base64 "
        "decoding failed."
    )
    web = json.loads(by_key["web"]["status"].removeprefix("Bad Request: "))["error"]
    assert "The local stack does not emulate reading" in web["message"]
    for key in ("missing", "no-bucket", "not-base64", "web"):
        assert "response" not in by_key[key]

    def text(key: str) -> str:
        row = by_key[key]
        assert row["status"] == "", row
        return str(row["response"]["candidates"][0]["content"]["parts"][0]["text"])

    assert text("one") != text("two")
    assert text("inline") != text("inline-other")
    bucket.blob("media/one.png").upload_from_string(b"replaced image")
    _, again = lab.run([lines[2]])
    assert again[0]["response"]["candidates"][0]["content"]["parts"][0]["text"] != text("one")


def test_read_media_marks_and_refusals() -> None:
    """The pure reader: URL-safe base64 is bytes too, a system instruction's parts are read, a
    request with no media has no marks, and a missing `data` is the base64 refusal."""
    from vertexbatch.emulator._errors import LineFailure
    from vertexbatch.emulator._media import read_media

    def held(bucket: str, name: str) -> str | None:
        return "md5-of-it" if (bucket, name) == ("b", "o.png") else None

    plain = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    assert read_media(plain, held) == ()
    safe = base64.urlsafe_b64encode(b"\xfb\xff\xfe").decode()
    request = {
        "contents": [{"parts": [{"inlineData": {"data": safe}}]}],
        "systemInstruction": {"parts": [{"fileData": {"fileUri": "gs://b/o.png"}}]},
    }
    marks = read_media(request, held)
    assert isinstance(marks, tuple) and len(marks) == 2 and "[file md5-of-it]" in marks
    request["systemInstruction"]["parts"][0]["fileData"]["fileUri"] = "gs://b/other.png"
    failure = read_media(request, held)
    assert isinstance(failure, LineFailure) and failure.code == 404
    assert "systemInstruction.parts[0].fileData.fileUri" in failure.message
    missing = read_media({"contents": [{"parts": [{"inlineData": {}}]}]}, held)
    assert isinstance(missing, LineFailure) and missing.code == 400


def test_a_batch_line_naming_an_explicit_cache_fails_as_vertex_fails_it(lab: Lab) -> None:
    """What the client refuses at submit (issue 40, item 6) fails the line on the stack too,
    with the words users report from Vertex; the other lines are answered."""
    cache = "projects/p/locations/us-central1/cachedContents/c1"
    lines = [lab.gemini_line("one", key="a"), lab.gemini_line("two", key="b", cachedContent=cache)]
    lines[1]["key"], lines[0]["key"] = "b", "a"
    _, rows = lab.run(lines, model=f"{GEMINI}@001")
    by_key = {row["key"]: row for row in rows}
    assert by_key["a"]["status"] == ""
    error = json.loads(by_key["b"]["status"].removeprefix("Bad Request: "))["error"]
    assert error["message"] == (
        "Model gemini-2.5-flash@001 does not support cached content with batch prediction."
    )


def test_an_online_call_reads_its_media_too(lab: Lab) -> None:
    """google-genai's generate_content: a fileData object that is not there is 404 NOT_FOUND,
    one that is is answered, its content changing the answer."""
    from google.genai import errors as genai_errors
    from google.genai import types

    from tests.emulator.test_genai import genai_client

    lab.gcs.bucket(lab.bucket).blob("online/a.png").upload_from_string(b"an image")
    client = genai_client(lab.stack)

    def ask(name: str) -> str:
        part = types.Part.from_uri(file_uri=f"gs://{lab.bucket}/{name}", mime_type="image/png")
        response = client.models.generate_content(
            model="gemini-2.5-flash", contents=[types.Content(role="user", parts=[part])]
        )
        return str(response.text)

    first = ask("online/a.png")
    with pytest.raises(genai_errors.ClientError) as caught:
        ask("online/nowhere.png")
    assert caught.value.code == 404
    lab.gcs.bucket(lab.bucket).blob("online/a.png").upload_from_string(b"another image")
    assert ask("online/a.png") != first
