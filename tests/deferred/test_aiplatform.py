"""``_deferred.aiplatform``: aiplatform_v1's job service without the rest of the package, and the
package whole for whoever imports it later (the same module, the same classes).

A deferred package is tried on a package of the test's own (``deferred_pkg``) in this process;
aiplatform_v1 in fresh interpreters, since this one imported it whole long ago.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from vertexbatch._deferred import aiplatform
from vertexbatch.emulator import LocalStack

NAME = "deferred_pkg_for_tests"


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package whose ``__init__`` counts its runs and imports a submodule, and one more
    submodule it does not import; every module of it gone from ``sys.modules`` after."""
    root = tmp_path / NAME
    root.mkdir()
    (root / "__init__.py").write_text(
        "import builtins\n"
        "builtins.deferred_runs = getattr(builtins, 'deferred_runs', 0) + 1\n"
        "from .inner import Inner\n"
        "from . import inner\n"
        "import sys\n"
        "EARLY = hasattr(sys.modules[__name__], 'VALUE')  # as in an import in progress\n"
        "VALUE = 42\n"
        "__all__ = ['Inner', 'VALUE']\n"
    )
    (root / "inner.py").write_text("class Inner:\n    pass\n")
    (root / "other.py").write_text("from . import inner\nOTHER = inner.Inner\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import builtins

    builtins.deferred_runs = 0  # type: ignore[attr-defined]
    yield root
    for name in [n for n in sys.modules if n == NAME or n.startswith(NAME + ".")]:
        del sys.modules[name]
    del builtins.deferred_runs  # type: ignore[attr-defined]


def _runs() -> int:
    import builtins

    return int(builtins.deferred_runs)  # type: ignore[attr-defined]


def test_submodules_import_without_the_init_and_anything_else_runs_it_once(
    package: Path,
) -> None:
    module = aiplatform._deferred(NAME)
    assert sys.modules[NAME] is module
    import deferred_pkg_for_tests.other as other  # type: ignore[import-not-found]

    assert _runs() == 0  # a submodule, and the submodule it imports: no __init__
    assert other.OTHER.__name__ == "Inner"
    assert module.VALUE == 42  # a name the __init__ defines: it runs, into the same module
    assert _runs() == 1
    assert module.EARLY is False  # a name not yet bound, asked while it runs: missing
    assert module.Inner is other.OTHER  # the classes the submodules made, not new ones
    assert module.__all__ == ["Inner", "VALUE"]
    import deferred_pkg_for_tests  # type: ignore[import-not-found]

    assert deferred_pkg_for_tests is module
    assert _runs() == 1
    with pytest.raises(AttributeError, match="MISSING"):
        module.MISSING  # noqa: B018 - the plain error once the __init__ ran
    assert _runs() == 1


def test_dir_runs_the_init(package: Path) -> None:
    module = aiplatform._deferred(NAME)
    assert "VALUE" in dir(module)
    assert _runs() == 1


def test_a_package_imported_already_is_refused_and_one_deferred_is_itself(package: Path) -> None:
    deferred = aiplatform._deferred(NAME)
    assert aiplatform._deferred(NAME) is deferred  # deferred already: the same
    del sys.modules[NAME]
    import deferred_pkg_for_tests

    assert _runs() == 1
    with pytest.raises(ImportError, match="imported already"):  # the caller imports it whole
        aiplatform._deferred(NAME)
    assert sys.modules[NAME] is deferred_pkg_for_tests
    assert _runs() == 1


def test_an_init_that_fails_leaves_the_package_out_of_sys_modules(package: Path) -> None:
    (package / "__init__.py").write_text("raise RuntimeError('broken package')\n")
    module = aiplatform._deferred(NAME)
    import deferred_pkg_for_tests.inner  # type: ignore[import-not-found]  # still fine

    with pytest.raises(RuntimeError, match="broken package"):
        module.Anything  # noqa: B018
    assert NAME not in sys.modules  # as a failed import leaves it: the next one tries again
    with pytest.raises(RuntimeError, match="broken package"):
        import deferred_pkg_for_tests  # noqa: F401


def test_not_a_package_is_refused(package: Path) -> None:
    with pytest.raises(ImportError, match="not a package"):
        aiplatform._deferred(f"{NAME}.inner")


def _fresh(code: str, env: dict[str, str] | None = None) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; what it printed last, as JSON."""
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


_MODULES = "len([m for m in sys.modules if m.startswith('google.cloud.aiplatform_v1')])"


@pytest.mark.processes
def test_the_job_service_alone_then_the_whole_package_as_a_fresh_import_gives_it() -> None:
    whole = _fresh(
        f"""
        import json, sys
        from google.cloud import aiplatform_v1
        print(json.dumps({{"all": sorted(aiplatform_v1.__all__), "modules": {_MODULES}}}))
        """
    )
    found = _fresh(
        f"""
        import json, sys
        from vertexbatch._deferred.aiplatform import job_service
        service = job_service()
        alone = {_MODULES}
        from google.cloud import aiplatform_v1
        import google.cloud
        from google.cloud.aiplatform_v1.types import BatchPredictionJob
        names = sorted(aiplatform_v1.__all__)
        same = [
            google.cloud.aiplatform_v1 is aiplatform_v1,
            sys.modules["google.cloud.aiplatform_v1"] is aiplatform_v1,
            aiplatform_v1.JobServiceClient is service.JobServiceClient,
            aiplatform_v1.services.job_service.JobServiceClient is service.JobServiceClient,
            aiplatform_v1.types.BatchPredictionJob is service.BatchPredictionJob,
            BatchPredictionJob is service.BatchPredictionJob,
            aiplatform_v1.JobState is service.JobState,
            aiplatform_v1.GcsSource is service.GcsSource,
            aiplatform_v1.EncryptionSpec is service.EncryptionSpec,
            all(getattr(aiplatform_v1, name) is not None for name in names),
            "DatasetServiceClient" in dir(aiplatform_v1),
        ]
        import google.cloud.aiplatform  # aiplatform's own SDK, on top of the whole package
        print(json.dumps({{"alone": alone, "all": names, "same": same, "modules": {_MODULES}}}))
        """
    )
    assert found["alone"] < 60 < whole["modules"]  # type: ignore[operator]
    assert found["all"] == whole["all"]
    assert found["same"] == [True] * 11
    assert found["modules"] >= whole["modules"]  # type: ignore[operator]


@pytest.mark.processes
@pytest.mark.parametrize("first", ["whole", "job service"])
def test_once_imported_whole_its_names_as_they_are_now(first: str) -> None:
    """Imported whole (first, or after the job service), the package's own names, a test's
    patch of one among them: as ``aiplatform_v1.JobServiceClient`` was read before."""
    found = _fresh(
        f"""
        import json
        from vertexbatch._deferred.aiplatform import job_service
        if {first == "job service"}:
            job_service()
        from google.cloud import aiplatform_v1
        original = aiplatform_v1.JobServiceClient
        same = job_service().JobServiceClient is original
        class Patched(original):
            pass
        aiplatform_v1.JobServiceClient = Patched
        print(json.dumps([same, job_service().JobServiceClient is Patched,
                          "__getattr__" in vars(aiplatform_v1)]))
        """
    )
    assert found == [True, True, False]


@pytest.mark.processes
def test_laid_out_otherwise_the_whole_package() -> None:
    found = _fresh(
        f"""
        import json, sys
        from vertexbatch._deferred import aiplatform
        aiplatform._SOURCES["JobServiceClient"] = "services.no_such_service"
        service = aiplatform.job_service()
        from google.cloud import aiplatform_v1
        print(json.dumps([service.JobServiceClient is aiplatform_v1.JobServiceClient,
                          {_MODULES} > 300]))
        """
    )
    assert found == [True, True]


@pytest.mark.processes
def test_threads_asking_for_either_at_once_get_one_package() -> None:
    found = _fresh(
        """
        import json, threading
        from vertexbatch._deferred.aiplatform import job_service
        start = threading.Barrier(8)
        got = []
        def service():
            start.wait()
            got.append(("service", job_service().JobServiceClient))
        def whole():
            start.wait()
            from google.cloud import aiplatform_v1
            got.append(("whole", aiplatform_v1.JobServiceClient, len(aiplatform_v1.__all__)))
        threads = [threading.Thread(target=service if i % 2 else whole) for i in range(8)]
        for t in threads: t.start()
        for t in threads: t.join(120)
        from google.cloud import aiplatform_v1
        print(json.dumps([len(got), all(g[1] is aiplatform_v1.JobServiceClient for g in got),
                          sorted({g[2] for g in got if g[0] == "whole"})]))
        """
    )
    assert found[0] == 8
    assert found[1] is True
    assert found[2] == [1076] or len(found[2]) == 1  # type: ignore[arg-type]


@pytest.mark.processes
def test_a_cold_submit_and_results_import_the_job_service_alone(
    stack: LocalStack, bucket: str
) -> None:
    """The cold process the job service is cut for: a fresh interpreter submits to the stack,
    another reads the job's results, neither importing the rest of aiplatform_v1."""
    import os

    env = {**os.environ, **stack.environment(bucket)}
    submitted = _fresh(
        f"""
        import json, sys
        import vertexbatch as vb
        client = vb.Client.from_env()
        job = client.submit_claude(
            "deferred-cold",
            "claude-sonnet-4-5@20250929",
            [vb.ClaudeRequest(f"k{{i}}", {{"max_tokens": 16,
              "messages": [{{"role": "user", "content": f"say {{i}}"}}]}}) for i in range(3)],
        )
        print(json.dumps({{"job": job.to_dict(), "modules": {_MODULES}}}))
        """,
        env,
    )
    job = submitted["job"]
    stack.wait_job(job["name"], timeout=120)  # type: ignore[index]
    read = _fresh(
        f"""
        import json, os, sys
        import vertexbatch as vb
        client = vb.Client.from_env()
        job = vb.Job.from_dict(json.loads(os.environ["JOB_FOR_TEST"]))
        results = {{r.key: r.outcome for r in client.results(job)}}
        print(json.dumps({{"results": results, "modules": {_MODULES}}}))
        """,
        {**env, "JOB_FOR_TEST": json.dumps(job)},
    )
    assert read["results"] == {"k0": "ok", "k1": "ok", "k2": "ok"}
    assert submitted["modules"] < 60  # type: ignore[operator]
    assert read["modules"] < 60  # type: ignore[operator]
