"""The builds and installs the install tests share, made once a run (a pytest plugin: the root
``conftest.py`` names it in ``pytest_plugins``).

``wheel_dist``: the checkout's sdist and the wheel built from it (``python -m build``, as the
Dockerfile's builder stage builds the wheel). ``dockerfile_venv``: a fresh virtual environment
(no site packages of the dev one, no checkout on the path) holding that wheel with the extras the
Dockerfile installs, plus the job's entrypoint copied where the image puts it. A user's install,
step by step: nothing comes from the dev environment but the Python that runs ``venv``.

The wheel goes in with the newest pip, run from its own wheel (``python pip.whl/pip install``, as
``ensurepip`` runs its bundled pip), into a venv made ``--without-pip``: the pip a venv bundles
(23.2 with Python 3.11) spent about 30 CPU-s resolving the dependencies against the package index
(matching each of tens of thousands of files' tags), the newest about 11, and seeding the venv
with pip and setuptools about 6 more. pip resolves and installs the same distributions either
way; the venv holds no pip or setuptools of its own, which the job does not use.

Under xdist every worker is a session of its own, so a session fixture alone would build once a
worker. Each build runs under a file lock in a folder every worker of one run shares (the base
temp's parent under xdist, the base temp itself without it): the first worker to ask builds and
marks it done, the others wait on the lock and reuse it. A build that fails leaves no mark; the
next worker to ask builds again and fails with its own output.

``readme_demo``: `.venv/bin/vertexbatch demo --fast` run once, as the README's user runs it, for
the tests that read what it prints (integration_tests/test_demo_next_lines.py,
tests/command/test_demo_bigquery.py, tests/command/test_cli.py): a demo is about 9 CPU-s, and
each of them ran one of its own.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 300


def run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a command to completion; a non-zero exit fails the test with its output."""
    ran = subprocess.run(
        args, env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    assert ran.returncode == 0, f"{args[:4]} exited {ran.returncode}:\n{ran.stdout}\n{ran.stderr}"
    return ran


def clean_env() -> dict[str, str]:
    """This process's environment without what would put the checkout or this venv in reach."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "CLOUD_RUN_")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


def venv_env() -> dict[str, str]:
    """``clean_env`` for a process of a shared environment, writing bytecode where this
    process's environment says not to (``PYTHONDONTWRITEBYTECODE``): the venv is installed
    ``--no-compile``, so the first process to import a module compiles it once for the others
    instead of each process compiling from source what it imports."""
    return {k: v for k, v in clean_env().items() if k != "PYTHONDONTWRITEBYTECODE"}


def shared_dir(factory: pytest.TempPathFactory) -> Path:
    """A folder all sessions of this run share: every xdist worker's, or the one session's."""
    base = factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared-installs"
    shared.mkdir(parents=True, exist_ok=True)
    return shared


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # waits while another worker builds
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder ``name`` in the run's shared folder, filled by ``build`` in the first session
    to ask; later sessions (other xdist workers) wait for it and reuse it."""
    shared = shared_dir(factory)
    target, done = shared / name, shared / f"{name}.done"
    with _locked(shared / f"{name}.lock"):
        if not done.exists():
            shutil.rmtree(target, ignore_errors=True)  # what a failed build left
            target.mkdir()
            build(target)
            done.touch()
    return target


def _build_dist(out: Path) -> None:
    """``build`` in a folder of its own, then the sdist and the wheel built from the sdist."""
    env = clean_env()
    tool = out / "buildtool"
    run([sys.executable, "-m", "pip", "install", "-q", "--target", str(tool), "build"], env, out)
    dist = out / "dist"
    build = [sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)]
    run(build, {**env, "PYTHONPATH": str(tool)}, out)


@pytest.fixture(scope="session")
def wheel_dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder holding the checkout's sdist and the wheel built from it."""
    return built_once(tmp_path_factory, "wheel-dist", _build_dist) / "dist"


