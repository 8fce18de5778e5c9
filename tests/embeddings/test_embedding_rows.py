"""The embeddings lane's pure parts: the request's line, the model checks, the output row's
``Result`` (every outcome), the key found again by the row's ``key``, the compact vector."""

from __future__ import annotations

import json
from array import array

import pytest

from tests.helpers import read_embedding_row
from vertexbatch import EmbeddingRequest, InvalidRequestError, TruncatedError
from vertexbatch._lanes.embeddings import embedding_requests
from vertexbatch._requests.embedding_line import check_for_model, embedding_line
from vertexbatch._requests.keymap import KeyMap
from vertexbatch._rows.fast_path import row_fields
from vertexbatch._rules import check_model


def _line(request: EmbeddingRequest) -> dict[str, object]:
    return json.loads(embedding_line(request).data)


def test_a_line_is_google_s_row_with_the_key_s_digest() -> None:
    line = _line(
        EmbeddingRequest("doc-1", "Hello World", task_type="RETRIEVAL_DOCUMENT", dimensions=768)
    )
    assert set(line) == {"key", "request"}
    assert isinstance(line["key"], str) and line["key"].startswith("k")
    assert line["request"] == {
        "content": {"parts": [{"text": "Hello World"}]},
        "embed_content_config": {"output_dimensionality": 768, "task_type": "RETRIEVAL_DOCUMENT"},
    }


