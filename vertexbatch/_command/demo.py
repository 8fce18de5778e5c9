"""``vertexbatch demo``: a Claude and a Gemini batch on the local stack, run twice.

The first run submits a code-review batch to Claude and a ticket-triage batch to Gemini, shows
their progress, then what happened to every request. The second run submits the same rows under
the same ids, as a retried Cloud Run task would, and shows the jobs being adopted, not created.
Then a *run* of Claude requests over three shards is advanced step by step, as a scheduler
would, until every key has its final outcome. Last, two nights of an evaluation are planned and
submitted with dedupe and the answer cache (``_demo_cache``). With ``bigquery=True`` a table of
requests goes in and a dataset takes the answers (``_demo_bigquery``).

The requests, their scripted outcomes and the ids are in ``_demo_data``; this module narrates.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from .._client import Client
from .._errors import ExhaustedError, LineError, MissingError
from .._providers import PROVIDERS
from .._runs.run import Run
from .._runs.step import RunSummary
from .._values import Job, Result, Status, Usage
from .cli_progress import key_counts
from .cli_render import OUTCOMES, progress_bar
from .demo_bigquery import bigquery_section
from .demo_cache import cache_section
from .demo_data import (
    BUCKET,
    CLAUDE_MODEL,
    GEMINI_MODEL,
    PREFIX,
    REVIEW_ID,
    RUN_ATTEMPTS,
    RUN_ID,
    RUN_REQUESTS,
    RUN_SHARD_SIZE,
    TRIAGE_ID,
    claude_requests,
    gemini_requests,
    run_requests,
)
from .demo_embeddings import embeddings_section

if TYPE_CHECKING:
    from ..emulator import LocalStack

__all__ = ["run_demo"]

# The run's outcome columns, in the order the demo reports them.
_RUN_OUTCOMES = ("ok", "refused", "truncated", "failed", "exhausted")


@dataclass
class JobReport:
    """What the demo saw of one job."""

    job: Job
    status: Status
    outcomes: Counter[str] = field(default_factory=Counter)
    tokens: Usage = field(default_factory=Usage)
    keys: dict[str, list[str]] = field(default_factory=dict)  # outcome -> keys


def run_demo(
    *,
    out: TextIO,
    fast: bool = False,
    tty: bool = False,
    command: str = "vertexbatch",
    bigquery: bool = False,
) -> None:
    """Run the demo, writing plain text to ``out``; ``fast`` turns the simulated latency off.

    ``command`` is how the user's shell runs ``vertexbatch`` (``.venv/bin/vertexbatch`` when it
    is not on PATH): the closing "Next" lines print it so, to work as written.
    """
    from ..emulator import LocalStack, Timing

    timing = Timing() if fast else Timing(pending_seconds=1.5, row_seconds=0.2, incremental_every=8)

    def say(line: str = "") -> None:
        out.write(line + "\n")
        out.flush()

    say("vertexbatch demo: a local Vertex AI batch-prediction service on a real GCS server")
    say("(nothing here talks to Google Cloud; the same calls run against it unchanged)")
    started = time.monotonic()
    with LocalStack(timing=timing, bigquery=bigquery) as stack:
        client = stack.client(bucket=BUCKET, prefix=PREFIX)
        batches: list[tuple[str, str, Callable[[], Job]]] = [
            (
                REVIEW_ID,
                f"Claude {CLAUDE_MODEL}, code review",
                lambda: client.submit_claude(REVIEW_ID, CLAUDE_MODEL, claude_requests()),
            ),
            (
                TRIAGE_ID,
                f"Gemini {GEMINI_MODEL}, ticket triage",
                lambda: client.submit_gemini(TRIAGE_ID, GEMINI_MODEL, gemini_requests()),
            ),
        ]

        say()
        say("1. Submit two batches, each under a submission id of our choosing")
        jobs, creates_first = _submit_all(stack, batches, say)

        say()
        say("2. Wait for both jobs (polling their status, as `vertexbatch watch` does)")
        statuses = _wait(client, jobs, out, tty=tty, interval=0.05 if fast else 0.5)

        reports = [_report(client, job, statuses[job.id]) for job in jobs]
        say()
        say("3. What happened to every request (`vertexbatch results ID`)")
        _print_outcomes(reports, say)

        say()
        say("4. Submit the same rows under the same ids again: what a retried Cloud Run task,")
        say("   a lost response or a crashed submitter does. The jobs are adopted, not created.")
        _, creates_second = _submit_all(stack, batches, say, first=jobs)
        per_id = Counter(j.get("displayName", "") for j in stack.jobs())
        jobs_per_id = {job.id: per_id[job.id] for job in jobs}
        say(
            f"   create calls to Vertex: {creates_first} in the first run, "
            f"{creates_second} in the second"
        )
        say("   jobs Vertex holds per id: " + ", ".join(f"{k} {v}" for k, v in jobs_per_id.items()))

        say()
        say(
            f"5. A run: {RUN_REQUESTS} more reviews in shards of {RUN_SHARD_SIZE}, each key tried "
            f"at most {RUN_ATTEMPTS} times,"
        )
        say("   advanced one step at a time as a scheduler would (`vertexbatch run advance ID`)")
        _run_section(stack, client, say, interval=0.05 if fast else 1.0)

        say()
        say("6. Pay once per distinct request: a nightly evaluation planned, then submitted with")
        say("   dedupe=True and cache=True; the next night resends yesterday's prompts")
        cache_section(client, say, interval=0.05 if fast else 0.5)

        say()
        say("7. Embeddings: a corpus embedded in one batch, each vector read back by its key")
        embeddings_section(client, say, interval=0.05 if fast else 0.5)

        if bigquery:
            say()
            say("8. BigQuery: a table of requests submitted under an id, the answers to a dataset")
            bigquery_section(stack, client, say, _describe, interval=0.05 if fast else 0.5)

    say()
    say(f"Done in {time.monotonic() - started:.0f}s.")
    for line in next_steps(command):
        say(line)


# The two requests the "Next" lines write: an answer, and a line Vertex fails with a 429.
_NEXT_REQUESTS = (
    '{"key": "a", "params": {"max_tokens": 64, "messages": [{"role": "user", '
    '"content": "Review this diff."}]}}',
    '{"key": "b", "params": {"max_tokens": 64, "messages": [{"role": "user", '
    '"content": "x [[vb:error 429]]"}]}}',
)


def next_steps(command: str) -> list[str]:
    """The demo's closing lines: what to run next, each command indented four spaces and
    runnable as printed, in a shell in the directory the demo ran in (a test runs them so)."""
    model = CLAUDE_MODEL
    return [
        "Next, the command on a local stack of your own, in this directory.",
        "  In a second terminal, start the stack (it serves until Ctrl-C):",
        f"    {command} emulator --env-file local.env",
        "  Then here: point the command at it, write two requests, submit them, read the results:",
        "    . ./local.env",
        f"    echo '{_NEXT_REQUESTS[0]}' > requests.jsonl",
        f"    echo '{_NEXT_REQUESTS[1]}' >> requests.jsonl",
        f"    {command} submit --provider claude --model {model} --id my-batch-1 requests.jsonl",
        f"    {command} watch my-batch-1 --floor 1",
        f"    {command} results my-batch-1 --only retryable",
        "  Resubmit its retryable and missing keys (here b) under my-batch-1.r1, read its results:",
        f"    {command} resubmit my-batch-1",
        f"    {command} watch my-batch-1.r1 --floor 1",
        f"    {command} results my-batch-1.r1",
        "  The same lines as a run, sharded and retried (advance: exit 10 until it is done, so",
        "  a scheduler runs it every few minutes):",
        f"    {command} run submit --provider claude --model {model} --id my-run-1 requests.jsonl",
        f"    {command} run advance my-run-1",
        f"    {command} run results my-run-1",
        "  For real Google Cloud: docs/quickstart.md, concepts.md, runs.md and operations.md.",
    ]


def _submit_all(
    stack: LocalStack,
    batches: Sequence[tuple[str, str, Callable[[], Job]]],
    say: Callable[[str], None],
    first: Sequence[Job] = (),
) -> tuple[list[Job], int]:
    jobs = []
    creates_total = 0
    for index, (submission_id, what, submit) in enumerate(batches):
        before = stack.calls()["create"]
        job = submit()
        creates = stack.calls()["create"] - before
        creates_total += creates
        verb = "created" if creates else "adopted"
        say(f"   {submission_id:<20} {job.keys} requests, {what}")
        say(f"   {'':<20} {verb} {job.name}")
        if first:
            same = "the same job as the first run" if job == first[index] else "A DIFFERENT JOB"
            say(f"   {'':<20} {same}")
        jobs.append(job)
    return jobs, creates_total


def _run_section(
    stack: LocalStack, client: Client, say: Callable[[str], None], *, interval: float
) -> RunSummary:
    """Start the demo's run, advance it until done, and show its steps and final outcomes."""
    before = stack.calls()["create"]
    run = client.run_claude(
        RUN_ID, CLAUDE_MODEL, run_requests(), shard_size=RUN_SHARD_SIZE, max_attempts=RUN_ATTEMPTS
    )
    sizes = ", ".join(str(shard.keys) for shard in run.shards)
    say(f"   {RUN_ID:<20} {run.keys} requests in {len(run.shards)} shards ({sizes})")
    say(f"   {'':<20} {stack.calls()['create'] - before} jobs created by the first step")
    start = time.monotonic()
    last = ""
    step = 0
    while True:
        time.sleep(interval)
        step += 1
        summary = run.advance()
        state = "done        " if summary.done else f"live jobs {summary.live_jobs:<2}"
        counts = ", ".join(
            f"{name} {summary.outcomes[name]}"
            for name in (*_RUN_OUTCOMES, "pending")
            if summary.outcomes.get(name)
        )
        line = f"{state}  created {summary.created}  {counts}"
        if line == last:
            # Every step is shown: one that changed nothing says so instead of repeating.
            line = f"nothing to do: {summary.live_jobs} live job(s) still running"
        else:
            last = line
        say(f"   step {step:>2} {time.monotonic() - start:>3.0f}s  {line}")
        if summary.done:
            break
    say("")
    say(
        f"   {'run':<20} {'shards':>6}"
        + "".join(f"{o:>10}" for o in _RUN_OUTCOMES)
        + f"{'total':>8}"
    )
    cells = "".join(f"{summary.outcomes.get(o, 0):>10}" for o in _RUN_OUTCOMES)
    say(f"   {RUN_ID:<20} {len(run.shards):>6}{cells}{summary.keys:>8}")
    say("")
    say("   Jobs per shard (an attempt resubmits only the retryable and missing keys):")
    for shard, attempts in _attempt_jobs(client, run):
        tried = ", then ".join(
            f"{job.id.removeprefix(shard) or 'first'} {job.keys} key{'s' * (job.keys != 1)}"
            for job in attempts
        )
        say(f"     {shard:<24} {tried}")
    exhausted = [_describe(result) for result in run.results() if result.outcome == "exhausted"]
    say(
        f"   {len(exhausted)} keys ended exhausted (still retryable or missing after "
        f"{RUN_ATTEMPTS} attempts);"
    )
    say("   not lost: `vertexbatch run results` gives each its last result:")
    for key in exhausted:
        say(f"     {key}")
    return summary


