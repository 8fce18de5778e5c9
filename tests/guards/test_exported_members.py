"""The public surface is exactly what ``__all__`` says."""

import inspect

import vertexbatch
import vertexbatch.emulator


def test_all_is_sorted_and_exact() -> None:
    """__all__ is sorted and lists every public name the package exports, nothing else."""
    public = {name for name in dir(vertexbatch) if not name.startswith("_")}
    public -= {"emulator"}  # a subpackage, imported on demand
    assert vertexbatch.__all__ == sorted(vertexbatch.__all__)
    assert set(vertexbatch.__all__) == public


def test_emulator_all_is_sorted_and_exact() -> None:
    """vertexbatch.emulator's __all__ is sorted and lists every public name it exports."""
    module = vertexbatch.emulator
    public = {name for name in dir(module) if not name.startswith("_")}
    assert module.__all__ == sorted(module.__all__)
    assert set(module.__all__) == public


def test_public_names_report_the_package_as_their_module() -> None:
    """Every public class and function says `vertexbatch` is its module, as a traceback shows it."""
    named = [getattr(vertexbatch, name) for name in vertexbatch.__all__]
    modules = {
        obj.__qualname__: obj.__module__
        for obj in named
        if isinstance(obj, type) or inspect.isfunction(obj)  # not the Literal aliases, the tuples
    }
    assert len(modules) >= 30
    assert set(modules.values()) == {"vertexbatch"}, modules


def test_an_error_pickles_and_names_the_package() -> None:
    """An exception still pickles, and its traceback line says vertexbatch.InvalidRequestError."""
    import pickle
    import traceback

    error = vertexbatch.InvalidRequestError("bad id")
    assert type(pickle.loads(pickle.dumps(error))) is vertexbatch.InvalidRequestError
    line = traceback.format_exception_only(error)[-1]
    assert line == "vertexbatch.InvalidRequestError: bad id\n"


def test_the_run_task_value_is_public() -> None:
    """``vertexbatch.Task`` (runs across tasks) is exported, and names the package."""
    assert "Task" in vertexbatch.__all__
    assert vertexbatch.Task.__module__ == "vertexbatch"
    assert repr(vertexbatch.Task(1, 2)) == "Task(index=1, count=2, attempt=0)"
