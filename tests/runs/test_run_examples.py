"""examples/run_advancer.py drives a run to the end, one scheduler call at a time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import vertexbatch as vb
from tests.helpers import jobs_in, load, write_jsonl
from vertexbatch.emulator import LocalStack


def test_run_advancer_drives_a_run(stack: LocalStack, stack_env: str) -> None:
    """Repeated scheduler calls advance the run until every key has its final outcome."""
    import functions_framework

    module = load("run_advancer")
    client = vb.Client.from_env()
    requests = [
        vb.ClaudeRequest(
            f"t{i}", {"max_tokens": 16, "messages": [{"role": "user", "content": f"Task {i}"}]}
        )
        for i in range(5)
    ] + [
        vb.ClaudeRequest(
            "flaky",
            {"max_tokens": 16, "messages": [{"role": "user", "content": "x [[vb:error 503]]"}]},
        )
    ]
    client.run_claude("nightly", "claude-sonnet-4-5", requests, max_attempts=2)
    app = functions_framework.create_app("advance", str(module.__file__))
    http = app.test_client()
    body: dict = {}
    for _ in range(6):
        stack.settle()
        answer = http.post("/", json={"run": "nightly"})
        assert answer.status_code == 200
        body = answer.get_json()
        if body["done"]:
            break
    assert body["done"] and body["outcomes"] == {"ok": 5, "exhausted": 1}
    assert http.post("/", json={"run": "missing-run"}).status_code == 404
    assert http.post("/", json={}).status_code == 400


def test_from_env_names_missing_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing variable is named, with the full list of what is needed."""
    with pytest.raises(vb.InvalidRequestError, match="VERTEXBATCH_BUCKET is not set"):
        vb.Client.from_env({"GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "l"})
    with pytest.raises(vb.InvalidRequestError, match="must be set together"):
        vb.Client.from_env(
            {
                "GOOGLE_CLOUD_PROJECT": "p",
                "GOOGLE_CLOUD_LOCATION": "l",
                "VERTEXBATCH_BUCKET": "b",
                "VERTEXBATCH_VERTEX_ENDPOINT": "http://127.0.0.1:1",
            }
        )


def test_nightly_run_starts_and_rejoins(
    stack: LocalStack,
    stack_env: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The Cloud Run example shards the file into jobs; running it again rejoins the same run."""
    module = load("nightly_run")
    message = {"max_tokens": 8, "messages": [{"role": "user", "content": "a question"}]}
    path = write_jsonl(
        tmp_path / "requests.jsonl", ({"key": f"k{i}", "params": message} for i in range(7))
    )
    argv = ["--model", "claude-sonnet-4-5", "--shard-size", "3", "nightly-cli", str(path)]
    assert module.main(argv) == 0
    assert json.loads(capsys.readouterr().out)["shards"] == 3
    assert module.main(argv) == 0
    assert len(jobs_in(stack, stack_env)) == 3
    run = vb.Client.from_env().open_run("nightly-cli")
    stack.settle()
    assert run.advance().done
    assert sorted(r.key for r in run.results()) == [f"k{i}" for i in range(7)]