def test_a_line_without_config_has_no_config() -> None:
    assert _line(EmbeddingRequest("a", "text"))["request"] == {
        "content": {"parts": [{"text": "text"}]}
    }


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (EmbeddingRequest("a", ""), "text"),
        (EmbeddingRequest("a", "  "), "text"),
        (EmbeddingRequest("a", 3), "text"),  # type: ignore[arg-type]
        (EmbeddingRequest("a", "t", dimensions=0), "dimensions"),
        (EmbeddingRequest("a", "t", dimensions=3073), "dimensions"),
        (EmbeddingRequest("a", "t", dimensions=True), "dimensions"),  # type: ignore[arg-type]
        (EmbeddingRequest("a", "t", task_type=""), "task_type"),
        (EmbeddingRequest("a", "t", title=7), "title"),  # type: ignore[arg-type]
    ],
)
def test_a_bad_request_is_refused_naming_its_field(request_: EmbeddingRequest, field: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        embedding_line(request_)
    assert caught.value.field == field
    assert "'a'" in str(caught.value)


def test_a_schema_is_refused() -> None:
    with pytest.raises(InvalidRequestError, match="schema= does not apply"):
        embedding_line(EmbeddingRequest("a", "t"), None, object())  # type: ignore[arg-type]


def test_gemini_embedding_2_refuses_task_type_and_title_naming_the_page() -> None:
    """The page: gemini-embedding-2 ignores them in embed_content_config; never dropped."""
    request = EmbeddingRequest("a", "secret text", task_type="RETRIEVAL_QUERY", title="T")
    with pytest.raises(InvalidRequestError) as caught:
        check_for_model("gemini-embedding-2", request)
    message = str(caught.value)
    assert "task_type and title" in message and "inline" in message
    assert "batch-prediction-genai-embeddings" in message
    assert "secret text" not in message
    check_for_model("gemini-embedding-001", request)  # 001 takes them
    check_for_model("gemini-embedding-2", EmbeddingRequest("a", "t", dimensions=8))


def test_the_lane_checks_requests_as_they_are_taken() -> None:
    taken = embedding_requests(
        "gemini-embedding-2",
        iter([EmbeddingRequest("a", "t"), EmbeddingRequest("b", "t", title="x")]),
        {},
    )
    assert next(taken).key == "a"
    with pytest.raises(InvalidRequestError, match="'b' sets title"):
        next(taken)


def test_bigquery_is_refused_for_embeddings_saying_why() -> None:
    with pytest.raises(InvalidRequestError, match="BigQuery tables are not supported") as caught:
        embedding_requests("gemini-embedding-001", [], {"dest": "bq://p.d"})
    assert caught.value.field == "dest"


@pytest.mark.parametrize(
    ("model", "ok"),
    [
        ("gemini-embedding-001", True),
        ("text-embedding-005", True),
        ("gemini-2.5-flash", False),
        ("claude-sonnet-4-5", False),
    ],
)
def test_the_embeddings_lane_takes_embedding_models_only(model: str, ok: bool) -> None:
    if ok:
        assert check_model(model, "embeddings") == model
    else:
        with pytest.raises(InvalidRequestError, match=r"submit_(gemini|claude)"):
            check_model(model, "embeddings")


def test_gemini_chat_refuses_an_embedding_model() -> None:
    with pytest.raises(InvalidRequestError, match="submit_embeddings, not submit_gemini"):
        check_model("gemini-embedding-001", "google")


def _row(response: object, status: object = "") -> dict[str, object]:
    return {"key": "k0", "request": {}, "response": response, "status": status}


_read = read_embedding_row


def test_a_vector_is_an_answer_kept_as_float32() -> None:
    result = _read(
        _row({"embedding": {"values": [0.5, -0.25, 1]}, "usageMetadata": {"promptTokenCount": 3}})
    )
    assert result.outcome == "ok"
    assert isinstance(result.embedding, array) and result.embedding.typecode == "f"
    assert list(result.embedding) == [0.5, -0.25, 1.0]
    assert result.usage.input == 3 and result.usage.output == 0
    assert set(result.response or {}) == {"embedding", "usageMetadata"}
    again = _read(_row(result.response))  # the compact form reads back the same
    assert list(again.embedding or ()) == [0.5, -0.25, 1.0]
    assert again.usage == result.usage


def test_the_compact_form_is_smaller_than_the_json_values() -> None:
    values = [((i * 7919) % 1000) / 997 - 0.5 for i in range(768)]
    result = _read(_row({"embedding": {"values": values}}))
    compact = len(json.dumps(result.response))
    plain = len(json.dumps({"embedding": {"values": values}}))
    assert compact * 3 < plain


def test_google_genai_s_and_text_embedding_s_shapes_are_read() -> None:
    genai = _read(_row({"embeddings": [{"values": [1.0, 2.0]}]}))
    assert list(genai.embedding or ()) == [1.0, 2.0]
    stats = _read(
        _row({"embeddings": {"values": [1.0], "statistics": {"token_count": 4, "truncated": True}}})
    )
    assert stats.outcome == "truncated" and isinstance(stats.error, TruncatedError)
    assert list(stats.embedding or ()) == [1.0] and stats.usage.input == 4


@pytest.mark.parametrize(
    ("response", "outcome", "status"),
    [
        ({"embedding": {"values": []}}, "retryable", "EMPTY_RESPONSE"),
        ({"embedding": {}}, "retryable", "EMPTY_RESPONSE"),
        ({"other": 1}, "retryable", "EMPTY_RESPONSE"),
        ({"embedding": {"values": [1, "x"]}}, "failed", "UNREADABLE_RESPONSE"),
        ({"embedding": {"values": [1e300]}}, "failed", "UNREADABLE_RESPONSE"),
        ({"embedding": {"values": "1,2"}}, "failed", "UNREADABLE_RESPONSE"),
        ({"embedding": {"float32": "not base64!"}}, "failed", "UNREADABLE_RESPONSE"),
        ({"embedding": {"float32": "AAA="}}, "failed", "UNREADABLE_RESPONSE"),  # 2 bytes
        ({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED"}}, "retryable", None),
        ({"error": {"code": 400, "status": "INVALID_ARGUMENT"}}, "failed", None),
    ],
)
def test_every_other_row_is_one_outcome(response: object, outcome: str, status: str | None) -> None:
    result = _read(_row(response))
    assert result.outcome == outcome
    assert result.embedding is None
    if status is not None:
        assert getattr(result.error, "status", None) == status


def test_a_failed_line_and_a_line_never_run() -> None:
    failed = _read(_row(None, status='Bad Request: {"error": {"code": 400}}'))
    assert failed.outcome == "failed"
    never = _read({"key": "k0", "request": {}})
    assert never.outcome == "retryable"


def test_the_row_s_key_finds_its_caller_s_key() -> None:
    line = embedding_line(EmbeddingRequest("doc-7", "text"))
    keys = KeyMap()
    keys.add(line.key, line.digest, line.canonical)
    row = {"key": line.digest, "response": {"embedding": {"values": [1.0]}}, "status": ""}
    assert keys.match(row) == 0
    raw = json.dumps(row).encode()
    assert keys.find_digest(raw) == 0
    assert row_fields(raw) == {k: row[k] for k in ("key", "status", "response")}
    assert keys.match({"key": "k" + "0" * 32, "request": {}}) is None  # another job's row