def _newest_pip(work: Path, env: dict[str, str]) -> Path:
    """The newest pip's wheel from the package index, downloaded into ``work/pip``."""
    where = work / "pip"
    fetch = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
    run([*fetch, "--dest", str(where), "pip"], env, work)
    [wheel] = where.glob("pip-*-py3-none-any.whl")
    return wheel


@pytest.fixture(scope="session")
def dockerfile_venv(wheel_dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with ``venv/`` (a fresh virtual environment: the wheel with the Dockerfile's
    extras, installed by the newest pip) and ``app/`` (the job's entrypoint where the image
    puts it: WORKDIR /app, examples/...)."""
    from tests.docs.test_dockerfile import installed_extras, stages

    def build(work: Path) -> None:
        env = clean_env()
        run([sys.executable, "-m", "venv", "--without-pip", str(work / "venv")], env, work)
        [wheel] = wheel_dist.glob("vertexbatch-*-py3-none-any.whl")
        extras = ",".join(sorted(installed_extras()))
        python = str(work / "venv" / "bin" / "python")
        pip = f"{_newest_pip(work, env)}/pip"  # a wheel runs as a zip: pip's own __main__
        install = [python, pip, "install", "-q", "--no-compile", f"{wheel}[{extras}]"]
        run(install, env, work)
        job = stages()[-1]
        for image_path, source in job.files.items():
            target = work / "app" / Path(image_path).relative_to(job.workdir)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / source, target)

    return built_once(tmp_path_factory, "dockerfile-venv", build)


# Makes the modules named in VB_BLOCKED (a JSON list) unimportable, each name and what lies in it:
# a process that runs it first stands on an install without them.
BLOCKER = """
import importlib.abc, json, os, sys
BLOCKED = frozenset(json.loads(os.environ["VB_BLOCKED"]))
class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):  # the name or a package it lies in
        parts = name.split(".")
        if any(".".join(parts[:i]) in BLOCKED for i in range(1, len(parts) + 1)):
            raise ModuleNotFoundError(f"No module named {name!r} (not in this install)")
        return None
sys.meta_path.insert(0, Blocked())
"""
# The README's install: the demo's, without the BigQuery extras.
README_INSTALL = "'vertexbatch[cli,local]'"


def fresh_shell() -> dict[str, str]:
    """A new login's environment, as far as a test can: PATH without any vertexbatch on it."""
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    path = [p for p in path if not (Path(p) / "vertexbatch").exists()]
    return {"PATH": os.pathsep.join(path) or os.defpath, "HOME": os.environ.get("HOME", "/")}


@dataclass(frozen=True)
class Ran:
    """A finished process: its exit status and what it printed."""

    returncode: int
    stdout: str
    stderr: str


@pytest.fixture(scope="session")
def readme_demo(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    """`.venv/bin/vertexbatch demo --fast`, typed in a fresh shell (``fresh_shell``) in a folder
    standing for the clone, whose ``.venv`` is this environment, on the README's install: what
    `pip install '.[cli,local]'` would not have is unimportable (``BLOCKER``, run as the
    process's ``sitecustomize``). The checkout comes first on the path, so the demo is this
    checkout's. Whatever its exit status, each test that reads it checks it."""
    from tests.docs.test_examples_install import blocked_modules

    def build(work: Path) -> None:
        clone, site = work / "clone", work / "site"
        clone.mkdir()
        (clone / ".venv").symlink_to(Path(sys.prefix))  # the README's install
        site.mkdir()
        (site / "sitecustomize.py").write_text(BLOCKER)
        env = {**fresh_shell(), "PYTHONPATH": f"{site}{os.pathsep}{ROOT}"}
        env["VB_BLOCKED"] = json.dumps(blocked_modules(README_INSTALL))
        ran = subprocess.run(
            ["bash", "-c", ".venv/bin/vertexbatch demo --fast"],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        (work / "ran.json").write_text(json.dumps([ran.returncode, ran.stdout, ran.stderr]))

    returncode, stdout, stderr = json.loads(
        (built_once(tmp_path_factory, "readme-demo", build) / "ran.json").read_text()
    )
    return Ran(returncode, stdout, stderr)
