"""The older text-embedding family's pure parts: the instance line (no key on the wire), what
it refuses, the key found again by the echoed instance (duplicates, strangers), and every
outcome of its output row (``{"instance", "predictions", "status"}``)."""

from __future__ import annotations

import json
import logging

import pytest

from tests.helpers import read_embedding_row
from vertexbatch import EmbeddingRequest, InvalidRequestError, Job, TruncatedError
from vertexbatch._job.correlate import read_rows
from vertexbatch._lanes.embeddings import embedding_requests
from vertexbatch._requests.dedupe import dedupe, exact_digest
from vertexbatch._requests.digests import canonical_digest
from vertexbatch._requests.embedding_line import embedding_line
from vertexbatch._requests.embedding_text import TextEmbedding, is_text_embedding
from vertexbatch._requests.keymap import KeyMap
from vertexbatch._requests.lines import StagedLine, staged_body

MODEL = "text-embedding-005"


def _lines(*requests: EmbeddingRequest, model: str = MODEL) -> list[StagedLine]:
    return [embedding_line(r) for r in embedding_requests(model, list(requests), {})]


def test_a_text_embedding_line_is_the_instance_with_no_key() -> None:
    (line,) = _lines(
        EmbeddingRequest("doc-1", "Hello World", task_type="RETRIEVAL_DOCUMENT", title="Greeting")
    )
    assert json.loads(line.data) == {
        "content": "Hello World",
        "task_type": "RETRIEVAL_DOCUMENT",
        "title": "Greeting",
    }
    assert line.key == "doc-1" and line.digest.startswith("k")
    assert line.digest.encode() not in line.data  # no key on the wire
    assert (
        line.data
        == b'{"content":"Hello World","task_type":"RETRIEVAL_DOCUMENT","title":"Greeting"}\n'
    )
    # The key record's canonical digest is the echoed instance's.
    assert line.canonical == canonical_digest(json.loads(line.data))
    assert staged_body(json.loads(line.data)) == json.loads(line.data)  # a plan reads it
    (plain,) = _lines(EmbeddingRequest("a", "only text"))
    assert json.loads(plain.data) == {"content": "only text"}


@pytest.mark.parametrize(
    ("model", "text_family"),
    [
        ("text-embedding-005", True),
        ("text-multilingual-embedding-002", True),
        ("TEXT-EMBEDDING-004", True),
        ("gemini-embedding-001", False),
        ("gemini-embedding-2", False),
    ],
)
def test_the_model_decides_the_family(model: str, text_family: bool) -> None:
    (line,) = _lines(EmbeddingRequest("a", "t"), model=model)
    assert is_text_embedding(model) is text_family
    assert ("key" not in json.loads(line.data)) is text_family


def test_the_lane_marks_requests_as_they_are_taken() -> None:
    taken = embedding_requests(MODEL, iter([EmbeddingRequest("a", "t"), "not a request"]), {})
    first = next(taken)
    assert isinstance(first, TextEmbedding) and first.key == "a" and first.text == "t"
    assert next(taken) == "not a request"  # refused by the submission, naming its type


