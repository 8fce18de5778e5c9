"""The public API used the way the docs use it: type-checked by mypy (strict), never run.

If a change makes a documented use of vertexbatch a type error, the test command fails here.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from google.genai import types as genai_types

import vertexbatch as vb
from vertexbatch.emulator import Faults, JobOptions, LocalStack, Timing


def submit_and_read(client: vb.Client) -> list[tuple[str, str]]:
    claude = client.submit_claude(
        "review-0a1b2c",
        "claude-opus-5-5@default",
        [
            vb.ClaudeRequest(
                key="skill-a",
                params={"max_tokens": 1024, "messages": [{"role": "user", "content": "..."}]},
            )
        ],
    )
    gemini = client.submit_gemini(
        "triage-7",
        "gemini-3.8-flash",
        [
            vb.GeminiRequest(
                key="ticket-1",
                contents="Classify this ticket.",
                config=genai_types.GenerateContentConfig(temperature=0.0),
            ),
            vb.GeminiRequest(key="ticket-2", contents="...", config={"max_output_tokens": 64}),
        ],
    )
    found: vb.Job | None = client.find("review-0a1b2c")
    assert found is not None
    status: vb.Status = client.status(claude)
    done: bool = status.terminal
    seen: list[tuple[str, str]] = []
    for r in client.results(gemini):
        outcome: vb.Outcome = r.outcome
        if r.ok:
            seen.append((r.key, r.text))
        elif vb.is_retryable(r.error):
            seen.append((r.key, type(r.error).__name__))
        elif isinstance(r.error, vb.RefusedError) and r.refusal is not None:
            seen.append((r.key, r.refusal.category))
        else:
            seen.append((r.key, outcome))
        usage: vb.Usage = r.usage
        assert usage.input >= 0 and done in (True, False)
    again: vb.Job = client.resubmit(claude, keys=["skill-a"])
    client.cancel(again)
    persisted: dict[str, object] = claude.to_dict()
    assert vb.Job.from_dict(persisted) == claude
    return seen


def wait_and_runs(client: vb.Client) -> vb.RunSummary:
    job = client.submit_claude("w", "claude-opus-5-5@default", [])
    try:
        final: vb.Status = client.wait(job, timeout=3600, floor=5.0, ceiling=300.0)
        assert final.terminal
        same: vb.Status = client.wait(
            job,
            deadline=datetime.now(UTC) + timedelta(hours=2),
            floor=5.0,
            on_progress=lambda status: print(status.state),
            sleep=lambda seconds: None,
            now=lambda: datetime.now(UTC),
        )
        assert same.terminal
    except vb.WaitTimeout as exc:
        assert exc.status.state
    run: vb.Run = client.run_gemini(
        "nightly",
        "gemini-3.8-flash",
        (vb.GeminiRequest(f"k{i}", "...") for i in range(3)),
        shard_size=100_000,
        max_attempts=3,
    )
    shards: list[vb.Shard] = run.shards
    assert sum(s.keys for s in shards) == run.keys
    again = client.open_run("nightly")
    deadline = datetime.now(UTC) + timedelta(hours=2)
    summary = again.advance(deadline=deadline, fallback="online", max_live_jobs=4)
    for result in again.results():
        assert isinstance(result, vb.Result)
    outcomes: int = summary.outcomes.get("ok", 0)
    assert outcomes >= 0 and summary.done in (True, False)
    spent: vb.Spend | None = summary.spend
    if spent is not None and spent.dollars is not None:
        assert spent.dollars >= 0 and spent.tiers.get("batch", 0) >= 0
    plan: vb.Plan = client.plan_gemini(
        "nightly", "gemini-3.8-flash", [], shard_size=100_000, fallback_tier="flex"
    )
    assert plan.requests >= 0
    return again.status()


def errors(exc: vb.VertexBatchError) -> str:
    if isinstance(exc, vb.InvalidRequestError):
        return exc.field
    if isinstance(exc, vb.JobError):
        return exc.job
    if isinstance(exc, vb.LineError):
        return f"{exc.key} {exc.code} {exc.status} {exc.transient}"
    if isinstance(exc, vb.ResultError):
        return exc.key
    return str(exc)


def configured() -> vb.Client:
    policy = vb.RetryPolicy(attempts=5, initial=1.0, maximum=30.0, deadline=120.0)
    client = vb.Client("my-project", "us-central1", "my-batch-bucket", prefix="jobs", retry=policy)
    assert client.prefix == "jobs"
    return vb.Client.from_env({"GOOGLE_CLOUD_PROJECT": "p"}, retry=vb.RetryPolicy.no_wait())


def local_stack() -> None:
    with LocalStack() as stack:
        stack.create_bucket("my-test-bucket")
        client: vb.Client = stack.client(bucket="my-test-bucket")
        faults: Faults = stack.faults
        faults.hold(display_name="held", state="PENDING")
        faults.fail("create", status=503, times=2)
        stack.set_job_options(JobOptions(echo_labels=False), display_name="no-labels")
        job = client.submit_claude("held", "claude-opus-5-5@default", [])
        stack.wait_job(job.name, timeout=30.0)
        environment: dict[str, str] = stack.environment("my-test-bucket")
        assert environment and isinstance(Timing(), Timing)
    queued = Timing(queued_seconds=0.5, queued_at="after_pending")
    with LocalStack.from_probe_report("report.json", timing=queued, seed=1) as probed:
        probed.faults.deny("aiplatform.batchPredictionJobs.create")
        assert isinstance(probed.job_options, JobOptions)


async def asynchronous(client: vb.Client) -> vb.RunSummary:
    aio: vb.AsyncClient = client.aio
    params = {"max_tokens": 256, "messages": [{"role": "user", "content": "..."}]}
    job = await aio.submit_claude(
        "async-1", "claude-opus-5-5@default", [vb.ClaudeRequest("a", params)]
    )
    gemini: vb.Job = await aio.submit_gemini(
        "async-2", "gemini-3.8-flash", [vb.GeminiRequest("t", "...")]
    )
    found: vb.Job | None = await aio.find("async-1")
    status: vb.Status = await aio.wait(
        job, deadline=datetime.now(UTC) + timedelta(hours=1), floor=1
    )
    assert status.terminal or found is None or gemini.keys
    async for result in aio.results(job):
        assert isinstance(result, vb.Result)
    again: vb.Job = await aio.resubmit(job, keys=["a"], id="async-1.retry")
    await aio.cancel(again)
    current: vb.Status = await aio.status(again)
    assert current.state
    run: vb.AsyncRun = await aio.run_claude(
        "async-run", "claude-opus-5-5@default", [], shard_size=10
    )
    await aio.run_gemini("async-run-g", "gemini-3.8-flash", [])
    opened = await aio.open_run("async-run")
    async for key_result in opened.key_results():
        assert key_result.outcome
    async for each in run.results():
        assert each.key
    await run.advance(deadline=datetime.now(UTC) + timedelta(hours=2), fallback="online")
    return await run.status()


def traced() -> vb.Client:
    from opentelemetry.sdk.trace import TracerProvider

    return vb.Client.from_env(tracer_provider=TracerProvider())


def cost(client: vb.Client, requests: list[vb.ClaudeRequest]) -> float | None:
    plan: vb.Plan = client.plan_claude(
        "nightly-2",
        "claude-opus-5-5@default",
        requests,
        dedupe=True,
        count_tokens=True,
        prices=[vb.Price("claude-opus", input=5.0, output=25.0)],
    )
    assert plan.to_send <= plan.distinct <= plan.requests and plan.jobs in (0, 1)
    table: tuple[vb.Price, ...] = vb.PRICES
    assert vb.PRICES.date and vb.PRICES.source and table
    # Deprecated (they warn at run time): gone for a type checker, as is any unknown name.
    vb.PRICES_DATE  # type: ignore[attr-defined]  # noqa: B018
    vb.PRICES_UNKNOWN  # type: ignore[attr-defined]  # noqa: B018
    said: tuple[str, ...] = plan.assumptions
    assert said and plan.to_dict()["model"]
    job = client.submit_claude("nightly-2", "claude-opus-5-5@default", requests, dedupe=True)
    shared = [r.key for r in client.results(job) if r.shared or r.cached]
    gemini: vb.Plan = client.plan_gemini(
        "g", "gemini-3.8-flash", [vb.GeminiRequest("k", "...")], shard_size=1000
    )
    run = client.run_gemini("g", "gemini-3.8-flash", [vb.GeminiRequest("k", "...")], dedupe=True)
    assert shared is not None and run.keys and gemini.jobs >= 0
    # Launch rates with a last day; a spend priced on the day the job was created.
    launch = vb.Price("gemini-3.8-flash", 0.75, 3.75, until=datetime(2026, 12, 31).date())
    dated: vb.Plan = client.plan_gemini("g", "gemini-3.8-flash", [], prices=[launch])
    until: str = dated.price_until
    created = client.status(job).created
    day = None if created is None else created.astimezone(UTC).date()
    meter = vb.SpendMeter(job.provider, job.model, priced_on=day)
    assert until is not None and meter.spend.dollars is not None
    return plan.cost_high


def lifecycle() -> str:
    from anthropic import AnthropicVertex
    from google.auth import default
    from google.auth.transport.requests import AuthorizedSession

    credentials, _ = default()
    with vb.Client(
        "my-project",
        "us-central1",
        "my-batch-bucket",
        anthropic_vertex=AnthropicVertex(region="us-central1", project_id="my-project"),
        google_session=AuthorizedSession(credentials),  # type: ignore[no-untyped-call]
    ) as client:
        found: vb.Job | None = client.find("review-0a1b2c")
    client.close()  # again: nothing
    return found.id if found else ""


async def async_lifecycle() -> vb.Job | None:
    async with vb.Client.from_env().aio as aio:
        found = await aio.find("async-1")
    await aio.aclose()
    return found


async def pay_once_everywhere(client: vb.Client) -> None:
    """The pay-once options, keyword-only, on every provider-named method, blocking and async."""
    claude = [vb.ClaudeRequest("k", {"max_tokens": 8, "messages": []})]
    gemini = [vb.GeminiRequest("k", "...")]
    ttl = timedelta(days=7)
    jobs: list[vb.Job] = [
        client.submit_claude("a", "claude-x", claude, dedupe=True, cache=True, cache_ttl=ttl),
        client.submit_gemini("b", "gemini-x", gemini, dedupe=False, cache=True, cache_ttl=None),
        await client.aio.submit_claude("c", "claude-x", claude, cache=True, cache_ttl=ttl),
        await client.aio.submit_gemini("d", "gemini-x", gemini, dedupe=True),
    ]
    plans: list[vb.Plan] = [
        client.plan_claude("a", "claude-x", claude, cache=True, cache_ttl=ttl, shard_size=10),
        client.plan_gemini("b", "gemini-x", gemini, dedupe=True, count_tokens=True),
        await client.aio.plan_claude("c", "claude-x", claude, dedupe=True, prices=vb.PRICES),
        await client.aio.plan_gemini("d", "gemini-x", gemini, cache=True, cache_ttl=ttl),
    ]
    runs: list[vb.Run] = [
        client.run_claude("r", "claude-x", claude, dedupe=True, cache=True, cache_ttl=ttl),
        client.run_gemini("s", "gemini-x", gemini, shard_size=5, max_attempts=2, cache=True),
    ]
    started: vb.AsyncRun = await client.aio.run_gemini("t", "gemini-x", gemini, cache_ttl=ttl)
    assert jobs and plans and runs and started.id


async def job_controls_everywhere(client: vb.Client) -> None:
    """The job controls, keyword-only, on submit, plan and run, blocking and async."""
    claude = [vb.ClaudeRequest("k", {"max_tokens": 8, "messages": []})]
    key = "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"
    account = "runner@p.iam.gserviceaccount.com"
    job: vb.Job = client.submit_claude(
        "a", "claude-x", claude, labels={"team": "x"}, kms_key=key, service_account=account
    )
    plan: vb.Plan = client.plan_claude("a", "claude-x", claude, labels={"team": "x"}, kms_key=key)
    run: vb.Run = client.run_claude("r", "claude-x", claude, service_account=account)
    again: vb.Job = await client.aio.submit_claude("a", "claude-x", claude, labels={})
    client.submit_claude("a", "claude-x", claude, labels=["team"])  # type: ignore[arg-type]
    assert job and plan and run and again


async def keywords_are_typed(client: vb.Client) -> None:
    """The keywords are a TypedDict unpacked: a misspelt or mistyped one is a type error, sync
    and async (each ignore below is needed, or mypy's strict unused-ignore check fails)."""
    claude = [vb.ClaudeRequest("k", {"max_tokens": 8, "messages": []})]
    client.submit_claude("a", "claude-x", claude, cache_tll=None)  # type: ignore[call-arg]
    client.run_claude("a", "claude-x", claude, shard_size="10")  # type: ignore[arg-type]
    client.plan_claude("a", "claude-x", claude, max_attempts=2)  # type: ignore[call-arg]
    await client.aio.submit_claude("a", "claude-x", claude, dedupe="yes")  # type: ignore[arg-type]


def progress(client: vb.Client, job: vb.Job) -> int:
    """``progress=`` on a submit, a plan, a run and results: a callable taking a Progress."""
    seen: list[vb.Progress] = []

    def show(p: vb.Progress) -> None:
        known: int | None = p.total_rows
        size: int | None = p.bytes
        if p.done or known or size:
            seen.append(p)

    requests = [vb.ClaudeRequest("a", {"max_tokens": 8, "messages": []})]
    client.submit_claude("p-1", "claude-opus-5-5@default", requests, progress=show)
    client.plan_claude("p-1", "claude-opus-5-5@default", requests, progress=seen.append)
    run = client.run_claude("p-run", "claude-opus-5-5@default", requests, progress=None)
    rows = sum(1 for _ in client.results(job, progress=show))
    return rows + sum(1 for _ in run.results(progress=lambda p: print(p.rows, p.elapsed)))


def task_files(client: vb.Client) -> int:
    """A task's share of a GCS prefix's request files, streamed into a tasked run."""
    task: vb.Task | None = vb.Task.from_env()
    files: vb.RequestFiles = vb.list_request_files(client, "gs://bucket/in/").share(task)
    first: vb.RequestFile = next(iter(files))
    sizes: int = first.size + files.size + len(files)
    claude: Iterator[vb.ClaudeRequest] = files.claude_requests()
    gemini: Iterator[vb.GeminiRequest] = files.gemini_requests()
    client.run_claude("r", "claude-x", claude, task=task)
    client.run_gemini("g", "gemini-x", gemini, task=task)
    vb.list_request_files("gs://bucket/in/", client)  # type: ignore[arg-type]
    return sizes


async def typed_results(client: vb.Client, job: vb.Job, run: vb.Run) -> list[str]:
    """``schema=`` on the results readers: a pydantic class, or a JSON schema (a dict)."""
    import pydantic

    class Verdict(pydantic.BaseModel):
        approve: bool

    seen = [str(r.parsed) for r in client.results(job, schema=Verdict)]
    seen += [str(r.parsed) for r in client.results(job, schema={"type": "object"})]
    seen += [str(r.parsed) for r in run.results(task=vb.Task(0, 2), schema=Verdict)]
    seen += [str(k.result.parsed) for k in run.key_results(schema=Verdict)]
    seen += [str(r.parsed) async for r in client.aio.results(job, schema=Verdict)]
    aio_run = await client.aio.open_run(run.id)
    seen += [str(r.parsed) async for r in aio_run.results(schema=Verdict)]
    seen += [str(k.result.parsed) async for k in aio_run.key_results(schema=Verdict)]
    client.results(job, schema=Verdict(approve=True))  # type: ignore[arg-type]
    return seen


def next_turn(client: vb.Client, job: vb.Job, history: list[dict[str, Any]]) -> vb.ClaudeRequest:
    """A conversation's next request, built from a result: its turn and its tools' results."""
    result: vb.Result = next(iter(client.results(job)))
    signatures: list[str | None] = [call.signature for call in result.tool_calls]
    turn: dict[str, Any] = result.assistant_turn()
    answered: dict[str, Any] = result.tool_results([{"n": len(signatures)}])
    return vb.ClaudeRequest(result.key, {"max_tokens": 64, "messages": [*history, turn, answered]})
