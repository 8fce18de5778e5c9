"""aiplatform_v1's job service without the rest of aiplatform_v1: a cold process's largest import.

``from google.cloud import aiplatform_v1`` runs the package's ``__init__``, which imports every
Vertex service and type: 459 modules, about two thirds of a cold submit's or results pass's
imports (docs/performance.md, "The job service alone"). vertexbatch needs one service's client
and the types its requests are built of: 42 modules. ``job_service()`` imports those from their
own modules with ``google.cloud.aiplatform_v1`` and its ``types`` package in ``sys.modules`` as
*deferred* packages (``_deferred``): each holds its ``__path__`` (so its submodules import as
usual) and runs its own ``__init__``, into the same module object, the first time anything else
is asked of it. So whoever imports ``aiplatform_v1`` later gets the whole package, the same
module and the same classes: Google's own ``__lazy_modules__`` (PEP 810) says the same of
Python 3.15, which defers these imports itself.

If ``aiplatform_v1`` is imported already, or a package is not laid out as this expects, the
package is imported whole, as before. tests/deferred/test_aiplatform.py holds the deferred
package to a fresh process's whole one (its names, its classes, later imports, threads).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.machinery
import importlib.util
import sys
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from google.cloud import aiplatform_v1

__all__ = ["PACKAGE", "JobService", "job_service"]

PACKAGE = "google.cloud.aiplatform_v1"
_DEFERRED = (PACKAGE, f"{PACKAGE}.types")  # services' own __init__ imports nothing

# One package's __init__ runs at a time, whichever thread asks first; the others wait for it.
_LOCK = threading.RLock()


@dataclass(frozen=True)
class JobService:
    """What vertexbatch uses of ``aiplatform_v1``: the job service's client and its types
    (the classes ``aiplatform_v1`` exports under the same names)."""

    JobServiceClient: type[aiplatform_v1.JobServiceClient]
    BatchPredictionJob: type[aiplatform_v1.BatchPredictionJob]
    JobState: type[aiplatform_v1.JobState]
    GcsSource: type[aiplatform_v1.GcsSource]
    GcsDestination: type[aiplatform_v1.GcsDestination]
    BigQueryDestination: type[aiplatform_v1.BigQueryDestination]
    EncryptionSpec: type[aiplatform_v1.EncryptionSpec]


# Each name's module under aiplatform_v1 (where its __init__ imports it from).
_SOURCES = {
    "JobServiceClient": "services.job_service",
    "BatchPredictionJob": "types.batch_prediction_job",
    "JobState": "types.job_state",
    "GcsSource": "types.io",
    "GcsDestination": "types.io",
    "BigQueryDestination": "types.io",
    "EncryptionSpec": "types.encryption_spec",
}


def job_service() -> JobService:
    """The job service's client and types: ``aiplatform_v1``'s own names as they are now if the
    package is imported whole (a test's patch of one among them), else imported from their
    modules alone."""
    package = sys.modules.get(PACKAGE)
    if package is not None and not _is_deferred(package):
        return _of(package)
    try:
        return _from_modules()
    except (ImportError, AttributeError):  # imported meanwhile, or laid out otherwise
        return _of(importlib.import_module(PACKAGE))


def _of(package: ModuleType) -> JobService:
    return JobService(**{name: getattr(package, name) for name in _SOURCES})


@functools.cache
def _from_modules() -> JobService:
    # Under the package's own import lock, which a thread importing it whole takes first: that
    # thread then waits, and finds the deferred package (or this one waits, and finds its
    # package imported: ImportError, the whole package). Without it, the two could each hold a
    # module the other imports, and one would be handed a module half imported.
    with _import_lock(PACKAGE):
        for name in _DEFERRED:
            _deferred(name)
        found: dict[str, Any] = {}
        for name, module in _SOURCES.items():
            found[name] = getattr(importlib.import_module(f"{PACKAGE}.{module}"), name)
    return JobService(**found)


def _import_lock(name: str) -> contextlib.AbstractContextManager[Any]:
    """The import system's lock of module ``name`` (held while a thread imports it). It has no
    public name: where it is not found, no lock (a thread importing the package whole at the
    same moment may then see a module half imported)."""
    manager = getattr(importlib._bootstrap, "_ModuleLockManager", None)
    return contextlib.nullcontext() if manager is None else manager(name)


def _deferred(name: str) -> ModuleType:
    """Package ``name`` in ``sys.modules`` (and on its parent) with its ``__init__`` not yet run;
    the package as it is if it is deferred already.

    Its submodules import as any package's do; any other name asked of it (a class, ``__all__``,
    ``dir()``) first runs its ``__init__`` into it, once (``_Init``).

    Raises:
        ImportError: ``name`` is not a package found on the path, or is imported (or being
            imported) already, not deferred.
    """
    with _LOCK:
        existing = sys.modules.get(name)
        if existing is not None:
            if _is_deferred(existing):
                return existing
            raise ImportError(f"{name} is imported already")
        spec = importlib.util.find_spec(name)  # imports the parents (google.cloud)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            raise ImportError(f"{name} is not a package on the path")
        module = importlib.util.module_from_spec(spec)
        init = _Init(module, spec.loader.get_code(name))  # type: ignore[attr-defined]
        module.__dict__["__getattr__"] = init.getattr
        module.__dict__["__dir__"] = init.dir
        sys.modules[name] = module
        parent, _, leaf = name.rpartition(".")
        if parent:  # as the import system binds a submodule
            setattr(sys.modules[parent], leaf, module)
        return module


class _Init:
    """A deferred package's ``__init__``, run into it the first time a name it defines is asked
    for (PEP 562's module ``__getattr__`` and ``__dir__``).

    The thread running it sees the package as an import in progress shows it (a name not yet
    bound is missing, so ``from . import sub`` imports ``sub``); another thread asking meanwhile
    waits on ``_LOCK`` until it has run. A submodule not imported yet is never a reason to run
    it: the import system imports it on the ``AttributeError``. An ``__init__`` that raises
    leaves the package out of ``sys.modules``, as a failed import does.
    """

    def __init__(self, module: ModuleType, code: Any) -> None:
        self._module = module
        self._code = code
        self._runner: int | None = None  # the thread running it
        self._ran = False

    def getattr(self, attr: str) -> Any:
        if self._runner == threading.get_ident() or _is_submodule(self._module, attr):
            raise AttributeError(f"module {self._module.__name__!r} has no attribute {attr!r}")
        self.run()
        return getattr(self._module, attr)

    def dir(self) -> list[str]:
        self.run()
        return sorted(self._module.__dict__)

    def run(self) -> None:
        with _LOCK:
            if self._ran:
                return
            module = self._module
            self._runner = threading.get_ident()
            try:
                exec(self._code, module.__dict__)
            except BaseException:
                if sys.modules.get(module.__name__) is module:
                    del sys.modules[module.__name__]
                raise
            finally:
                self._runner = None
            self._ran = True
            del module.__dict__["__getattr__"], module.__dict__["__dir__"]


def _is_deferred(module: ModuleType) -> bool:
    """Whether ``module`` is a deferred package whose ``__init__`` has not run."""
    return isinstance(getattr(module.__dict__.get("__getattr__"), "__self__", None), _Init)


def _is_submodule(package: ModuleType, attr: str) -> bool:
    """Whether ``attr`` names a module or package in ``package``'s directory."""
    if attr.startswith("__"):
        return False
    finder = importlib.machinery.PathFinder
    return finder.find_spec(f"{package.__name__}.{attr}", package.__path__) is not None
