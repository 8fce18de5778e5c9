"""A request that names a gs:// file is cached on the object's generation, not on its URI alone.

Issue 38, item 6: the answer cache keyed a ``fileData`` part on its ``gs://`` URI, so a replaced
object was answered with the old object's answer. Each test submits real jobs with ``cache=True``
through the real clients on the local stack, replacing objects with the real storage client;
GCS calls are watched (or refused) by a gate in front of fake-gcs-server.
"""

from __future__ import annotations

import json
import re
from email.message import Message
from typing import Any

import pytest

import vertexbatch as vb
from tests.gcs_gate import Spoil, gate
from tests.helpers import local_client, object_names, read_to_end
from vertexbatch.emulator import LocalStack

GEMINI = "gemini-3.8-flash"
CLAUDE = "claude-opus-5-5@default"


def _gemini(key: str, uri: str, text: str = "Summarise the file.") -> vb.GeminiRequest:
    parts = [{"text": text}, {"file_data": {"mime_type": "text/plain", "file_uri": uri}}]
    return vb.GeminiRequest(key, [{"role": "user", "parts": parts}])


def _claude(key: str, uri: str) -> vb.ClaudeRequest:
    content = [
        {"type": "text", "text": "Summarise the document."},
        {"type": "document", "source": {"type": "url", "url": uri}},
    ]
    return vb.ClaudeRequest(
        key, {"max_tokens": 64, "messages": [{"role": "user", "content": content}]}
    )


def _submit(
    client: vb.Client, provider: str, id: str, requests: list[Any], **options: Any
) -> vb.Job:
    if provider == "gemini":
        return client.submit_gemini(id, GEMINI, requests, **options)
    return client.submit_claude(id, CLAUDE, requests, **options)


def _upload(stack: LocalStack, bucket: str, name: str, data: bytes) -> str:
    stack.storage_client().bucket(bucket).blob(name).upload_from_string(data)
    return f"gs://{bucket}/{name}"


@pytest.mark.parametrize("provider", ["gemini", "claude"])
def test_a_replaced_file_is_not_answered_from_the_cache(
    client: vb.Client, stack: LocalStack, bucket: str, provider: str
) -> None:
    """The same request naming the same URI is answered from the cache while the object is
    the same, and sent again once the object is replaced; a request naming no file is still
    cached as before."""
    make = _gemini if provider == "gemini" else _claude
    uri = _upload(stack, bucket, f"docs/{provider}.txt", b"first version")
    plain = (
        vb.GeminiRequest("plain", "Just text.")
        if provider == "gemini"
        else vb.ClaudeRequest(
            "plain", {"max_tokens": 64, "messages": [{"role": "user", "content": "Just text."}]}
        )
    )
    first = read_to_end(
        client,
        stack,
        _submit(client, provider, f"{provider}-f1", [make("doc", uri), plain], cache=True),
    )
    assert first["doc"].ok and not first["doc"].cached

    again = _submit(client, provider, f"{provider}-f2", [make("doc", uri), plain], cache=True)
    assert again.name == f"cached:{provider}-f2"  # the object is the same: the cache answers
    assert all(r.cached for r in read_to_end(client, stack, again).values())

    _upload(stack, bucket, f"docs/{provider}.txt", b"second version")
    replaced = _submit(client, provider, f"{provider}-f3", [make("doc", uri), plain], cache=True)
    assert not replaced.name.startswith("cached:")
    results = read_to_end(client, stack, replaced)
    assert not results["doc"].cached and results["doc"].ok
    assert results["plain"].cached  # no file named: keyed as before

    # The new object's answer is cached in turn.
    after = _submit(client, provider, f"{provider}-f4", [make("doc", uri)], cache=True)
    assert after.name == f"cached:{provider}-f4"


def _watching(seen: list[tuple[str, str]], deny: str = "") -> Any:
    def script(method: str, path: str, headers: Message) -> Spoil | None:
        seen.append((method, path))
        if deny and method == "GET" and deny in path:
            return Spoil(status=403)
        return None

    return script


def _object_gets(seen: list[tuple[str, str]], folder: str) -> list[str]:
    """The object metadata GETs of objects under ``folder`` (not media downloads)."""
    pattern = re.compile(rf"^/storage/v1/b/[^/]+/o/{re.escape(folder)}%2F[^?/]+(\?.*)?$")
    return [p for m, p in seen if m == "GET" and pattern.match(p) and "alt=media" not in p]


def test_each_distinct_file_is_read_once_and_only_with_the_cache(
    stack: LocalStack, bucket: str
) -> None:
    """Three requests naming two objects (one twice) cost two metadata reads with cache=True
    (dedupe too), and none without the cache, with dedupe alone."""
    uris = [_upload(stack, bucket, f"once/{n}.txt", n.encode()) for n in ("a", "b")]
    requests = [
        _gemini("k0", uris[0]),
        _gemini("k1", uris[1], "Other words."),
        _gemini("k2", uris[0], "Yet other words."),
    ]
    seen: list[tuple[str, str]] = []
    with gate(stack.storage_endpoint, _watching(seen)) as url:
        client = local_client(stack, bucket, storage_endpoint=url)
        client.submit_gemini("once-cache", GEMINI, requests, cache=True, dedupe=True)
        assert len(_object_gets(seen, "once")) == 2
        seen.clear()
        client.submit_gemini("once-dedupe", GEMINI, requests, dedupe=True)
        client.submit_gemini("once-plain", GEMINI, requests)
        assert _object_gets(seen, "once") == []


