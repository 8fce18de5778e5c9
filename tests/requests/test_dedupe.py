"""Dedupe: equal requests staged and paid once, every key answered, against the local stack."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import (
    CLAUDE,
    GEMINI,
    claude_request,
    jobs_in,
    metered_client,
    object_names,
    request_line,
    write_lines,
)
from tests.processes import kill_at_write, submit
from vertexbatch._command.cli import main
from vertexbatch._requests.dedupe import dedupe
from vertexbatch._requests.keymap import KeyMap
from vertexbatch._requests.lines import claude_line
from vertexbatch.emulator import JobOptions, LocalStack


def _requests() -> list[vb.ClaudeRequest]:
    # a, c and e send one request; b and d another (a refusal); f its own.
    return [
        claude_request("a", "Summarise the report."),
        claude_request("b", "Refuse this [[vb:refuse category=cyber]]"),
        claude_request("c", "Summarise the report."),
        claude_request("d", "Refuse this [[vb:refuse category=cyber]]"),
        claude_request("e", "Summarise the report."),
        claude_request("f", "Something else."),
    ]


def _input_lines(stack: LocalStack, job: vb.Job) -> list[dict]:
    bucket, name = job.input_uri.removeprefix("gs://").split("/", 1)
    data = stack.storage_client().bucket(bucket).blob(name).download_as_bytes()
    return [json.loads(line) for line in data.splitlines()]


def test_dedupe_turns_repeats_into_aliases_of_the_first() -> None:
    """A repeated request keeps its key, takes the first key's digest and stages no bytes."""
    lines = list(dedupe(claude_line(r) for r in _requests()))
    assert [line.key for line in lines] == ["a", "b", "c", "d", "e", "f"]
    assert [bool(line.data) for line in lines] == [True, True, False, False, False, True]
    assert lines[2].digest == lines[4].digest == lines[0].digest
    assert lines[3].digest == lines[1].digest
    keys = KeyMap()
    for line in lines:
        keys.add(line.key, line.digest, line.canonical)
    assert keys.lines == 3 and len(keys) == 6
    assert keys.shared(0) == [2, 4] and keys.shared(1) == [3] and keys.shared(5) == []
    assert keys.primary(4) == 0 and keys.primary(5) == 5


def test_dedupe_stages_each_request_once_and_answers_every_key(
    client: vb.Client, stack: LocalStack
) -> None:
    """Six keys, three distinct requests: three staged lines, six results sharing outcomes."""
    job = client.submit_claude("dd", CLAUDE, _requests(), dedupe=True)
    assert job.keys == 6
    staged = _input_lines(stack, job)
    assert len(staged) == 3
    stack.wait_job(job.name)
    results = list(client.results(job))
    assert sorted(r.key for r in results) == ["a", "b", "c", "d", "e", "f"]
    by_key = {r.key: r for r in results}
    assert by_key["a"].ok and by_key["c"].text == by_key["e"].text == by_key["a"].text
    assert by_key["c"].usage == by_key["a"].usage
    assert [by_key[k].shared for k in "abcdef"] == [False, False, True, True, True, False]
    assert by_key["d"].outcome == "refused" and by_key["d"].refusal == by_key["b"].refusal
    assert isinstance(by_key["d"].error, vb.RefusedError) and by_key["d"].error.key == "d"
    assert by_key["b"].error is not None and by_key["b"].error.key == "b"


def test_without_dedupe_repeats_are_staged_apart(client: vb.Client, stack: LocalStack) -> None:
    """Off by default: identical requests are separate lines (several samples are intended)."""
    job = client.submit_claude("no-dd", CLAUDE, _requests())
    assert len(_input_lines(stack, job)) == 6
    stack.wait_job(job.name)
    assert not any(r.shared for r in client.results(job))


def test_dedupe_switched_is_other_rows(client: vb.Client) -> None:
    """The same id with dedupe switched claims other rows: refused, nothing changed."""
    first = client.submit_claude("dd-switch", CLAUDE, _requests(), dedupe=True)
    with pytest.raises(vb.InvalidRequestError, match="already claimed for other rows"):
        client.submit_claude("dd-switch", CLAUDE, _requests())
    assert client.submit_claude("dd-switch", CLAUDE, _requests(), dedupe=True) == first


@pytest.mark.parametrize(
    "other",
    [
        lambda rows: [*rows[:-2], claude_request("g", "Summarise the report."), rows[-1]],
        lambda rows: [rows[0], rows[1], rows[3], rows[2], *rows[4:]],
    ],
    ids=["another-repeat-key", "repeats-in-another-order"],
)
def test_the_same_input_with_another_key_map_is_other_rows(
    client: vb.Client,
    stack: LocalStack,
    bucket: str,
    other: Callable[[list[vb.ClaudeRequest]], list[vb.ClaudeRequest]],
) -> None:
    """A submit stopped after the key map, before the manifest; another submit of the id stages
    the same input lines with other keys (repeats have no line of their own): refused, no job
    made, nothing staged changed; the first rows then carry on and every key is read."""
    kill_at_write(
        stack, bucket, "/dd-keys/manifest.json", submit, "dd-keys", _requests(), {"dedupe": True}
    )
    assert object_names(stack, bucket, "jobs/dd-keys/manifest.json") == []
    assert object_names(stack, bucket, "jobs/dd-keys/keys.jsonl") != []
    with pytest.raises(vb.InvalidRequestError, match="already claimed for other keys") as err:
        client.submit_claude("dd-keys", CLAUDE, other(_requests()), dedupe=True)
    assert "key map" in str(err.value)
    assert jobs_in(stack, bucket) == []
    job = client.submit_claude("dd-keys", CLAUDE, _requests(), dedupe=True)
    stack.wait_job(job.name)
    assert sorted(r.key for r in client.results(job)) == list("abcdef")


