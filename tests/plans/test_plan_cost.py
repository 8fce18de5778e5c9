"""Plans before paying: counts, tokens and cost of a submission, with nothing staged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import vertexbatch as vb
from tests.helpers import CLAUDE, GEMINI, claude_request, jobs_in, request_line, write_lines
from vertexbatch._command.cli import main
from vertexbatch._plans.estimate import estimate_tokens, output_ceiling
from vertexbatch._plans.prices import price_of
from vertexbatch._providers import GEMINI_DEFAULT_OUTPUT
from vertexbatch.emulator import LocalStack


def _requests() -> list[vb.ClaudeRequest]:
    # Three distinct requests among five keys; "x" twice more.
    texts = ["Review diff one.", "Review diff two.", "Review diff one.", "Other.", "Other."]
    return [claude_request(f"k{i}", text, max_tokens=100) for i, text in enumerate(texts)]


# Tests price the stack's Claude model themselves, apart from the shipped table's figures.
_OPUS = vb.Price("claude-opus-5-5", 5.0, 25.0)


def _nothing_staged(stack: LocalStack, bucket: str) -> bool:
    return not list(stack.storage_client().list_blobs(bucket)) and not jobs_in(stack, bucket)


def test_price_table_prices_each_catalogued_model_by_its_own_row_and_takes_overrides() -> None:
    """A model gets its own catalogue row's price (bare, ``@version``, a publisher path or a
    Gemini ``-001`` version), never a neighbour's; a caller's price (by family) comes first."""

    def match(model: str, prices: tuple[vb.Price, ...] = ()) -> str | None:
        found = price_of(model, prices)
        return None if found is None else found.match

    assert match("gemini-2.5-flash-lite") == "gemini-2.5-flash-lite"
    assert match("gemini-2.5-flash-001") == "gemini-2.5-flash"
    assert match("publishers/google/models/gemini-2.5-pro") == "gemini-2.5-pro"
    assert match("claude-opus-4-5@20251101") == "claude-opus-4-5"
    assert match("claude-sonnet-4@20250514") == "claude-sonnet-4"
    assert match("claude-sonnet-4-5@20250929") == "claude-sonnet-4-5"
    assert match("claude-haiku-4-5@20251001") == "claude-haiku-4-5"
    assert match(CLAUDE) == "claude-opus-5-5"
    for other in (
        "claude-opus-4-9@20270101",  # newer than the catalogue: not claude-opus-4's price
        "claude-opus-5-50",
        "claude-fable-5-2",  # catalogued, but no page prices it: not claude-fable-5's price
        "claude-3-opus@20240229",
        "gemini-2.0-flash-001",
        "gemini-2.5-flash-preview",
        "llama-4",
    ):
        assert match(other) is None, other
    mine = vb.Price("claude-opus-5-5", 1.0, 2.0)
    assert price_of(CLAUDE, [mine]) == mine
    assert match("claude-opus-5-50", (mine,)) is None
    with pytest.raises(vb.InvalidRequestError, match="output must be the online list price"):
        vb.Price("x", 1.0, -2.0)
    with pytest.raises(vb.InvalidRequestError, match=r"cache_read must be .* cache read tokens"):
        vb.Price("x", 1.0, 2.0, cache_read=float("nan"))
    assert vb.PRICES.date and "http" in vb.PRICES.source and vb.PRICES


def test_estimates_read_text_and_ceilings() -> None:
    """The estimate counts text (not structure) at 4 characters a token; ceilings per provider."""
    body = {"anthropic_version": "v", "max_tokens": 7, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "x" * 40}]}]}  # fmt: skip
    assert estimate_tokens(body) == 10 + 3
    assert output_ceiling("anthropic", body) == 7
    assert output_ceiling("google", {"generationConfig": {"maxOutputTokens": 9}}) == 9
    assert output_ceiling("google", {"contents": []}) == GEMINI_DEFAULT_OUTPUT


def test_plan_claude_counts_and_costs_without_staging(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A plan counts keys, distinct requests, lines, bytes, jobs, tokens and a cost range."""
    plain = client.plan_claude("p1", CLAUDE, _requests())
    assert (plain.requests, plain.distinct, plain.cached, plain.to_send, plain.jobs) == (
        5,
        3,
        0,
        5,
        1,
    )
    assert plain.max_output_tokens == 500 and not plain.tokens_exact
    deduped = client.plan_claude("p1", CLAUDE, _requests(), dedupe=True, prices=[_OPUS])
    assert (deduped.to_send, deduped.max_output_tokens) == (3, 300)
    assert deduped.bytes < plain.bytes and deduped.input_tokens < plain.input_tokens
    assert deduped.price is not None and deduped.cost_low is not None
    expected_low = deduped.input_tokens * deduped.price.input * 0.5 / 1e6
    assert deduped.cost_low == pytest.approx(expected_low)
    assert deduped.cost_high == pytest.approx(expected_low + 300 * deduped.price.output * 0.5 / 1e6)
    assert any("repeated request" in a for a in plain.assumptions)
    assert _nothing_staged(stack, bucket)
    # The plan's bytes are what submit stages.
    job = client.submit_claude("p1", CLAUDE, _requests(), dedupe=True)
    blob = stack.storage_client().bucket(bucket).blob(job.input_uri.split("/", 3)[3])
    blob.reload()
    assert blob.size == deduped.bytes


