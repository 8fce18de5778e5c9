"""`vertexbatch resubmit`, `vertexbatch plan` and what `results` says of its fields, through
click's runner and the local stack."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import vertexbatch as vb
from tests.helpers import CLAUDE, claude_request, one_error_line, request_line, write_lines
from vertexbatch._command.cli import main
from vertexbatch._command.cli_render import ExitCode, result_record
from vertexbatch._command.demo import next_steps
from vertexbatch.emulator import LocalStack

CLI_PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def run(args: list[str], env: Mapping[str, str | None], stdin: str | None = None) -> Result:
    return CliRunner().invoke(main, args, env=env, input=stdin, catch_exceptions=False)


def ended(stack: LocalStack, client: vb.Client, submission_id: str) -> vb.Job:
    """A terminal job of three keys: `a` answered, `b` and `c` failed with a 429 (retryable)."""
    job = client.submit_claude(
        submission_id,
        CLAUDE,
        [
            claude_request("a", "Review."),
            claude_request("b", "x [[vb:error 429]]"),
            claude_request("c", "y [[vb:error 429]]"),
        ],
    )
    stack.wait_job(job.name)
    return job


def names_on_vertex(stack: LocalStack, bucket: str) -> list[str]:
    return sorted(
        j["displayName"]
        for j in stack.jobs()
        if j["inputConfig"]["gcsSource"]["uris"][0].startswith(f"gs://{bucket}/")
    )


# -- resubmit -----------------------------------------------------------------------------------


def test_resubmit_takes_the_retryable_keys_under_id_r1_once(
    stack: LocalStack, bucket: str, env: dict[str, str | None], client: vb.Client
) -> None:
    """`resubmit ID` (the demo's advice, as printed) submits the retryable and missing keys
    under ID.r1 and prints the job; the same command again prints the same job."""
    ended(stack, client, "res-1")
    first = run(["resubmit", "res-1"], env)
    assert first.exit_code == 0, first.output
    job = client.find("res-1.r1")
    assert job is not None and job.keys == 2
    assert f"name     {job.name}" in first.stdout
    again = run(["resubmit", "res-1", "--json"], env)
    assert again.exit_code == 0, again.output
    assert vb.Job.from_dict(json.loads(again.stdout)) == job
    assert names_on_vertex(stack, bucket) == ["res-1", "res-1.r1"]
    stack.wait_job(job.name)
    assert sorted(r.key for r in client.results(job)) == ["b", "c"]
    # A resubmission's own resubmission is ID.r2.
    assert run(["resubmit", "res-1.r1"], env).exit_code == 0
    assert client.find("res-1.r2") is not None


def test_resubmit_named_keys_and_a_new_id(
    stack: LocalStack, bucket: str, env: dict[str, str | None], client: vb.Client
) -> None:
    """--keys K1,K2 (repeatable) and --keys-from (stdin here) name the keys; --new-id the id."""
    ended(stack, client, "res-2")
    listed = run(["resubmit", "res-2", "--keys", "a,b", "--keys", "a", "--new-id", "res-2-ab"], env)
    assert listed.exit_code == 0, listed.output
    job = client.find("res-2-ab")
    assert job is not None and job.keys == 2
    piped = run(["resubmit", "res-2", "--keys-from", "-"], env, stdin="c\n\n")
    assert piped.exit_code == 0, piped.output
    job = client.find("res-2.r1")
    assert job is not None and job.keys == 1
    stack.wait_job(job.name)
    assert [r.key for r in client.results(job)] == ["c"]
    assert names_on_vertex(stack, bucket) == ["res-2", "res-2-ab", "res-2.r1"]


def test_resubmit_refusals(
    stack: LocalStack, bucket: str, env: dict[str, str | None], client: vb.Client
) -> None:
    """Each refusal is one line and its exit code; a bad --keys is refused before any call."""
    stack.faults.hold(display_name="res-held", state="PENDING")
    client.submit_claude("res-held", CLAUDE, [claude_request("a", "Review.")])
    held = run(["resubmit", "res-held"], env)
    assert held.exit_code == ExitCode.INVALID_REQUEST
    assert "wait for it or pass keys" in one_error_line(held)
    ended(stack, client, "res-3")
    unknown = run(["resubmit", "res-3", "--keys", "a,zz"], env)
    assert unknown.exit_code == ExitCode.INVALID_REQUEST
    assert "['zz'] are not in job" in one_error_line(unknown)
    missing = run(["resubmit", "no-such-id"], env)
    assert missing.exit_code == ExitCode.NOT_FOUND
    assert "no job for id 'no-such-id'" in one_error_line(missing)
    stack.reset_calls()
    empty = run(["resubmit", "res-3", "--keys", "a,,b"], env)
    assert empty.exit_code == ExitCode.USAGE
    assert "--keys 'a,,b' has an empty key" in one_error_line(empty)
    none = run(["resubmit", "res-3", "--keys-from", "-"], env, stdin="\n")
    assert none.exit_code == ExitCode.USAGE
    assert "--keys-from names no key" in one_error_line(none)
    assert sum(stack.calls().values()) == 0
    assert names_on_vertex(stack, bucket) == ["res-3", "res-held"]


def test_the_demos_next_lines_resubmit() -> None:
    """The demo's closing lines run `resubmit` on the batch they submit, then its results."""
    lines = [line.strip() for line in next_steps("vertexbatch")]
    at = lines.index("vertexbatch resubmit my-batch-1")
    assert lines.index("vertexbatch results my-batch-1 --only retryable") < at
    assert "vertexbatch results my-batch-1.r1" in lines[at:]


# -- plan ---------------------------------------------------------------------------------------


def test_plan_is_submit_dry_run(
    stack: LocalStack, bucket: str, env: dict[str, str | None], tmp_path: Path
) -> None:
    """`plan` prints what `submit --dry-run` prints, as text and as JSON, and creates nothing."""
    path = write_lines(tmp_path / "in.jsonl", [request_line("a"), request_line("b", "Other.")])
    base = ["--provider", "claude", "--model", CLAUDE, "--id", "plan-1", "--dedupe"]
    for extra in ([], ["--json"], ["--price", "claude-opus-5-5=15,75"]):
        planned = run(["plan", *base, *extra, str(path)], env)
        assert planned.exit_code == 0, planned.output
        dry = run(["submit", *base, "--dry-run", *extra, str(path)], env)
        assert dry.exit_code == 0, dry.output
        assert planned.stdout == dry.stdout
    assert "dry run of submission 'plan-1'" in planned.stdout
    assert json.loads(run(["plan", *base, "--json", str(path)], env).stdout)["requests"] == 2
    assert names_on_vertex(stack, bucket) == []
    refused = run(["plan", *base, "--dry-run", str(path)], env)
    assert refused.exit_code == ExitCode.USAGE  # it is always one: no such option
    assert "No such option '--dry-run'" in refused.stderr


# -- results' fields ----------------------------------------------------------------------------


def _table_fields() -> list[str]:
    """The `results` section's table of fields in docs/cli.md, in order."""
    section = CLI_PAGE.read_text().split("\n## results\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE)


def test_results_fields_are_documented_in_order() -> None:
    """docs/cli.md's table and `results --help` name every field of a line, in its order."""
    fields = list(result_record(vb.Result("k")))
    assert _table_fields() == fields
    shown = CliRunner().invoke(main, ["results", "--help"], terminal_width=100).stdout
    listed = shown.split("Fields of each line", 1)[1].split("With --json", 1)[0]
    at = [re.search(rf"(?<![\w{{]){name}\b", listed) for name in fields]
    assert all(at), [name for name, found in zip(fields, at, strict=True) if not found]
    assert [m.start() for m in at if m] == sorted(m.start() for m in at if m)


@pytest.mark.parametrize("as_json", [False, True])
def test_results_lines_are_json_either_way(
    stack: LocalStack, env: dict[str, str | None], client: vb.Client, as_json: bool
) -> None:
    """stdout holds one JSON document per key, with the table's fields, with or without
    --json; the summary is on stderr (words, or with --json one JSON object)."""
    ended(stack, client, "res-lines")
    shown = run(["results", "res-lines", *(["--json"] if as_json else [])], env)
    assert shown.exit_code == 0, shown.output
    records = [json.loads(line) for line in shown.stdout.splitlines()]
    assert sorted(r["key"] for r in records) == ["a", "b", "c"]
    assert all(list(r) == _table_fields() for r in records)
    assert all(r["tool_calls"] == [] and r["parsed"] is None for r in records)
    if as_json:
        assert json.loads(shown.stderr)["outcomes"]["retryable"] == 2
    else:
        assert shown.stderr.startswith("vertexbatch: 3 of 3 keys")
