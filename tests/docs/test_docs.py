"""The docs show code the tests run, and name only files that exist.

Each ```python block in docs/*.md includes a file (`--8<-- "path"`, expanded by
pymdownx.snippets when the site is built) that a test runs; a short fragment that cannot run
alone is marked, with its reason, on the line before its fence. The included scripts run in
integration_tests/test_docs_examples.py, the site builds in integration_tests/test_docs_build.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vertexbatch._command.cli_render import ExitCode

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(p.name for p in DOCS.glob("*.md"))
RUNS_DOCS_EXAMPLES = "integration_tests/test_docs_examples.py"

# Every file a page includes, and the test file that runs it.
RUN_BY = {
    "docs/examples/quickstart.py": RUNS_DOCS_EXAMPLES,
    "docs/examples/local_stack.py": RUNS_DOCS_EXAMPLES,
    "docs/examples/point_clients.py": RUNS_DOCS_EXAMPLES,
    "docs/examples/run_in_one_process.py": RUNS_DOCS_EXAMPLES,
    "docs/examples/telemetry.py": RUNS_DOCS_EXAMPLES,
    "docs/examples/pay_once.py": RUNS_DOCS_EXAMPLES,
    "docs/examples/testing/conftest.py": RUNS_DOCS_EXAMPLES,
    "docs/examples/testing/my_pipeline.py": RUNS_DOCS_EXAMPLES,
    "docs/examples/testing/test_my_pipeline.py": RUNS_DOCS_EXAMPLES,
    "docs/examples/asyncio_basics.py": "tests/docs/test_aio_examples.py",
    "docs/examples/job_controls.py": "tests/job/test_job_controls.py",
    "docs/examples/spend_and_budget.py": "tests/plans/test_budget.py",
    "docs/examples/canary.py": "tests/client/test_canary.py",
    "docs/examples/progress.py": "tests/observe/test_progress.py",
    "docs/examples/typed_results.py": "tests/schema/test_typed_results.py",
    "docs/examples/open_models.py": "tests/job/test_chat_lane.py",
    "docs/examples/text_embeddings.py": "tests/embeddings/test_text_embedding_stack.py",
    "docs/examples/bigquery_sink.py": "tests/bigquery/test_command.py",
    "docs/examples/bigquery_source.py": "tests/bigquery/test_command.py",
    "docs/examples/bigquery_run.py": "tests/bigquery/test_runs.py",
    "docs/examples/bigquery_tasks.py": "tests/bigquery/test_tasks.py",
    "docs/examples/sdks/aiplatform_v1_recipe.py": "tests/emulator/test_sdk_recipes.py",
    "docs/examples/sdks/aiplatform_recipe.py": "tests/emulator/test_sdk_recipes.py",
    "docs/examples/sdks/vertexai_recipe.py": "tests/emulator/test_sdk_recipes.py",
    "docs/examples/sdks/genai_recipe.py": "tests/emulator/test_sdk_recipes.py",
    "examples/agent_executor.py": "tests/docs/test_examples.py",
    "examples/async_agent_executor.py": "tests/docs/test_aio_examples.py",
    "examples/bigquery_table.py": "tests/docs/test_examples_install.py",
    "examples/nightly_run.py": "tests/runs/test_run_examples.py",
    "examples/run_advancer.py": "tests/runs/test_run_examples.py",
    "examples/embeddings_index.py": "tests/docs/test_examples.py",
    "examples/structured_agent.py": "tests/docs/test_examples.py",
    "examples/tool_loop.py": "tests/docs/test_examples.py",
    "examples/cloud_run_job.py": "tests/docs/test_examples.py",
}
# A fragment is marked `<!-- fragment: why it cannot run alone -->` just above its fence.
FRAGMENT = re.compile(r"<!-- fragment: \S.* -->")
MAX_FRAGMENTS = 2

_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)
_INCLUDE = re.compile(r'--8<-- "([^"]+)"')
_README_PYTHON = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)
# Repository paths a page names in backticks: `tests/command/test_cli.py`, `examples/x.py::test_y`.
_NAMED_PATH = re.compile(
    r"`((?:docs|examples|tests|integration_tests|benchmarks|vertexbatch|reference)/[^`\s:]*)"
)
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _blocks(page: str) -> list[tuple[str, str]]:
    """Each Python block of the page, with the line just above its fence."""
    text = (DOCS / page).read_text()
    found = []
    for match in _BLOCK.finditer(text):
        above = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        found.append((above, match.group(1)))
    return found


def _includes(body: str) -> list[str] | None:
    """The paths a block includes, if it is nothing but whole-file includes."""
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    matches = [_INCLUDE.fullmatch(line) for line in lines]
    if not lines or not all(matches):
        return None
    return [m.group(1) for m in matches if m]


@pytest.mark.parametrize("page", PAGES)
def test_python_blocks_include_tested_files(page: str) -> None:
    """Each Python block includes whole files a test runs, unless marked as a fragment."""
    for above, body in _blocks(page):
        if FRAGMENT.fullmatch(above.strip()):
            continue
        paths = _includes(body)
        assert paths is not None, (
            f"docs/{page}: a Python block that is not an include of a tested file:\n{body}"
        )
        for path in paths:
            assert path in RUN_BY, f"docs/{page} includes {path}, which no test is known to run"


def test_few_fragments() -> None:
    """Fragments that cannot run alone stay the exception."""
    marked = [page for page in PAGES for above, _ in _blocks(page) if FRAGMENT.fullmatch(above)]
    assert len(marked) <= MAX_FRAGMENTS, marked


@pytest.mark.parametrize("path", sorted(RUN_BY))
def test_included_files_are_run_by_their_test(path: str) -> None:
    """Each included file exists, and the test file said to run it names it."""
    assert (ROOT / path).is_file(), path
    runner = ROOT / RUN_BY[path]
    assert Path(path).stem in runner.read_text(), f"{RUN_BY[path]} does not name {path}"


def test_every_docs_example_is_shown() -> None:
    """No file under docs/examples is left out of the pages (or of RUN_BY)."""
    files = {p.relative_to(ROOT).as_posix() for p in (DOCS / "examples").rglob("*.py")}
    included = {
        path for page in PAGES for _, body in _blocks(page) for path in _includes(body) or []
    }
    assert files <= included, files - included
    assert files == {p for p in RUN_BY if p.startswith("docs/")}


def test_readme_python_is_the_quickstart() -> None:
    """The README's Python block is docs/examples/quickstart.py, which a test runs."""
    blocks = _README_PYTHON.findall((ROOT / "README.md").read_text())
    assert blocks == [(DOCS / "examples" / "quickstart.py").read_text()]


