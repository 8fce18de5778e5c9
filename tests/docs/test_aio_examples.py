"""examples/async_agent_executor.py and docs/examples/asyncio_basics.py run on the local stack."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import vertexbatch as vb
from tests.helpers import jobs_in, load
from vertexbatch.emulator import LocalStack

DOCS_EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def test_async_agent_executor_serves_while_the_batch_runs(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Deferred tasks come back from one job, and urgent work was served meanwhile."""
    example = load("async_agent_executor")
    lines = asyncio.run(example.run(client))
    served = int(lines[0].split()[1])
    assert served >= 1
    assert sorted(line.split() for line in lines[1:]) == [
        ["draft-reply-ticket-48213", "ok"],
        ["summarise-incident-311", "ok"],
        ["translate-faq-12", "missing"],
    ]
    assert asyncio.run(example.run(client))[1:] == lines[1:]  # run again: the same job
    assert len(jobs_in(stack, bucket)) == 1


# Run as a script with opentelemetry.sdk unimportable, as on the README's install (only the
# dev extra brings the SDK; vertexbatch needs only opentelemetry-api).
_WITHOUT_SDK = """
import importlib.abc, runpy, sys
class NoSdk(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry.sdk" or name.startswith("opentelemetry.sdk."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
        return None
sys.meta_path.insert(0, NoSdk())
sys.argv = [sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.processes
@pytest.mark.timeout(120)
def test_async_agent_executor_runs_on_the_readme_install() -> None:
    """Without the OpenTelemetry SDK the script runs and prints its four lines, no spans."""
    script = Path(__file__).resolve().parents[2] / "examples" / "async_agent_executor.py"
    ran = subprocess.run(
        [sys.executable, "-c", _WITHOUT_SDK, str(script)],
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert len(lines) == 4 and lines[0].startswith("served ")
    assert "translate-faq-12           missing" in lines
    assert '"trace_id"' not in ran.stderr


@pytest.mark.processes
def test_async_agent_executor_main_prints_spans(capsys: pytest.CaptureFixture[str]) -> None:
    """`python examples/async_agent_executor.py --spans` prints its answers, and spans on
    stderr."""
    load("async_agent_executor").main(["--spans"])
    out, err = capsys.readouterr()
    assert out.splitlines()[1:] == [
        "summarise-incident-311     ok",
        "draft-reply-ticket-48213   ok",
        "translate-faq-12           missing",
    ]
    decoder = json.JSONDecoder()
    spans, at = [], 0
    text = err.strip()
    while at < len(text):
        span, end = decoder.raw_decode(text, at)
        spans.append(span["name"])
        at = end
        while at < len(text) and text[at].isspace():
            at += 1
    for name in ("submit", "stage", "create", "record", "wait", "status", "results"):
        assert f"vertexbatch.{name}" in spans


@pytest.mark.timeout(120)
def test_asyncio_basics_runs_as_written(stack: LocalStack, bucket: str, tmp_path: Path) -> None:
    """docs/examples/asyncio_basics.py runs as `python FILE` with the emulator's environment."""
    script = DOCS_EXAMPLES / "asyncio_basics.py"
    env = {**os.environ, **stack.environment(bucket)}
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=110
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "asyncio-1 JOB_STATE_SUCCEEDED"
    assert sorted(line.split()[:2] for line in lines[1:]) == [["a", "ok"], ["b", "ok"]]
