"""The public surface is exactly what ``__all__`` says."""

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
