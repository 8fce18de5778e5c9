"""One cold-process measurement: a fresh interpreter, timed from before its first import of the
code measured to the end of the call (``benchmarks.cold_process`` is the parent).

``python -m benchmarks.cold_child '<json spec>'`` prints ``RESULT <json>`` as its last line
(``--serve``: a smoke run's child, one spec a line on stdin, a ``RESULT`` line for each). This
module imports only the standard library and ``benchmarks.workload`` (which imports nothing of
vertexbatch or Google's libraries until a request is made), and the workload's passages are built
before the clock starts: the clock then covers what a Cloud Run task or a scheduled function pays,
imports included, for one submit or one results pass.

Two sides of each step:

- *hand*: what a user writes without vertexbatch. Staging: import google-cloud-storage and
  google-cloud-aiplatform's ``aiplatform_v1``, build their clients, ``json.dumps`` every line into
  one string, ``upload_from_string``, one ``create_batch_prediction_job``. Results: the same
  imports and clients, ``get_batch_prediction_job`` for the output directory, then for each output
  file ``download_as_bytes``, ``splitlines`` and ``json.loads`` every line.
- *vb*: ``import vertexbatch``, ``Client.for_endpoints(...)``, then ``submit_claude`` /
  ``submit_gemini`` from a generator, or iterating ``client.results(job)``.

And what the benchmark shows apart: the imports and clients alone (``import_hand``,
``import_vb``), and one call of vertexbatch's fixed per-call work in a cold process (the listing
of an id's jobs, the manifest read, the key map read), timed alone after the imports and the
client (``call_*``: ``call_seconds``, ``call_cpu``).

Figures: wall seconds (``time.perf_counter``), CPU seconds of the whole process, every thread
(``time.process_time``), and the process's peak RSS (``VmHWM``, never reset: the whole cold
process, interpreter included).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import workload  # stdlib only until a request is made

__all__ = ["OPS", "main"]

JSONL = "application/jsonl"
PUBLISHERS = {"claude": "anthropic", "gemini": "google"}
MODELS = {"claude": workload.CLAUDE_MODEL, "gemini": workload.GEMINI_MODEL}


def _peak() -> int:
    """The process's peak RSS in bytes (``VmHWM``)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")  # pragma: no cover - Linux only


