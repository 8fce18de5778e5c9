"""An unknown field of a request-file line is named by its position, never by its name.

Issue 38, item 11: the command and ``vertexbatch/_submission/request_files.py`` quoted an
unknown top-level field of a line (``unknown field(s) ['wombat-secret-4417']``); a field name
can be content, and the params check already names fields by position for that reason. Now a
line's unknown field is ``<field N>``, with the line's own field it is closest to, if any.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import CLAUDE
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode
from vertexbatch.emulator import LocalStack

SECRET = "wombat-secret-4417"
PARAMS = {"max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
LINES = {
    "claude": [
        ({"key": "a", "params": PARAMS, SECRET: 1}, "unknown field(s) <field 3>: a claude line"),
        (
            {"key": "a", SECRET: 1, "paramz": PARAMS},
            "<field 2>, <field 3> (did you mean 'params'?)",
        ),
    ],
    "gemini": [
        ({"key": "a", "contents": "hi", SECRET: {}}, "unknown field(s) <field 3>: a gemini line"),
        (
            {SECRET: 1, "key": "a", "contents": "hi", "confg": {}},
            "<field 4> (did you mean 'config'?)",
        ),
    ],
}
CASES = [(provider, *case) for provider, cases in LINES.items() for case in cases]


@pytest.mark.parametrize(("provider", "line", "expected"), CASES)
def test_the_command_names_an_unknown_line_field_by_position(
    stack_env: str, tmp_path: Path, provider: str, line: dict[str, object], expected: str
) -> None:
    """``submit FILE``: exit 3 naming the line and the field's position, never its name."""
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(line) + "\n")
    model = CLAUDE if provider == "claude" else "gemini-2.5-flash"
    args = ["submit", "--provider", provider, "--model", model, "--id", "fields", str(path)]
    for extra in ([], ["--dry-run"]):
        result = CliRunner().invoke(main, [*args, *extra])
        assert result.exit_code == ExitCode.INVALID_REQUEST, result.output
        assert f"line 1: {expected}" in result.stderr or expected in result.stderr, result.stderr
        assert SECRET not in result.output


@pytest.mark.parametrize(("provider", "line", "expected"), CASES)
def test_a_request_file_in_gcs_names_an_unknown_line_field_by_position(
    client: vb.Client,
    stack: LocalStack,
    bucket: str,
    provider: str,
    line: dict[str, object],
    expected: str,
) -> None:
    """``list_request_files(...).claude_requests()``: the file, the line, the field's position."""
    blob = stack.storage_client().bucket(bucket).blob("in/a.jsonl")
    blob.upload_from_string(json.dumps(line) + "\n")
    files = vb.list_request_files(client, f"gs://{bucket}/in/")
    requests = files.claude_requests() if provider == "claude" else files.gemini_requests()
    with pytest.raises(vb.InvalidRequestError) as info:
        list(requests)
    said = str(info.value)
    assert said.startswith(f"gs://{bucket}/in/a.jsonl line 1: "), said
    assert expected in said and SECRET not in said, said