def _attempt_jobs(client: Client, run: Run) -> list[tuple[str, list[Job]]]:
    """Each shard's id and the jobs of its attempts, in order."""
    found = []
    for shard in run.shards:
        jobs = []
        for attempt in range(run.max_attempts):
            job = client.find(shard.id if attempt == 0 else f"{shard.id}.r{attempt}")
            if job is None:
                break
            jobs.append(job)
        found.append((shard.id, jobs))
    return found


def _wait(
    client: Client, jobs: Sequence[Job], out: TextIO, *, tty: bool, interval: float
) -> dict[str, Status]:
    """Poll until every job is terminal, showing progress; return the last statuses."""
    start = time.monotonic()
    last_line = ""
    last_print = -1.0
    counts = {job.id: key_counts(client, job) for job in jobs}  # keys, not staged rows
    while True:
        statuses = {job.id: counts[job.id](client.status(job)) for job in jobs}
        parts = []
        for job in jobs:
            st = statuses[job.id]
            done = max(st.succeeded, 0) + max(st.failed, 0)
            label = PROVIDERS[job.provider].command
            parts.append(
                f"{label} {progress_bar(done, job.keys, width=10)} {done:>2}/{job.keys} "
                f"{st.state:<19}"  # the state as the command prints it: JOB_STATE_SUCCEEDED
            )
        elapsed = time.monotonic() - start
        line = "   " + " ".join(parts)
        finished = all(st.terminal for st in statuses.values())
        if tty:
            out.write(f"\r{line} {elapsed:3.0f}s")
            if finished:
                out.write("\n")
            out.flush()
        elif line != last_line and (finished or elapsed - last_print >= 1.0):
            out.write(f"{line} {elapsed:3.0f}s\n")
            out.flush()
            last_line, last_print = line, elapsed
        if finished:
            return statuses
        time.sleep(interval)


