"""What the command prints is valid UTF-8 JSON for every key, whatever the answers hold.

A model answer cut mid-emoji holds a lone surrogate, which UTF-8 cannot encode; the library
yields it as text, and the command must print it (escaped) rather than stop with "a bug".
"""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import GEMINI, OutputFiles, finished_output, gemini_requests
from vertexbatch._command.cli import main
from vertexbatch.emulator import LocalStack

CUT = "half an emoji: \ud83d"


def _cli(stack: LocalStack, bucket: str, *args: str) -> tuple[int, list[Any]]:
    result = CliRunner().invoke(
        main, list(args), env=stack.environment(bucket, prefix="jobs"), catch_exceptions=False
    )
    lines = result.stdout_bytes.splitlines()
    return result.exit_code, [json.loads(line.decode("utf-8")) for line in lines]


def _claude_text(row: dict[str, Any], text: str) -> dict[str, Any]:
    response = row["response"]
    return {**response, "content": [{**response["content"][0], "text": text}]}


def test_results_prints_an_answer_holding_a_lone_surrogate(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Every key printed; the cut answer reads back exactly as the library yields it."""
    out = finished_output(client, stack, bucket, "anthropic", "cut", n=3)
    out.write(
        [out.line(k, response=_claude_text(out.rows[k], CUT)) for k in ("key-0",)]
        + [out.line(k) for k in ("key-1", "key-2")]
    )
    code, printed = _cli(stack, bucket, "results", "cut")
    assert code == 0
    assert {p["key"]: p["text"] for p in printed}["key-0"] == CUT
    assert sorted(p["key"] for p in printed) == ["key-0", "key-1", "key-2"]
    assert {r.key: r.text for r in client.results(out.job)}["key-0"] == CUT


def test_run_results_prints_an_answer_holding_a_lone_surrogate(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A run's keys are printed too, a Gemini answer's cut text and all."""
    run = client.run_gemini("cutrun", GEMINI, gemini_requests(2))
    run.advance()
    job = client.find("cutrun.s0")
    assert job is not None
    final = stack.wait_job(job.name)
    out = OutputFiles(stack, bucket, job, final["outputInfo"]["gcsOutputDirectory"])
    row = out.rows["key-1"]
    candidate = row["response"]["candidates"][0]
    parts = [{"text": CUT}]
    response = {**row["response"], "candidates": [{**candidate, "content": {"parts": parts}}]}
    out.write([out.line("key-0"), out.line("key-1", response=response)])
    code, printed = _cli(stack, bucket, "run", "results", "cutrun")
    assert code == 0
    assert {p["key"]: p["text"] for p in printed} == {
        "key-0": next(r.text for r in client.results(job) if r.key == "key-0"),
        "key-1": CUT,
    }
