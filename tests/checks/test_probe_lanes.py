"""``vertexbatch probe --lane embeddings --lane chat``: the two lanes whose output row no Google
page shows, checked against the row vertexbatch's reader assumes (``_checks.probe_output``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from vertexbatch._checks.probe_output import (
    CHAT_ROW,
    EMBEDDING_ROW,
    chat_row_facts,
    embedding_row_facts,
    output_facts,
    typed_paths,
)
from vertexbatch._checks.probe_shape import differences
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode
from vertexbatch.emulator import JobOptions, LocalStack

OTHER_ROWS = JobOptions(embedding_response="embeddings", chat_response="batch_body")


def probe(out: Path, *args: str) -> Result:
    return CliRunner().invoke(
        main,
        ["probe", "--yes", "--out", str(out), "--interval", "0.01", "--timeout", "60", *args],
        catch_exceptions=False,
    )


def lane_facts(out: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(out.read_text())
    return {k: v for k, v in report["facts"].items() if k.startswith(("embeddings.", "chat."))}


def test_on_the_stack_both_lanes_match_the_row_the_reader_assumes(
    stack: LocalStack, stack_env: str, tmp_path: Path
) -> None:
    """The stack writes the assumed rows: the probe says "matches", names the fields it saw,
    and the reader reads every answered row."""
    out = tmp_path / "report.json"
    result = probe(out, "--lane", "embeddings", "--lane", "chat")
    assert result.exit_code == ExitCode.OK, result.output
    assert "every fact the probe saw" in result.stdout
    facts = lane_facts(out)
    for name, assumed in (("embeddings", EMBEDDING_ROW), ("chat", CHAT_ROW)):
        assert facts[f"{name}.output_row"] == "matches"
        assert facts[f"{name}.missing_fields"] == []
        assert facts[f"{name}.reader_reads"] is True
        assert set(assumed) <= set(facts[f"{name}.output_fields"])
    models = {job["model"] for job in json.loads(out.read_text())["jobs"].values()}
    assert {"gemini-embedding-001", "meta/llama-3.3-70b-instruct-maas"} <= models
    assert stack.calls()["create"] == 4


def test_a_stack_answering_other_rows_is_reported_as_differing(
    stack: LocalStack, stack_env: str, tmp_path: Path
) -> None:
    """Rows of another form (google-genai's ``embeddings`` list; OpenAI's Batch API
    ``{"status_code", "body"}``): "differs", the assumed fields missing named, the fields seen
    named, and whether the reader still reads them; a stack built from the report writes them."""
    stack.set_job_options(OTHER_ROWS)
    out = tmp_path / "report.json"
    result = probe(out, "--lane", "embeddings", "--lane", "chat")
    assert result.exit_code == ExitCode.OK, result.output
    facts = lane_facts(out)
    assert facts["embeddings.output_row"] == facts["chat.output_row"] == "differs"
    assert "response.embedding.values: array" in facts["embeddings.missing_fields"]
    assert "key: string" not in facts["embeddings.missing_fields"]
    assert "response.embeddings[].values[]" in facts["embeddings.output_fields"]
    assert "response.choices[].message.content: string" in facts["chat.missing_fields"]
    assert "response.body.choices[].message.content" in facts["chat.output_fields"]
    assert facts["embeddings.reader_reads"] is facts["chat.reader_reads"] is True
    assert '  embeddings.output_row: service "differs", local stack "matches"' in result.stdout
    assert "  chat.missing_fields: service [" in result.stdout
    assert "chat.output_fields (the row's own and its response's): service [" in result.stdout
    assert '"response.status_code"' in result.stdout and '"body.messages"' not in result.stdout
    with LocalStack.from_probe_report(out) as rebuilt:
        assert rebuilt.job_options.embedding_response == "embeddings"
        assert rebuilt.job_options.chat_response == "batch_body"


def test_the_lanes_are_probed_only_when_asked(
    stack: LocalStack, stack_env: str, tmp_path: Path
) -> None:
    """Without --lane: Claude and Gemini only, and no fact of the other lanes; --lane chat
    alone adds one job, and the confirmation names the jobs' number."""
    out = tmp_path / "report.json"
    assert probe(out).exit_code == ExitCode.OK
    assert lane_facts(out) == {}
    assert stack.calls()["create"] == 2
    assert probe(out, "--lane", "chat", "--lane", "chat").exit_code == ExitCode.OK
    assert set(json.loads(out.read_text())["jobs"]) == {"claude", "gemini", "chat"}
    refused = CliRunner().invoke(main, ["probe", "--out", str(out), "--lane", "embeddings"])
    assert refused.exit_code == ExitCode.USAGE
    assert "probe submits 3 small batch jobs" in refused.output