def _report(client: Client, job: Job, status: Status) -> JobReport:
    report = JobReport(job=job, status=status)
    tokens = [0, 0, 0, 0]
    for result in client.results(job):
        report.outcomes[result.outcome] += 1
        report.keys.setdefault(result.outcome, []).append(_describe(result))
        usage = result.usage
        for i, n in enumerate((usage.input, usage.output, usage.cache_read, usage.cache_write)):
            tokens[i] += n
    report.tokens = Usage(*tokens)
    return report


def _describe(result: Result) -> str:
    """A key and, for an error, what kind of error (never the content); an exhausted key's
    last error."""
    error = result.error.last if isinstance(result.error, ExhaustedError) else result.error
    code = getattr(error, "code", 0)
    if isinstance(error, LineError) and code:
        return f"{result.key} ({code} {error.status})"
    if result.refusal is not None:
        category = result.refusal.category
        return f"{result.key} ({_REFUSALS.get(category, f'refused: {category}')})"
    if isinstance(error, MissingError):
        return f"{result.key} (no output line)"
    return result.key


# What the refusal categories the demo provokes mean, in words.
_REFUSALS = {
    "cyber": "Claude's cyber-harm classifier declined it",
    "refusal": "Claude declined, giving no category",
    "PROHIBITED_CONTENT": "Gemini blocked the prompt as prohibited content",
    "SAFETY": "Gemini stopped the answer on a safety rating",
}