def test_dimensions_are_refused_naming_the_rule() -> None:
    request = EmbeddingRequest("a", "secret text", dimensions=256)
    with pytest.raises(InvalidRequestError) as caught:
        _lines(request)
    message = str(caught.value)
    assert caught.value.field == "dimensions" and "'a'" in message
    assert "request parameter" in message and "text-embeddings-api" in message
    assert "secret text" not in message
    _lines(request, model="gemini-embedding-001")  # the Gemini family takes it per row


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (EmbeddingRequest("a", ""), "text"),
        (EmbeddingRequest("a", 3), "text"),  # type: ignore[arg-type]
        (EmbeddingRequest("a", "t", task_type=""), "task_type"),
        (EmbeddingRequest("a", "t", title=7), "title"),  # type: ignore[arg-type]
        (EmbeddingRequest("a", "lone \ud800 surrogate"), "text"),
        (EmbeddingRequest("a", "t", title="\udfff"), "title"),
    ],
)
def test_a_bad_request_is_refused_naming_its_field(request_: EmbeddingRequest, field: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        _lines(request_)
    assert caught.value.field == field
    assert caught.value.__context__ is None and caught.value.__cause__ is None


def _keys(lines: list[StagedLine]) -> KeyMap:
    keys = KeyMap()
    for line in lines:
        keys.add(line.key, line.digest, line.canonical)
    return keys


def _row(line: StagedLine, values: list[float] | None = None, **extra: object) -> dict[str, object]:
    """The row Google's page shows for ``line``: the instance echoed, one prediction."""
    embeddings = {"statistics": {"token_count": 3, "truncated": False}, "values": values or [1.0]}
    return {"instance": json.loads(line.data), "predictions": [{"embeddings": embeddings}]} | {
        "status": "",
        **extra,
    }


def test_the_echoed_instance_finds_its_key_and_identical_texts_take_one_row_each() -> None:
    lines = _lines(
        EmbeddingRequest("a", "same"), EmbeddingRequest("b", "other"), EmbeddingRequest("c", "same")
    )
    keys = _keys(lines)
    assert not keys.carries_id(_row(lines[0]))
    assert keys.match(_row(lines[1])) == 1
    taken: set[int] = set()
    for expected in (0, 2):
        index = keys.match(_row(lines[0]), taken)
        assert index == expected
        taken.add(index)
    assert keys.match(_row(lines[0]), taken) is None  # a third row for two keys: nobody's
    # Vertex's importer may write the echo with nulls or as a JSON string: still the instance.
    echoed = _row(lines[1]) | {"instance": json.dumps({"content": "other", "title": None})}
    assert keys.match(echoed) == 1
    stranger = _row(lines[1]) | {"instance": {"content": "not ours"}}
    assert keys.match(stranger) is None


def test_a_pass_over_the_rows_answers_each_key_once(caplog: pytest.LogCaptureFixture) -> None:
    """Through the results pass: a stranger's row and a row written twice are skipped (logged),
    identical texts each get one row, a key with none is left to the pass's end (missing)."""
    lines = _lines(
        EmbeddingRequest("a", "same"),
        EmbeddingRequest("b", "same"),
        EmbeddingRequest("c", "other"),
        EmbeddingRequest("d", "never answered"),
    )
    keys = _keys(lines)
    stranger = {"instance": {"content": "not ours"}, "predictions": [], "status": ""}
    first = [_row(lines[0]), _row(lines[1]), stranger, _row(lines[2])]
    again = [_row(lines[2])]  # the same row in a second file (incremental, then final)
    job = Job(
        id="t",
        name="projects/p/locations/l/batchPredictionJobs/1",
        model=MODEL,
        provider="embeddings",
        input_uri="gs://b/in.jsonl",
        output_prefix="gs://b/out",
        keys=4,
    )
    taken: set[int] = set()
    echoed: dict[str, int] = {}
    with caplog.at_level(logging.WARNING, logger="vertexbatch"):
        results = []
        for rows in (first, again):
            read = [(row, json.dumps(row).encode(), None) for row in rows]
            results += list(read_rows(read, keys, taken, job, "f", echoed=echoed, damaged={}))
    assert sorted((r.key, r.outcome) for r in results) == [("a", "ok"), ("b", "ok"), ("c", "ok")]
    assert taken == {0, 1, 2}
    assert "skipped 1 line(s)" in caplog.text
    assert "not ours" not in caplog.text


_read = read_embedding_row


def test_a_prediction_is_an_answer_and_its_statistics_are_read() -> None:
    (line,) = _lines(EmbeddingRequest("a", "text"))
    ok = _read(_row(line, [0.5, -0.25]))
    assert ok.outcome == "ok" and list(ok.embedding or ()) == [0.5, -0.25]
    assert ok.usage.input == 3 and ok.usage.output == 0
    again = _read({"response": ok.response})  # what the answer cache stores reads back
    assert list(again.embedding or ()) == [0.5, -0.25]
    cut = _row(line, [0.5])
    cut["predictions"] = [{"embeddings": {"statistics": {"truncated": True}, "values": [0.5]}}]
    truncated = _read(cut)
    assert truncated.outcome == "truncated" and isinstance(truncated.error, TruncatedError)
    assert list(truncated.embedding or ()) == [0.5]  # the vector is kept
    # The page's BigQuery output holds the predictions as a JSON string: read the same.
    text = _read(_row(line) | {"predictions": json.dumps(_row(line, [2.0])["predictions"])})
    assert text.outcome == "ok" and list(text.embedding or ()) == [2.0]


@pytest.mark.parametrize(
    ("fields", "outcome", "status"),
    [
        (
            {"status": 'Too Many Requests: {"error": {"code": 429}}', "predictions": []},
            "retryable",
            None,
        ),
        ({"status": 'Bad Request: {"error": {"code": 400}}', "predictions": []}, "failed", None),
        ({"status": {"code": 503, "message": "unavailable"}, "predictions": []}, "retryable", None),
        ({"predictions": []}, "retryable", "NO_RESPONSE"),
        ({"predictions": [{"embeddings": {"values": []}}]}, "retryable", "EMPTY_RESPONSE"),
        ({"predictions": [{"embeddings": {"values": [1, "x"]}}]}, "failed", "UNREADABLE_RESPONSE"),
        ({"predictions": [7]}, "failed", "UNREADABLE_RESPONSE"),
        ({"predictions": "[not json"}, "failed", "UNREADABLE_RESPONSE"),
    ],
)
def test_every_other_row_is_one_outcome(
    fields: dict[str, object], outcome: str, status: str | None
) -> None:
    result = _read({"instance": {"content": "t"}, "status": ""} | fields)
    assert result.outcome == outcome and result.embedding is None
    if status is not None:
        assert getattr(result.error, "status", None) == status


def test_identical_texts_share_one_line_with_dedupe() -> None:
    lines = _lines(EmbeddingRequest("a", "same"), EmbeddingRequest("b", "same"))
    assert exact_digest(lines[0].data)[1] == exact_digest(lines[1].data)[1]
    first, alias = dedupe(lines)
    assert first.data and not alias.data and alias.digest == first.digest
    keys = _keys([first, alias])
    assert keys.lines == 1 and keys.shared(0) == [1]
    assert keys.match(_row(first)) == 0
