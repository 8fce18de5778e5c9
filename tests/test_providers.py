"""The provider table (vertexbatch/_providers.py): one row per provider, and what reads it."""

from __future__ import annotations

import dataclasses

import pytest

from vertexbatch import ChatRequest, ClaudeRequest, Client, GeminiRequest, InvalidRequestError
from vertexbatch._bigquery.source import ROW_REQUESTS
from vertexbatch._checks.probe import LANE_MODELS, PROBE_MODELS
from vertexbatch._checks.probe_shape import PROBE_LANES
from vertexbatch._command.cli_requests import _REQUESTS
from vertexbatch._plans.estimate import output_ceiling
from vertexbatch._providers import (
    COMMANDS,
    GEMINI_DEFAULT_OUTPUT,
    PROVIDERS,
    ProviderRow,
    by_command,
    of_model,
)
from vertexbatch._requests.keymap import KEY_FIELD
from vertexbatch._rows.classify import READERS
from vertexbatch._rows.fast_path import USUAL_READERS
from vertexbatch._rules import FAMILIES, LANES
from vertexbatch._runs.run import DEFAULT_LIVE_JOBS
from vertexbatch._turns import TURNS
from vertexbatch._values import PROVIDER_NAMES

ROWS = list(PROVIDERS.values())


def test_each_row_names_its_provider_and_command() -> None:
    assert list(PROVIDERS) == ["anthropic", "google", "embeddings", "openmaas"]
    assert COMMANDS == ("claude", "gemini", "embeddings", "chat")
    for provider, row in PROVIDERS.items():
        assert row.provider == provider
        assert by_command(row.command) is row