def _print_outcomes(reports: Sequence[JobReport], say: Callable[[str], None]) -> None:
    header = f"   {'job':<20} {'state':<20}" + "".join(f"{o:>10}" for o in OUTCOMES)
    say(header + f"{'total':>8}")
    for r in reports:
        cells = "".join(f"{r.outcomes[o]:>10}" for o in OUTCOMES)
        say(f"   {r.job.id:<20} {r.status.state:<20}{cells}{sum(r.outcomes.values()):>8}")
    say("")
    say(f"   {'tokens':<20} {'input':>10}{'output':>10}{'cache read':>12}")
    for r in reports:
        t = r.tokens
        say(f"   {r.job.id:<20} {t.input:>10}{t.output:>10}{t.cache_read:>12}")
    say("   (cache read: input tokens Claude read from its prompt cache — here the system prompt")
    say("   the review requests share — counted apart from input and billed at a lower rate)")
    say("")
    say("   What to do with each outcome:")
    say("     ok         use the answer")
    say("     truncated  partial text kept: accept it, or resubmit with a higher max_tokens")
    say("     refused    the model declined: inspect the prompt, do not resubmit as is")
    say("     failed     a permanent per-line error (e.g. 400): fix the request first")
    say("     retryable  a transient per-line error (429, 503, 529): resubmit")
    say("     missing    no output line once the job ended: resubmit")
    for r in reports:
        resubmit = sorted(r.keys.get("retryable", [])) + r.keys.get("missing", [])
        say("")
        say(
            f"   {r.job.id}: resubmit {len(resubmit)} under a new id such as {r.job.id}.r1 "
            f"(`vertexbatch resubmit {r.job.id}`):"
        )
        for key in resubmit:
            say(f"     {key}")
        truncated = sorted(r.keys.get("truncated", []))
        say(f"   {r.job.id}: accept or raise max_tokens for {len(truncated)} (truncated):")
        for key in truncated:
            say(f"     {key}")
        inspect = sorted(r.keys.get("refused", [])) + sorted(r.keys.get("failed", []))
        say(f"   {r.job.id}: inspect {len(inspect)} (refused or failed):")
        for key in inspect:
            say(f"     {key}")