@pytest.mark.parametrize("page", [*PAGES, "../README.md"])
def test_named_files_exist(page: str) -> None:
    """Every repository path a page names in backticks or links to is in the repository."""
    path = (DOCS / page).resolve()
    text = path.read_text()
    for name in _NAMED_PATH.findall(text):
        found = any(ROOT.glob(name)) if "*" in name else (ROOT / name).exists()
        assert found, f"{path.name} names {name}, which is not in the repository"
    for target in _LINK.findall(text):
        if "://" not in target:
            assert (path.parent / target).exists(), f"{path.name} links to missing {target}"


def test_cli_page_lists_every_exit_code() -> None:
    """docs/cli.md documents each exit code of the command."""
    page = (DOCS / "cli.md").read_text()
    for code in ExitCode:
        assert f"\n| {int(code)} |" in page, code


_DOCTOR_TABLE = "| check | what it asks | fails when |\n|---|---|---|\n"
_CHECK_NAME = re.compile(r'Check\(\s*"([a-z]+(?:-[a-z]+)*)"')
DOCTOR_CELL = 100  # characters: a cell reads as one line; the detail goes below the table


def test_cli_doctor_table_is_one_line_cells() -> None:
    """cli.md's doctor table: a row per check doctor makes, each cell short; detail below it."""
    page = (DOCS / "cli.md").read_text()
    assert page.count(_DOCTOR_TABLE) == 1
    table = page.split(_DOCTOR_TABLE, 1)[1].split("\n\n", 1)[0].splitlines()
    rows = {}
    for row in table:
        cells = [cell.strip() for cell in row.strip().strip("|").split(" | ")]
        assert len(cells) == 3, row
        assert all(0 < len(cell) <= DOCTOR_CELL for cell in cells), row
        rows[cells[0].strip("`")] = cells
    sources = "".join(p.read_text() for p in (ROOT / "vertexbatch" / "_checks").glob("*.py"))
    assert set(rows) >= set(_CHECK_NAME.findall(sources))
    detail = page.split(_DOCTOR_TABLE, 1)[1]
    for name in rows:
        assert f"- **`{name}`**" in detail, f"no detail below the table for {name}"