@pytest.mark.parametrize("provider", ["gemini", "claude"])
def test_a_missing_file_is_refused_naming_its_place(
    client: vb.Client, stack: LocalStack, bucket: str, provider: str
) -> None:
    """A named object that does not exist is an InvalidRequestError naming the request's key
    and the URI's place in it (never the URI), before anything is staged."""
    make = _gemini if provider == "gemini" else _claude
    uri = _upload(stack, bucket, "there.txt", b"x")
    secret = f"gs://{bucket}/secret-name-nowhere.txt"
    requests = [make("fine", uri), make("gone", secret)]
    with pytest.raises(vb.InvalidRequestError) as raised:
        _submit(client, provider, f"{provider}-missing", requests, cache=True)
    message = str(raised.value)
    assert "'gone'" in message and "does not exist" in message
    place = (
        "contents[0].parts[1].file_data.file_uri"
        if provider == "gemini"
        else "messages[0].content[1].source.url"
    )
    assert place in message and "secret-name-nowhere" not in message
    assert object_names(stack, bucket, f"jobs/{provider}-missing/") == []
    # Without the cache the file is not looked at: Vertex reads it when the job runs.
    _submit(client, provider, f"{provider}-missing-plain", requests)


def test_an_unreadable_file_is_refused_naming_its_place(stack: LocalStack, bucket: str) -> None:
    """A named object the credentials may not read (403) is an InvalidRequestError naming the
    key and place, before anything is staged."""
    uri = _upload(stack, bucket, "locked/doc.txt", b"x")
    seen: list[tuple[str, str]] = []
    with gate(stack.storage_endpoint, _watching(seen, deny="locked%2Fdoc.txt")) as url:
        client = local_client(stack, bucket, storage_endpoint=url)
        with pytest.raises(vb.InvalidRequestError) as raised:
            client.submit_gemini("locked", GEMINI, [_gemini("k", uri)], cache=True)
    message = str(raised.value)
    assert "'k'" in message and "403" in message and "locked" not in message
    assert object_names(stack, bucket, "jobs/locked/") == []


def test_a_run_keys_its_shards_on_the_generation(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A run with cache=True fills and reads the cache by generation too: a rerun after the
    object is replaced sends the request again."""
    uri = _upload(stack, bucket, "run/doc.txt", b"one")

    def finish(run_id: str) -> vb.Run:
        run = client.run_gemini(run_id, GEMINI, [_gemini("doc", uri)], cache=True)
        for _ in range(6):
            stack.settle()
            if run.advance().done:
                break
        list(run.results())  # fills the cache
        return run

    finish("run-f1")
    assert finish("run-f2").shards[0].keys == 1
    cached = {r.key: r.cached for r in client.open_run("run-f2").results()}
    assert cached == {"doc": True}
    _upload(stack, bucket, "run/doc.txt", b"two")
    assert {r.key: r.cached for r in finish("run-f3").results()} == {"doc": False}


def test_a_plan_counts_a_replaced_file_as_not_cached(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """``plan_gemini(cache=True)`` counts a request naming a file as cached only while the
    object is the one answered, as submit would; the plan writes nothing."""
    uri = _upload(stack, bucket, "plan/doc.txt", b"one")
    read_to_end(
        client, stack, client.submit_gemini("plan-f1", GEMINI, [_gemini("doc", uri)], cache=True)
    )
    assert client.plan_gemini("plan-f2", GEMINI, [_gemini("doc", uri)], cache=True).cached == 1
    _upload(stack, bucket, "plan/doc.txt", b"two")
    assert client.plan_gemini("plan-f2", GEMINI, [_gemini("doc", uri)], cache=True).cached == 0
    assert object_names(stack, bucket, "jobs/plan-f2/") == []
    with pytest.raises(vb.InvalidRequestError, match="does not exist"):
        client.plan_gemini("plan-f3", GEMINI, [_gemini("doc", uri + ".gone")], cache=True)


@pytest.mark.anyio
async def test_client_aio_refuses_a_missing_file_alike(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """``client.aio.submit_gemini(cache=True)`` reads generations as the sync client does: a
    missing object is the same InvalidRequestError, before anything is staged."""
    uri = f"gs://{bucket}/aio-nowhere.txt"
    with pytest.raises(vb.InvalidRequestError, match=r"'k'.*does not exist") as raised:
        await client.aio.submit_gemini("aio-missing", GEMINI, [_gemini("k", uri)], cache=True)
    assert "aio-nowhere" not in str(raised.value)
    assert object_names(stack, bucket, "jobs/aio-missing/") == []


def test_the_command_refuses_a_missing_file_with_cache(
    stack: LocalStack, bucket: str, tmp_path: Any
) -> None:
    """``vertexbatch submit --cache`` with a line naming a missing object exits 3 with one
    error line naming the key and place, never the URI."""
    from click.testing import CliRunner

    from vertexbatch._command.cli import main

    parts = [{"text": "Read it."}, {"file_data": {"file_uri": f"gs://{bucket}/cli-nowhere.txt"}}]
    line = json.dumps({"key": "doc", "contents": [{"role": "user", "parts": parts}]})
    path = tmp_path / "in.jsonl"
    path.write_text(line + "\n")
    args = ["submit", "--provider", "gemini", "--model", GEMINI, "--id", "cli-missing"]
    env = {**stack.environment(bucket, prefix="jobs")}
    result = CliRunner().invoke(main, [*args, "--cache", str(path)], env=env)
    assert result.exit_code == 3, result.output
    assert "'doc'" in result.output and "file_data.file_uri" in result.output
    assert "cli-nowhere" not in result.output