def test_exact_counts_match_what_the_job_bills(client: vb.Client, stack: LocalStack) -> None:
    """count_tokens=True reaches both count-tokens endpoints and sums their counts per line sent.

    The local stack's count and its answers' usage come from one function, so this checks the
    plumbing (which lines are counted, dedupe, the sum), not the providers' counting.
    """
    plan = client.plan_claude("exact-c", CLAUDE, _requests(), dedupe=True, count_tokens=True)
    assert plan.tokens_exact
    job = client.submit_claude("exact-c", CLAUDE, _requests(), dedupe=True)
    stack.wait_job(job.name)
    paid = [r for r in client.results(job) if not r.shared]
    assert plan.input_tokens == sum(r.usage.input for r in paid) > 0
    gemini = [
        vb.GeminiRequest("g1", "Classify ticket one.", {"system_instruction": "Be brief."}),
        vb.GeminiRequest("g2", [{"role": "user", "parts": [{"text": "Two"}]}]),
    ]
    plan = client.plan_gemini("exact-g", GEMINI, gemini, count_tokens=True)
    job = client.submit_gemini("exact-g", GEMINI, gemini)
    stack.wait_job(job.name)
    assert plan.input_tokens == sum(r.usage.input for r in client.results(job)) > 0
    assert plan.max_output_tokens == 2 * GEMINI_DEFAULT_OUTPUT


def test_plan_prices_shards_and_refusals(client: vb.Client) -> None:
    """Prices override the table, an unknown price leaves the cost unknown, shards are jobs."""
    mine = client.plan_claude("p2", CLAUDE, _requests(), prices=[vb.Price("claude", 2.0, 4.0)])
    assert mine.price == vb.Price("claude", 2.0, 4.0)
    unknown = client.plan_gemini("p2", "gemini-9-ultra", [vb.GeminiRequest("a", "hi")])
    assert unknown.cost_low is None and any("no price known" in a for a in unknown.assumptions)
    run = client.plan_claude("p2", CLAUDE, _requests(), shard_size=2)
    assert run.jobs == 3
    with pytest.raises(vb.InvalidRequestError, match="appears twice"):
        client.plan_claude("p2", CLAUDE, [claude_request("a", "x"), claude_request("a", "y")])
    with pytest.raises(vb.InvalidRequestError, match="shard_size"):
        client.plan_claude("p2", CLAUDE, _requests(), shard_size=0)


def test_count_tokens_for_a_model_the_stack_does_not_serve(
    client: vb.Client, stack: LocalStack, bucket: str, tmp_path: Path
) -> None:
    """A count refused (404, as Vertex refuses an unknown model) is an InvalidRequestError
    naming the model and location; the command exits with the invalid-request code."""
    with pytest.raises(vb.InvalidRequestError, match="'gemini-0-none' in location") as err:
        client.plan_gemini("p3", "gemini-0-none", [vb.GeminiRequest("a", "hi")], count_tokens=True)
    assert err.value.field == "model" and "404" in str(err.value)
    with pytest.raises(vb.InvalidRequestError, match="'claude-none@default' in location") as err:
        client.plan_claude(
            "p3", "claude-none@default", [claude_request("a", "SECRET")], count_tokens=True
        )
    assert err.value.field == "model" and "SECRET" not in str(err.value)
    path = write_lines(tmp_path / "in.jsonl", [request_line("a", "SECRET")])
    base = ["submit", "--provider", "claude", "--model", "claude-none@default", "--id", "d"]
    printed = CliRunner().invoke(
        main, [*base, "--dry-run", "--count-tokens", str(path)], env=stack.environment(bucket)
    )
    assert printed.exit_code == 3, printed.output
    assert "invalid request" in printed.output and "SECRET" not in printed.output


