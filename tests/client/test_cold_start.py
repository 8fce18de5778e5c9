"""What a cold start imports: each heavy SDK is imported by the path that needs it, not before.

The time itself is measured by ``python -m benchmarks.run --only import`` (docs/performance.md);
these tests pin which modules each path leaves unimported, in fresh interpreters, and that errors
of SDKs imported late are still classified.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anthropic
import httpx2
import pytest
import requests
from google.api_core import exceptions as api_exceptions
from google.genai import errors as genai_errors

import vertexbatch as vb

ROOT = Path(__file__).resolve().parents[2]

ANTHROPIC = "anthropic"
GENAI_TYPES = "google.genai.types"
AIPLATFORM = "google.cloud.aiplatform_v1"
STORAGE = "google.cloud.storage"
PYDANTIC = "pydantic"
REQUESTS = "requests"
HEAVY = (ANTHROPIC, GENAI_TYPES, AIPLATFORM, STORAGE, PYDANTIC, REQUESTS)


def _imported_after(code: str) -> set[str]:
    """The modules of ``HEAVY`` imported once ``code`` has run in a fresh interpreter."""
    report = f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    script = f"import json, sys\n{code}\n{report}\n"
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return set(json.loads(proc.stdout.splitlines()[-1]))


HELP = """
import contextlib, io
from vertexbatch._command.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main(["--help"])
"""
CLAUDE_LINE = """
from vertexbatch import ClaudeRequest
from vertexbatch._requests.lines import claude_line
claude_line(ClaudeRequest("k", {"max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}))
"""
GEMINI_LINE = """
from vertexbatch import GeminiRequest
from vertexbatch._requests.lines import gemini_line
gemini_line(GeminiRequest("k", "hi", {{{config}}}))
"""


@pytest.mark.parametrize(
    ("code", "imported"),
    [
        ("import vertexbatch", set()),
        (HELP, set()),
        (CLAUDE_LINE, set()),
        # A config of the first generation fields is read without google-genai
        # (_requests.plain_config); any other is validated against its types (with pydantic).
        (GEMINI_LINE.format(config='"temperature": 0.5, "system_instruction": "Be brief."'), set()),
        (
            GEMINI_LINE.format(config='"thinking_config": {"thinking_budget": 0}'),
            {GENAI_TYPES, PYDANTIC},
        ),
    ],
    ids=["import", "help", "claude line", "gemini line", "gemini line with thinking"],
)
@pytest.mark.processes
def test_each_path_imports_only_what_it_needs(code: str, imported: set[str]) -> None:
    """`import vertexbatch` and `--help` import no heavy SDK; building a line, only its own."""
    assert _imported_after(code) == imported


def _anthropic_status(code: int) -> anthropic.APIStatusError:
    response = httpx2.Response(code, request=httpx2.Request("POST", "https://vertex.example"))
    return anthropic.APIStatusError("status", response=response, body=None)


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (_anthropic_status(529), True),
        (_anthropic_status(429), True),
        (_anthropic_status(400), False),
        (anthropic.APIConnectionError(request=httpx2.Request("POST", "https://x.example")), True),
        (genai_errors.APIError(503, {}), True),
        (genai_errors.APIError(400, {}), False),
        (requests.ConnectionError("refused"), True),
        (requests.Timeout("slow"), True),
        (api_exceptions.ServiceUnavailable("busy"), True),  # type: ignore[no-untyped-call]
        (api_exceptions.NotFound("gone"), False),  # type: ignore[no-untyped-call]
        (ConnectionResetError(), True),
        (ValueError("x"), False),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else str(v),
)
def test_errors_of_lazily_imported_sdks_are_classified(
    error: BaseException, retryable: bool
) -> None:
    """SDK errors are classified by status once their SDK is imported, as the fallback does."""
    assert vb.is_retryable(error) is retryable
