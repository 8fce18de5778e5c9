"""`vertexbatch demo --bigquery`: the BigQuery section runs and says what it promises; without
the `bigquery-local` extra the flag is one usage line naming the extra to install."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from tests.docs.test_examples_install import blocked_modules
from tests.install_fixtures import BLOCKER, README_INSTALL, Ran
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode
from vertexbatch._command.demo_bigquery import BQ_ID, BQ_KEYS


@pytest.mark.processes
@pytest.mark.timeout(300)
def test_demo_bigquery_section() -> None:
    """A table in, a dataset out: each key's outcome, the output table by SQL, then adoption."""
    result = CliRunner().invoke(main, ["demo", "--fast", "--bigquery"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = result.stdout
    section = out[out.index("8. BigQuery") :]
    assert "   table bq://local-project.vertexbatch_demo.review_requests: 6 rows" in section
    assert f"{BQ_ID:<20} 6 requests read from the table, answers to bq://local-project." in section
    created = re.search(rf"{' ' * 24}created (\S+/batchPredictionJobs/\d+)\n", section)
    assert created, section
    table = re.search(r"JOB_STATE_SUCCEEDED, output table (bq://local-project\.\S+)\n", section)
    assert table and table.group(1) != "bq://local-project.vertexbatch_demo", section
    # Every key of the table, once, with its outcome, through client.results.
    outcomes = re.findall(r"^     (\w+) +(bq-review-\d\d)\b(.*)$", section, re.MULTILINE)
    assert [key for _, key, _ in outcomes] == list(BQ_KEYS)
    assert [(o, k) for o, k, _ in outcomes] == [
        ("ok", "bq-review-01"),
        ("refused", "bq-review-02"),
        ("ok", "bq-review-03"),
        ("truncated", "bq-review-04"),
        ("retryable", "bq-review-05"),
        ("ok", "bq-review-06"),
    ]
    assert "(429 RESOURCE_EXHAUSTED)" in outcomes[4][2]
    # The same output table by SQL: rows per stop reason and status, six in all.
    row = r"^     (end_turn|max_tokens|refusal|\(none\)) .* +(\d+)$"
    sql = dict(re.findall(row, section, re.MULTILINE))
    assert sql == {"end_turn": "3", "max_tokens": "1", "refusal": "1", "(none)": "1"}, section
    # The same table again: the id adopts the job, no create call.
    adopted = f"{BQ_ID:<20} adopted {created.group(1)}, the same job"
    assert adopted in section
    assert section.count("create calls to Vertex: 0") == 1


# Runs `python -m vertexbatch ARGS` with the modules in VB_BLOCKED unimportable.
_ON_INSTALL = f"""{BLOCKER}
import runpy
sys.argv = ["vertexbatch", *sys.argv[1:]]
runpy.run_module("vertexbatch", run_name="__main__")
"""


def _demo_on_readme_install(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VERTEXBATCH_", "VB_"))}
    env["VB_BLOCKED"] = json.dumps(blocked_modules(README_INSTALL))
    return subprocess.run(
        [sys.executable, "-c", _ON_INSTALL, "demo", "--fast", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=170,
    )


@pytest.mark.processes
def test_demo_bigquery_without_the_extra_is_one_usage_line() -> None:
    """On the README's install, `demo --bigquery` names the extra to install, starting nothing."""
    assert "bqemulator" in blocked_modules(README_INSTALL)
    ran = _demo_on_readme_install("--bigquery")
    assert ran.returncode == ExitCode.USAGE, ran.stdout + ran.stderr
    assert ran.stdout == ""  # refused before the demo starts anything
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1, ran.stderr
    assert lines[0].startswith("vertexbatch: --bigquery needs the local stack's BigQuery, ")
    assert "from a checkout of vertexbatch: pip install '.[cli,bigquery-local]'" in lines[0]
    assert "(missing: bqemulator" in lines[0]


@pytest.mark.processes
@pytest.mark.timeout(240)
def test_the_plain_demo_still_runs_on_the_readme_install(readme_demo: Ran) -> None:
    """`vertexbatch demo` needs nothing of the BigQuery extras, and has no BigQuery section."""
    ran = readme_demo  # `demo --fast` on the README's install (tests/install_fixtures.py)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert "6. Pay once per distinct request" in ran.stdout
    assert "BigQuery" not in ran.stdout