def test_a_model_outside_the_lane_is_refused_before_anything_is_created(
    stack: LocalStack, stack_env: str, tmp_path: Path
) -> None:
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        main, ["probe", "--yes", "--out", str(out), "--lane", "chat", "--chat-model", "llama-3"]
    )
    assert result.exit_code != ExitCode.OK
    assert "PUBLISHER/MODEL" in result.output
    assert stack.calls()["create"] == 0 and not out.exists()


def _embedding(response: Any, **row: Any) -> dict[str, Any]:
    return {"key": "k1", "request": {}, "status": "", "response": response, **row}


@pytest.mark.parametrize(
    ("response", "missing", "reads"),
    [
        ({"embedding": {"values": [0.5, -1]}, "usageMetadata": {"promptTokenCount": 3}}, [], True),
        # google-genai's form: the reader reads it, but it is not the assumed row.
        ({"embeddings": [{"values": [0.5]}]}, ["response.embedding.values: array"], True),
        # numbers as strings: neither the assumed row nor readable.
        (
            {"embedding": {"values": ["0.5"]}, "usageMetadata": {"promptTokenCount": 3}},
            ["response.embedding.values[]: number"],
            False,
        ),
    ],
)
def test_an_embedding_row_is_checked_field_by_field(
    response: Any, missing: list[str], reads: bool
) -> None:
    facts = embedding_row_facts(_embedding(response), {}, False)
    assert all(m in facts["missing_fields"] for m in missing)
    assert bool(facts["missing_fields"]) is bool(missing)
    assert facts["reader_reads"] is reads


def test_the_text_embedding_row_form_differs_and_is_not_read() -> None:
    """The older models' row (``instance``, ``predictions``): none of the Gemini row's assumed
    fields, yet vertexbatch's reader reads it (it reads the text-embedding family's rows too)."""
    row = {
        "instance": {"content": "x"},
        "predictions": [{"embeddings": {"statistics": {"token_count": 1}, "values": [0.1]}}],
        "status": "",
    }
    found = output_facts("embeddings", [embedding_row_facts(row, None, False)])
    assert found["embeddings.output_row"] == "differs"
    assumed = sorted(f"{path}: {kind}" for path, kind in EMBEDDING_ROW.items())
    assert found["embeddings.missing_fields"] == assumed
    assert "predictions[].embeddings.values[]" in found["embeddings.output_fields"]
    assert found["embeddings.reader_reads"] is True
    assert differences(found, {})[-1].startswith("embeddings.output_fields")


def test_a_chat_row_with_a_truncated_answer_is_read_and_matches() -> None:
    completion = {
        "choices": [{"message": {"role": "assistant", "content": "a"}, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    row = {"custom_id": "c", "status": "", "response": completion}
    facts = chat_row_facts(row, None, False)
    assert facts["missing_fields"] == [] and facts["reader_reads"] is True
    assert facts["custom_id_echoed"] is True and facts["response"] == "object"


def test_no_answered_row_settles_nothing() -> None:
    """Every row failed: the shape was not seen, so no fact (None) and no difference."""
    found = output_facts("chat", [])
    assert set(found.values()) == {None}
    assert differences(found) == []


def test_field_paths_name_fields_and_types_never_values() -> None:
    paths = typed_paths({"a": {"b": [1, "x", {"c": None}]}, "labels": {"secret": "v"}})
    assert paths == {
        "a": {"object"},
        "a.b": {"array"},
        "a.b[]": {"number", "string", "object"},
        "a.b[].c": {"null"},
        "labels": {"object"},
    }


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ({"embedding_response": "vector"}, "embedding_response"),
        ({"chat_response": "body"}, "chat_response"),
    ],
)
def test_the_stack_refuses_an_unknown_row_form(option: dict[str, str], said: str) -> None:
    with pytest.raises(ValueError, match=said):
        JobOptions(**option)  # type: ignore[arg-type]
