"""The cold-process benchmark writes the library's bytecode first, as an install does, so its
children do not compile vertexbatch from source where ``PYTHONDONTWRITEBYTECODE`` is set."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from benchmarks import cold_process


def test_compile_library_writes_bytecode_even_where_python_would_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # as PYTHONDONTWRITEBYTECODE=1
    package = tmp_path / "pkg"
    (package / "inner").mkdir(parents=True)
    sources = [package / "__init__.py", package / "inner" / "__init__.py", package / "mod.py"]
    for source in sources:
        source.write_text("VALUE = 1\n")
    cold_process.compile_library(package)
    for source in sources:
        assert Path(importlib.util.cache_from_source(str(source))).is_file(), source


def test_compile_library_refuses_a_module_that_does_not_compile(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("def broken(:\n")
    with pytest.raises(RuntimeError, match="could not write the bytecode"):
        cold_process.compile_library(package)