def test_a_row_is_frozen_and_the_table_read_only() -> None:
    row = PROVIDERS["anthropic"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.command = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        PROVIDERS["other"] = row  # type: ignore[index]


def test_an_unknown_command_name_is_refused_by_name() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        by_command("mistral")
    assert caught.value.field == "provider"
    assert "claude, gemini, embeddings, chat" in str(caught.value)


@pytest.mark.parametrize(
    ("model", "command"),
    [
        ("claude-opus-5-5@default", "claude"),
        ("Gemini-3.8-flash", "gemini"),
        ("gemini-embedding-001", "embeddings"),
        ("gemini-embedding-2", "embeddings"),
        ("text-embedding-005", "embeddings"),
        ("text-multilingual-embedding-002", "embeddings"),
        ("gemini-2.5-flash", "gemini"),
        ("llama-4", None),
        ("meta/llama-3.3-70b-instruct-maas", "chat"),
        ("publishers/meta/models/llama-4", None),
        ("", None),
        (None, None),
    ],
)
def test_a_model_belongs_to_the_row_of_its_family(model: str | None, command: str | None) -> None:
    row = of_model(model)
    assert (row.command if row else None) == command


def test_the_columns_of_each_row() -> None:
    claude, gemini = PROVIDERS["anthropic"], PROVIDERS["google"]
    assert (claude.request, gemini.request) == (ClaudeRequest, GeminiRequest)
    assert (claude.id_field, gemini.id_field) == ("custom_id", KEY_FIELD)
    assert (claude.global_batch, gemini.global_batch) == (False, True)
    # A sink's table is read by its id column where the id is one (tests/bigquery/test_table_reads)
    sink_ids = {name: row.sink_id_column for name, row in PROVIDERS.items()}
    assert sink_ids == {
        "anthropic": "custom_id",
        "google": None,
        "embeddings": None,
        "openmaas": "custom_id",
    }
    assert (claude.tiers, gemini.tiers) == ({"standard"}, {"standard", "flex", "priority"})
    assert claude.method("submit") == "submit_claude"
    assert gemini.method("run") == "run_gemini"
    assert claude.title == "Claude"
    assert gemini.publisher_path("gemini-x") == "publishers/google/models/gemini-x"
    body = claude.line(
        ClaudeRequest("k", {"max_tokens": 7, "messages": [{"role": "user", "content": "hi"}]})
    ).data
    assert b'"custom_id"' in body
    line = gemini.line(GeminiRequest("k", "hi")).data
    assert KEY_FIELD.encode() in line and b"custom_id" not in line


def test_the_open_model_row_names_its_publisher_in_the_model_id() -> None:
    """The chat lane's models are PUBLISHER/MODEL: its row has no publisher of its own."""
    chat = PROVIDERS["openmaas"]
    assert (chat.command, chat.publisher, chat.id_field) == ("chat", None, "custom_id")
    assert (PROVIDERS["anthropic"].publisher, PROVIDERS["google"].publisher) == (
        "anthropic",
        "google",
    )
    assert chat.publisher_path("meta/llama-x") == "publishers/meta/models/llama-x"
    assert chat.request is ChatRequest and chat.global_batch is False
    line = chat.line(ChatRequest("k", {"messages": [{"role": "user", "content": "hi"}]})).data
    assert b'"method":"POST","url":"/v1/chat/completions","body":{' in line


@pytest.mark.parametrize(
    ("provider", "body", "ceiling"),
    [
        ("anthropic", {"max_tokens": 9}, 9),
        ("anthropic", {"max_tokens": True}, 0),
        ("anthropic", {}, 0),
        ("google", {"generationConfig": {"maxOutputTokens": 12}}, 12),
        ("google", {"generationConfig": {}}, GEMINI_DEFAULT_OUTPUT),
        ("google", {"generationConfig": {"maxOutputTokens": -1}}, 0),
        ("google", {}, GEMINI_DEFAULT_OUTPUT),
        ("openmaas", {"max_tokens": 9}, 9),
        ("openmaas", {"max_completion_tokens": 11, "max_tokens": 9}, 11),
        ("openmaas", {}, 0),
    ],
)
def test_the_output_ceiling_is_the_rows(
    provider: str, body: dict[str, object], ceiling: int
) -> None:
    assert output_ceiling(provider, body) == ceiling  # type: ignore[arg-type]


def test_each_row_has_its_client_methods() -> None:
    """The command calls Client.<operation>_<command>: each row's methods exist."""
    for row in ROWS:
        for operation in ("submit", "plan", "run"):
            assert callable(getattr(Client, row.method(operation)))


def test_the_copies_below_the_table_hold_its_rows() -> None:
    """The family rule (_rules), the output reader (_outcomes), the command's request files
    (_cli_requests) and the next turn's shapes (_turns) sit below or beside the table: each has
    exactly the table's rows."""
    assert {p: r.command for p, r in PROVIDERS.items()} == FAMILIES
    assert {p: r.read for p, r in PROVIDERS.items()} == dict(READERS)
    assert set(_REQUESTS) == set(COMMANDS)
    assert {p: r.turns for p, r in PROVIDERS.items()} == dict(TURNS)
    assert {p: r.publisher for p, r in PROVIDERS.items()} == {
        p: lane.publisher for p, lane in LANES.items()
    }


def test_a_row_has_every_column_the_issue_names() -> None:
    """A new lane fills these: the row is the one place they are written."""
    names = {field.name for field in dataclasses.fields(ProviderRow)}
    assert names >= {"provider", "command", "request", "line", "id_field", "read", "online"}
    assert names >= {"counter", "ceiling", "fields", "global_batch", "tiers", "turns"}


def test_the_columns_the_switches_became_are_held_below_and_beside_the_table() -> None:
    """The fast path's reader (_rows.fast_path), a BigQuery row's request (_bigquery.source), the
    probe's lanes (_checks.probe_shape), the Provider type's names (_values) and a run's live-job
    default (_runs.run) each have exactly the table's rows, and the copies equal its columns."""
    assert {p: r.usual for p, r in PROVIDERS.items()} == dict(USUAL_READERS)
    assert {p: r.of_row for p, r in PROVIDERS.items()} == dict(ROW_REQUESTS)
    assert tuple(PROBE_LANES) == tuple(PROVIDERS) == PROVIDER_NAMES
    assert {p: r.live_jobs for p, r in PROVIDERS.items()} == dict(DEFAULT_LIVE_JOBS)
    assert {p: r.live_jobs for p, r in PROVIDERS.items()} == {
        "anthropic": 4,
        "google": 16,
        "embeddings": 16,
        "openmaas": 4,
    }
    assert PROBE_MODELS == {"claude": "claude-sonnet-4-5", "gemini": "gemini-2.5-flash"}
    assert LANE_MODELS == {
        "embeddings": "gemini-embedding-001",
        "chat": "meta/llama-3.3-70b-instruct-maas",
    }


def test_the_open_model_lane_is_probed_when_asked_and_has_its_probe_rows() -> None:
    """PROBE_MODELS leaves the chat lane out (probed with ``--lane chat``); its rows build."""
    from vertexbatch._checks.probe_shape import probe_rows

    assert PROBE_LANES["openmaas"].optional and "chat" not in PROBE_MODELS
    rows = probe_rows("chat").splitlines()
    assert len(rows) == 3 and all(b'"url":"/v1/chat/completions"' in row for row in rows)


def test_the_embeddings_row_refuses_what_does_not_apply_to_it() -> None:
    """No online fallback, no count-tokens call, no BigQuery source, no next turn: each refuses,
    naming the lane, never a silent no-op."""
    row = PROVIDERS["embeddings"]
    assert row.publisher_path("gemini-embedding-001") == (
        "publishers/google/models/gemini-embedding-001"
    )
    with pytest.raises(InvalidRequestError, match="no online fallback"):
        row.online(None, "gemini-embedding-001", 1, "standard")  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError, match="count_tokens does not apply"):
        row.counter(None, "gemini-embedding-001")  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError, match="BigQuery tables are not supported"):
        row.of_row("k", {}, InvalidRequestError)
    with pytest.raises(InvalidRequestError, match="no turn of a conversation"):
        row.turns.turn({})
    assert row.ceiling({"anything": 1}) == 0