def test_dedupe_without_repeats_is_the_plain_submission(client: vb.Client) -> None:
    """With no repeated request, dedupe stages exactly the rows a plain submit does."""
    requests = [claude_request(k, f"Distinct {k}") for k in "xyz"]
    first = client.submit_claude("dd-none", CLAUDE, requests)
    assert client.submit_claude("dd-none", CLAUDE, requests, dedupe=True) == first


def test_dedupe_gemini_without_echoed_labels(client: vb.Client, stack: LocalStack) -> None:
    """Gemini rows matched by their echoed request still reach every key of a shared line."""
    stack.set_job_options(JobOptions(echo_labels=False), display_name="dd-gemini")
    requests = [
        vb.GeminiRequest("g1", "Classify this ticket."),
        vb.GeminiRequest("g2", "Classify this ticket.", {"labels": {"team": "a"}}),
        vb.GeminiRequest("g3", "Another ticket."),
    ]
    job = client.submit_gemini("dd-gemini", GEMINI, requests, dedupe=True)
    assert len(_input_lines(stack, job)) == 2  # labels are not part of the request's identity
    stack.wait_job(job.name)
    results = {r.key: r for r in client.results(job)}
    assert sorted(results) == ["g1", "g2", "g3"]
    assert all(r.ok for r in results.values())
    assert results["g2"].shared and results["g2"].text == results["g1"].text


def test_dedupe_missing_keys_and_resubmission(client: vb.Client, stack: LocalStack) -> None:
    """A dropped shared line leaves all its keys missing; resubmitting them stages it once."""
    requests = [
        claude_request("m1", "Lost [[vb:drop]]"),
        claude_request("ok", "Fine."),
        claude_request("m2", "Lost [[vb:drop]]"),
    ]
    job = client.submit_claude("dd-missing", CLAUDE, requests, dedupe=True)
    stack.wait_job(job.name)
    outcomes = {r.key: r.outcome for r in client.results(job)}
    assert outcomes == {"m1": "missing", "ok": "ok", "m2": "missing"}
    again = client.resubmit(job)
    assert again.keys == 2 and len(_input_lines(stack, again)) == 1
    only_alias = client.resubmit(job, keys=["m2"], id="dd-missing.alias")
    assert only_alias.keys == 1 and len(_input_lines(stack, only_alias)) == 1
    stack.wait_job(only_alias.name)
    assert [r.key for r in client.results(only_alias)] == ["m2"]


def test_dedupe_records_tokens_once_per_line(stack: LocalStack, bucket: str) -> None:
    """Metrics count tokens once per staged line, and one outcome per key."""
    client, reader = metered_client(stack, bucket, "t")
    job = client.submit_claude("dd-metrics", CLAUDE, _requests(), dedupe=True)
    stack.wait_job(job.name)
    results = list(client.results(job))
    paid = [r for r in results if not r.shared]
    metrics = {
        m.name: m
        for rm in reader.get_metrics_data().resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    }
    points = metrics["gen_ai.client.token.usage"].data.data_points
    by_type = {p.attributes["gen_ai.token.type"]: p for p in points}
    assert by_type["input"].sum == sum(r.usage.input for r in paid) > 0
    assert by_type["input"].count == 3  # one per staged line, not six
    counted = sum(p.value for p in metrics["vertexbatch.results"].data.data_points)
    assert counted == 6


def test_run_with_dedupe(client: vb.Client, stack: LocalStack, bucket: str) -> None:
    """A run stages each distinct request of a shard once and yields every key."""
    run = client.run_claude("dd-run", CLAUDE, _requests(), dedupe=True)
    jobs = jobs_in(stack, bucket)
    assert len(jobs) == 1
    stack.settle()
    while not run.advance().done:
        stack.settle()
    results = {r.key: r for r in run.results()}
    assert sorted(results) == ["a", "b", "c", "d", "e", "f"]
    assert results["e"].shared and results["e"].text == results["a"].text
    assert run.status().keys == 6
    again = client.run_claude("dd-run", CLAUDE, _requests(), dedupe=True)
    assert again.status().keys == 6


def test_command_dedupe(client: vb.Client, stack: LocalStack, bucket: str, tmp_path: Path) -> None:
    """`submit --dedupe` and `run submit --dedupe` stage repeated lines once; results say shared."""
    path = write_lines(
        tmp_path / "in.jsonl", [request_line("a"), request_line("b"), request_line("c", "Other")]
    )
    env = stack.environment(bucket, prefix="jobs")
    for args in (
        ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "cli-dd", "--dedupe"],
        ["run", "submit", "--provider", "claude", "--model", CLAUDE, "--id", "cli-rdd", "--dedupe"],
    ):
        done = CliRunner().invoke(main, [*args, str(path)], env=env, catch_exceptions=False)
        assert done.exit_code == 0, done.output
    job = client.find("cli-dd")
    assert job is not None and job.keys == 3 and len(_input_lines(stack, job)) == 2
    shard = client.find("cli-rdd.s0")
    assert shard is not None and shard.keys == 3 and len(_input_lines(stack, shard)) == 2
    stack.wait_job(job.name)
    printed = CliRunner().invoke(main, ["results", "cli-dd"], env=env, catch_exceptions=False)
    records = [json.loads(line) for line in printed.stdout.splitlines()]
    assert sorted((r["key"], r["shared"]) for r in records) == [
        ("a", False),
        ("b", True),
        ("c", False),
    ]
