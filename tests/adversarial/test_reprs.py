"""No response content in a repr: results show sizes and kinds, never answer or refusal text.

A repr ends up in logs, tracebacks and debuggers' displays; the answers are the caller's data.
"""

from __future__ import annotations

import vertexbatch as vb
from tests.helpers import CLAUDE, GEMINI, claude_request, gemini_requests
from vertexbatch.emulator import LocalStack


def _shows_no_text(shown: str, result: vb.Result) -> None:
    assert result.text and result.text not in shown
    assert f"text=<{len(result.text)} chars>" in shown
    assert f"key={result.key!r}" in shown and f"outcome={result.outcome!r}" in shown


def test_result_and_refusal_reprs_show_sizes_not_text(client: vb.Client, stack: LocalStack) -> None:
    """An answer's text and a refusal's detail appear as their lengths only."""
    job = client.submit_claude(
        "reprs",
        CLAUDE,
        [claude_request("ok", "say something"), claude_request("no", "no [[vb:refuse]]")],
    )
    stack.wait_job(job.name)
    results = {r.key: r for r in client.results(job)}
    _shows_no_text(repr(results["ok"]), results["ok"])
    refused = results["no"]
    assert refused.refusal is not None
    detail = vb.Refusal(category=refused.refusal.category, detail="private reason words")
    assert "private" not in repr(detail) and "detail=<20 chars>" in repr(detail)
    assert "RefusedError" in repr(refused) and refused.refusal.category in repr(refused)
    # A response dict (tool calls and all) is never shown.
    assert "response" not in repr(results["ok"])


def test_run_key_result_repr_shows_no_text(client: vb.Client, stack: LocalStack) -> None:
    """A run's KeyResult shows its result the same way."""
    run = client.run_gemini("reprrun", GEMINI, gemini_requests(1))
    run.advance()
    job = client.find("reprrun.s0")
    assert job is not None
    stack.wait_job(job.name)
    (item,) = run.key_results()
    _shows_no_text(repr(item), item.result)