def _hand_clients(spec: dict[str, Any]) -> tuple[Any, Any, Any]:
    """google-cloud-storage and aiplatform_v1 clients, as a hand-written script builds them
    (anonymous credentials and the stack's endpoints in place of the cloud's), and the module."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import aiplatform_v1, storage

    credentials = AnonymousCredentials()  # type: ignore[no-untyped-call]
    store = storage.Client(
        project=spec["project"],
        credentials=credentials,
        client_options={"api_endpoint": spec["storage_endpoint"]},
    )
    jobs = aiplatform_v1.JobServiceClient(
        transport="rest",
        credentials=credentials,
        client_options={"api_endpoint": spec["vertex_endpoint"]},
    )
    return store, jobs, aiplatform_v1


def _vb_client(spec: dict[str, Any]) -> Any:
    import vertexbatch as vb

    return vb.Client.for_endpoints(
        vertex_endpoint=spec["vertex_endpoint"],
        storage_endpoint=spec["storage_endpoint"],
        project=spec["project"],
        location=spec["location"],
        bucket=spec["bucket"],
        prefix=spec["prefix"],
    )


def _import_hand(spec: dict[str, Any]) -> dict[str, Any]:
    _hand_clients(spec)
    return {}


def _import_vb(spec: dict[str, Any]) -> dict[str, Any]:
    _vb_client(spec)
    return {}


def _stage_hand(spec: dict[str, Any]) -> dict[str, Any]:
    store, jobs, aiplatform_v1 = _hand_clients(spec)
    provider = spec["provider"]
    lines = workload.raw_lines(provider, spec["n"], spec["line_bytes"])
    text = "\n".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) for line in lines)
    text += "\n"
    store.bucket(spec["bucket"]).blob(spec["object"]).upload_from_string(text, content_type=JSONL)
    job = jobs.create_batch_prediction_job(
        parent=f"projects/{spec['project']}/locations/{spec['location']}",
        batch_prediction_job=aiplatform_v1.BatchPredictionJob(
            display_name=spec["id"],
            model=f"publishers/{PUBLISHERS[provider]}/models/{MODELS[provider]}",
            input_config=aiplatform_v1.BatchPredictionJob.InputConfig(
                instances_format="jsonl",
                gcs_source=aiplatform_v1.GcsSource(
                    uris=[f"gs://{spec['bucket']}/{spec['object']}"]
                ),
            ),
            output_config=aiplatform_v1.BatchPredictionJob.OutputConfig(
                predictions_format="jsonl",
                gcs_destination=aiplatform_v1.GcsDestination(
                    output_uri_prefix=f"gs://{spec['bucket']}/hand-out/{spec['id']}"
                ),
            ),
        ),
    )
    return {"bytes": len(text.encode()), "job_name": job.name}


def _stage_vb(spec: dict[str, Any]) -> dict[str, Any]:
    client = _vb_client(spec)
    n, size = spec["n"], spec["line_bytes"]
    if spec["provider"] == "claude":
        requests = workload.claude_requests(n, size)
        job = client.submit_claude(spec["id"], workload.CLAUDE_MODEL, requests)
    else:
        requests = workload.gemini_requests(n, size)
        job = client.submit_gemini(spec["id"], workload.GEMINI_MODEL, requests)
    return {"job": job.to_dict()}


def _results_hand(spec: dict[str, Any]) -> dict[str, Any]:
    store, jobs, _ = _hand_clients(spec)
    job = jobs.get_batch_prediction_job(name=spec["job"]["name"])
    bucket, _, path = job.output_info.gcs_output_directory.removeprefix("gs://").partition("/")
    rows = 0
    for blob in store.list_blobs(bucket, prefix=path.rstrip("/") + "/"):
        if blob.name.endswith(".jsonl"):
            for line in blob.download_as_bytes().splitlines():
                if line:
                    json.loads(line)
                    rows += 1
    return {"lines": rows}


def _results_vb(spec: dict[str, Any]) -> dict[str, Any]:
    import vertexbatch as vb

    client = _vb_client(spec)
    rows = sum(1 for _ in client.results(vb.Job.from_dict(spec["job"])))
    return {"lines": rows}


def _call(work: Callable[[Any, dict[str, Any]], Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """After the imports and the client, one call of ``work(client, spec)`` timed alone."""

    def op(spec: dict[str, Any]) -> dict[str, Any]:
        client = _vb_client(spec)
        cpu = time.process_time()
        start = time.perf_counter()
        work(client, spec)
        return {
            "call_seconds": time.perf_counter() - start,
            "call_cpu": time.process_time() - cpu,
        }

    return op


def _listing(client: Any, spec: dict[str, Any]) -> None:
    client._cloud.vertex.list_for_id(spec["id"])


def _manifest(client: Any, spec: dict[str, Any]) -> None:
    from vertexbatch._staged.manifest import read_manifest

    if read_manifest(client._cloud.staging, spec["id"]) is None:
        raise RuntimeError(f"no manifest staged under {spec['id']!r}")


def _key_map(client: Any, spec: dict[str, Any]) -> None:
    import vertexbatch as vb
    from vertexbatch._staged.read import read_key_map

    read_key_map(client._cloud.staging, vb.Job.from_dict(spec["job"]))


OPS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "import_hand": _import_hand,
    "import_vb": _import_vb,
    "stage_hand": _stage_hand,
    "stage_vb": _stage_vb,
    "results_hand": _results_hand,
    "results_vb": _results_vb,
    "call_listing": _call(_listing),
    "call_manifest": _call(_manifest),
    "call_key_map": _call(_key_map),
}


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one operation from a cold start and return its figures."""
    op = OPS[spec["op"]]
    workload._pool(spec["line_bytes"])  # the requests' passages: data, made before the clock
    cpu = time.process_time()
    start = time.perf_counter()
    extra = op(spec)
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    return {"op": spec["op"], "seconds": seconds, "cpu": cpu, "peak_rss": _peak(), **extra}


def main(argv: list[str] | None = None) -> int:
    """``'<json spec>'``: one measurement; ``--serve``: a spec a line on stdin, a ``RESULT`` line
    for each, until stdin ends (a smoke run's child, ``benchmarks.children.Served``)."""
    args = sys.argv[1:] if argv is None else argv
    specs = (
        (json.loads(line) for line in sys.stdin) if args[0] == "--serve" else [json.loads(args[0])]
    )
    for spec in specs:
        sys.stdout.write("RESULT " + json.dumps(measure(spec)) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