@pytest.mark.parametrize(("op", "provider"), [("countTokensClaude", "c"), ("countTokens", "g")])
def test_count_tokens_retries_transient_failures(
    client: vb.Client, stack: LocalStack, op: str, provider: str
) -> None:
    """A count that fails transiently is retried under the client's policy; one that keeps
    failing is a VertexBatchError with its status, not a provider SDK error."""

    def plan() -> vb.Plan:
        if provider == "c":
            return client.plan_claude("p4", CLAUDE, [claude_request("a", "hi")], count_tokens=True)
        return client.plan_gemini("p4", GEMINI, [vb.GeminiRequest("a", "hi")], count_tokens=True)

    stack.faults.fail(op, status=503, times=2)
    stack.reset_calls()
    assert plan().tokens_exact
    assert stack.calls()[op] == 3
    stack.faults.fail(op, status=429, times=client.retry.attempts)
    with pytest.raises(vb.VertexBatchError, match="429") as err:
        plan()
    assert not isinstance(err.value, vb.InvalidRequestError)


def test_command_dry_run(stack: LocalStack, bucket: str, tmp_path: Path) -> None:
    """`submit --dry-run` and `run submit --dry-run` print the plan and stage nothing."""
    path = write_lines(
        tmp_path / "in.jsonl", [request_line("a"), request_line("b"), request_line("c", "Else")]
    )
    env = stack.environment(bucket, prefix="jobs")
    base = ["--provider", "claude", "--model", CLAUDE, "--dry-run"]
    table = CliRunner().invoke(
        main, ["submit", *base, "--id", "d1", "--dedupe", str(path)], env=env
    )
    assert table.exit_code == 0, table.output
    assert "nothing staged or created" in table.stdout
    assert "  to send         2" in table.stdout and "assumptions:" in table.stdout
    printed = CliRunner().invoke(
        main,
        ["run", "submit", *base, "--id", "r1", "--shard-size", "1", "--json", str(path)],
        env=env,
    )
    assert printed.exit_code == 0, printed.output
    plan = json.loads(printed.stdout)
    assert (plan["requests"], plan["to_send"], plan["jobs"]) == (3, 3, 3)
    assert plan["price"]["match"] == "claude-opus-5-5" and plan["cost_low"] > 0  # the catalogue's
    assert any("cache_control" in said for said in plan["assumptions"])
    counted = CliRunner().invoke(
        main, ["submit", *base, "--id", "d1", "--count-tokens", "--json", str(path)], env=env
    )
    assert json.loads(counted.stdout)["tokens_exact"] is True
    assert _nothing_staged(stack, bucket)


def test_a_plan_reads_what_the_id_already_holds(
    client: vb.Client, stack: LocalStack, bucket: str, tmp_path: Path
) -> None:
    """An id already submitted: the plan names its job and nothing to pay, as submit returns
    it; other rows under a claimed id: the plan refuses them as submit does; a plan writes
    nothing either way."""
    job = client.submit_claude("held", CLAUDE, _requests(), dedupe=True)
    plan = client.plan_claude("held", CLAUDE, _requests(), dedupe=True, prices=[_OPUS])
    assert plan.submitted == job.name and (plan.to_send, plan.jobs, plan.cost_high) == (0, 0, 0)
    assert plan.requests == 5 and any("already submitted" in a for a in plan.assumptions)
    assert client.submit_claude("held", CLAUDE, _requests(), dedupe=True) == job

    def staged() -> list[str]:
        return sorted(
            b.name for b in stack.storage_client().list_blobs(bucket, prefix="jobs/held/")
        )

    stack.wait_job(job.name)
    before = staged()
    for other in ({"dedupe": False}, {"dedupe": True, "cache": True}):
        with pytest.raises(vb.InvalidRequestError, match="already claimed"):
            client.plan_claude("held", CLAUDE, _requests(), **other)  # type: ignore[arg-type]
        with pytest.raises(vb.InvalidRequestError, match="already claimed"):
            client.submit_claude("held", CLAUDE, _requests(), **other)  # type: ignore[arg-type]
    assert staged() == before
    rows = [json.dumps({"key": r.key, "params": r.params}) for r in _requests()]
    path = write_lines(tmp_path / "held.jsonl", rows)
    base = ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "held", "--dedupe"]
    printed = CliRunner().invoke(
        main, [*base, "--dry-run", str(path)], env=stack.environment(bucket, prefix="jobs")
    )
    assert printed.exit_code == 0, printed.output
    assert f"submitted       {job.name}" in printed.stdout
    fresh = client.plan_claude("fresh", CLAUDE, _requests())
    assert fresh.submitted == "" and fresh.jobs == 1
    # Answered whole from the cache, then planned again after the cache changed.
    first = client.submit_claude("cx", CLAUDE, _requests()[:2], cache=True)
    stack.wait_job(first.name)
    list(client.results(first))
    whole = client.submit_claude("cx2", CLAUDE, _requests()[:2], cache=True)
    planned = client.plan_claude("cx2", CLAUDE, _requests()[:2], cache=True)
    assert (planned.submitted, planned.cached) == (whole.name, 2) == ("cached:cx2", 2)


