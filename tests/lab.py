"""Lab: one test's bucket on the local stack, with raw Vertex calls, uploads and output reads.

The local stack's own tests (tests/emulator/) use it through the `lab` fixture; other tests
that drive the stack below vertexbatch build one from the `stack` and `bucket` fixtures.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from typing import Any

from google.cloud import aiplatform_v1

from vertexbatch.emulator import LocalStack

CLAUDE = "publishers/anthropic/models/claude-sonnet-4-5"
GEMINI = "publishers/google/models/gemini-2.5-flash"


class Lab:
    """Helpers for one test: its bucket, input upload, job creation and output reading."""

    CLAUDE = CLAUDE
    GEMINI = GEMINI

    def __init__(self, stack: LocalStack, bucket: str) -> None:
        self.stack = stack
        self.bucket = bucket
        self.gcs = stack.storage_client()
        self.jobs = stack.jobs_client()
        self.parent = f"projects/{stack.project}/locations/{stack.location}"

    # Lines.

    @staticmethod
    def gemini_line(text: str, key: str = "k", **request: Any) -> dict[str, Any]:
        body = {"contents": [{"role": "user", "parts": [{"text": text}]}], "labels": {"vb_id": key}}
        body.update(request)
        return {"request": body}

    @staticmethod
    def claude_line(text: str, key: str = "k", **request: Any) -> dict[str, Any]:
        body = {
            "anthropic_version": "vertex-2023-10-16",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": text}],
        }
        body.update(request)
        return {"custom_id": key, "request": body}

    # GCS.

    def upload(self, lines: list[Any], name: str | None = None) -> str:
        """Upload JSONL (dict lines are dumped, str lines kept) and return its gs:// URI."""
        name = name or f"in/{uuid.uuid4().hex}.jsonl"
        data = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines)
        self.gcs.bucket(self.bucket).blob(name).upload_from_string(
            data + "\n", content_type="application/jsonl"
        )
        return f"gs://{self.bucket}/{name}"

    def names(self, prefix: str = "") -> list[str]:
        return sorted(b.name for b in self.gcs.list_blobs(self.bucket, prefix=prefix))

    def read_rows(
        self, job: dict[str, Any], file: str = "predictions.jsonl"
    ) -> list[dict[str, Any]]:
        directory = job["outputInfo"]["gcsOutputDirectory"]
        bucket, _, path = directory.removeprefix("gs://").partition("/")
        text = self.gcs.bucket(bucket).blob(f"{path}/{file}").download_as_text()
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def output_names(self, job: dict[str, Any]) -> list[str]:
        directory = job["outputInfo"]["gcsOutputDirectory"]
        bucket, _, path = directory.removeprefix("gs://").partition("/")
        return sorted(
            b.name.removeprefix(path + "/") for b in self.gcs.list_blobs(bucket, prefix=path + "/")
        )

    # Jobs.

    def create(
        self,
        lines: list[Any] | None = None,
        *,
        model: str = GEMINI,
        display_name: str | None = None,
        labels: dict[str, str] | None = None,
        uris: list[str] | None = None,
        output_prefix: str | None = None,
        parent: str | None = None,
    ) -> aiplatform_v1.BatchPredictionJob:
        """Create a job through aiplatform_v1 (uploading lines first when given)."""
        if uris is None:
            uris = [self.upload(lines if lines is not None else [self.gemini_line("hi")])]
        job = aiplatform_v1.BatchPredictionJob(
            display_name=display_name or f"job-{uuid.uuid4().hex[:12]}",
            model=model,
            input_config=aiplatform_v1.BatchPredictionJob.InputConfig(
                instances_format="jsonl", gcs_source=aiplatform_v1.GcsSource(uris=uris)
            ),
            output_config=aiplatform_v1.BatchPredictionJob.OutputConfig(
                predictions_format="jsonl",
                gcs_destination=aiplatform_v1.GcsDestination(
                    output_uri_prefix=output_prefix or f"gs://{self.bucket}/out"
                ),
            ),
            labels=labels or {},
        )
        return self.jobs.create_batch_prediction_job(
            parent=parent or self.parent, batch_prediction_job=job
        )

    def run(self, lines: list[Any], **kwargs: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Create a job, wait for it, return its JSON and its predictions.jsonl rows."""
        job = self.create(lines, **kwargs)
        done = self.stack.wait_job(job.name)
        assert done["state"] == "JOB_STATE_SUCCEEDED", done
        return done, self.read_rows(done)

    # Raw HTTP.

    def raw(
        self, method: str, path: str, body: Any = None, *, data: bytes | None = None
    ) -> tuple[int, Any]:
        """One plain HTTP call to the Vertex service: (status, parsed JSON body)."""
        if data is None and body is not None:
            data = json.dumps(body).encode()
        request = urllib.request.Request(
            self.stack.vertex_endpoint + path, data=data, method=method
        )
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, json.loads(exc.read() or b"{}")

    def job_body(self, uri: str | None = None, **overrides: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "displayName": f"raw-{uuid.uuid4().hex[:12]}",
            "model": GEMINI,
            "inputConfig": {
                "instancesFormat": "jsonl",
                "gcsSource": {"uris": [uri or self.upload([self.gemini_line("hi")])]},
            },
            "outputConfig": {
                "predictionsFormat": "jsonl",
                "gcsDestination": {"outputUriPrefix": f"gs://{self.bucket}/out"},
            },
        }
        body.update(overrides)
        return body