def test_a_run_plan_reads_what_the_run_id_already_holds(
    client: vb.Client, stack: LocalStack, bucket: str, tmp_path: Path
) -> None:
    """A run id already started with these requests: the plan (and `run submit --dry-run`)
    says it rejoins, with nothing to pay and the shards not finished; other requests, a
    shard size or a model that differ are refused as run_claude refuses them; nothing is
    written."""
    client.run_claude("rp", CLAUDE, _requests(), shard_size=2)
    plan = client.plan_claude("rp", CLAUDE, _requests(), shard_size=2, prices=[_OPUS])
    assert plan.submitted == "run:rp" and (plan.to_send, plan.jobs, plan.cost_high) == (0, 0, 0)
    assert any("3 shards (5 keys) are not finished" in said for said in plan.assumptions)

    def staged() -> list[str]:  # what the client writes (the emulator's jobs write output/)
        names = (b.name for b in stack.storage_client().list_blobs(bucket, prefix="jobs/"))
        return sorted(name for name in names if "/output/" not in name)

    before = staged()
    for other, match in (
        ({"requests": _requests()[:1]}, "already holds another run"),
        ({"shard_size": 3}, "cuts these requests differently"),
        ({"cache": True}, "was staged with cache=False, not cache=True"),
    ):
        given = {"requests": _requests(), "shard_size": 2, **other}
        for call in (client.plan_claude, client.run_claude):
            with pytest.raises(vb.InvalidRequestError, match=match):
                call("rp", CLAUDE, **given)  # type: ignore[operator]
    assert staged() == before
    rows = [json.dumps({"key": r.key, "params": r.params}) for r in _requests()]
    path = write_lines(tmp_path / "rp.jsonl", rows)
    args = ["--provider", "claude", "--model", CLAUDE, "--id", "rp", "--shard-size", "2"]
    printed = CliRunner().invoke(
        main,
        ["run", "submit", *args, "--dry-run", "--json", str(path)],
        env=stack.environment(bucket, prefix="jobs"),
    )
    assert printed.exit_code == 0, printed.output
    assert json.loads(printed.stdout)["submitted"] == "run:rp"
    assert staged() == before


def test_count_tokens_sends_what_anthropics_endpoint_takes(stack: LocalStack, bucket: str) -> None:
    """The Claude count posts to ``count-tokens:rawPredict`` with the model in the body, the
    counted parameters only (no max_tokens or temperature, which the endpoint refuses) and an
    anthropic_version, as recorded on the wire (by the ``AnthropicVertex`` handed in)."""
    import httpx2 as httpx
    from anthropic import AnthropicVertex

    sent: list[httpx.Request] = []
    hooks = {"request": [lambda request: sent.append(request)]}
    api = AnthropicVertex(
        region=stack.location,
        project_id=stack.project,
        access_token="local-stack",
        base_url=f"{stack.vertex_endpoint}/v1",
        max_retries=0,
        http_client=httpx.Client(event_hooks=hooks),  # type: ignore[arg-type]
    )
    stack.create_bucket(bucket)
    client = vb.Client(
        stack.project,
        stack.location,
        bucket,
        prefix="jobs",
        jobs=stack.jobs_client(),
        storage=stack.storage_client(),
        retry=vb.RetryPolicy.no_wait(),
        anthropic_vertex=api,
    )
    request = vb.ClaudeRequest(
        "a",
        {
            "max_tokens": 50,
            "temperature": 0.2,
            "system": "Be brief.",
            "messages": [{"role": "user", "content": "Count me."}],
        },
    )
    with api, client:  # the client leaves the api open (the caller's): closed here
        plan = client.plan_claude("wire", CLAUDE, [request], count_tokens=True)
    assert plan.tokens_exact and plan.input_tokens > 0
    [call] = sent
    assert call.method == "POST"
    assert call.url.path.endswith("/publishers/anthropic/models/count-tokens:rawPredict")
    body = json.loads(call.content)
    assert body["model"] == CLAUDE and body["anthropic_version"]  # the SDK's Vertex version
    assert set(body) == {"model", "anthropic_version", "messages", "system"}
    assert body["system"] == [{"type": "text", "text": "Be brief."}]
