"""``vertexbatch demo``: a Claude and a Gemini batch on the local stack, run twice.

The first run submits a code-review batch to Claude and a ticket-triage batch to Gemini, shows
their progress, then what happened to every request. The second run submits the same rows under
the same ids, as a retried Cloud Run task would, and shows the jobs being adopted, not created.
Last, a *run* of Claude requests over three shards is advanced step by step, as a scheduler
would, until every key has its final outcome.

Some prompts carry ``[[vb:...]]`` directives: they script the local model's outcome (a refusal,
a truncation, a per-line error, a dropped line), as docs/local-stack.md describes.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from google.genai import types as genai_types

from ._client import Client
from ._models import ClaudeRequest, GeminiRequest, Job, Result, Status, Usage
from ._runs import Run, RunSummary

__all__ = ["DemoSummary", "JobReport", "claude_requests", "gemini_requests", "run_demo"]

CLAUDE_MODEL = "claude-opus-5-5@default"
GEMINI_MODEL = "gemini-3.8-flash"
REVIEW_ID = "demo-code-review"
TRIAGE_ID = "demo-ticket-triage"
RUN_ID = "demo-nightly-review"
RUN_REQUESTS = 20
RUN_SHARD_SIZE = 8
RUN_ATTEMPTS = 2
BUCKET = "vertexbatch-demo"
PREFIX = "demo"
OUTCOMES = ("ok", "refused", "truncated", "retryable", "failed", "missing")

_REVIEW_SYSTEM = (
    "You review pull requests for a payments company. Answer with a verdict (approve or "
    "request-changes) and at most three short comments, most important first. "
    "[[vb:cached 1536]]"
)

# (path, diff lines) of the pull requests under review.
_CHANGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "billing/invoice.py",
        (
            "-    return sum(i.price for i in items)",
            "+    return round(sum(i.price * i.qty for i in items), 2)",
        ),
    ),
    (
        "billing/refund.py",
        (
            "+    if amount > charge.amount:",
            "+        amount = charge.amount",
        ),
    ),
    (
        "api/auth.py",
        (
            "-    if token == expected:",
            "+    if hmac.compare_digest(token, expected):",
        ),
    ),
    (
        "api/rate_limit.py",
        ("+    bucket = self.buckets.setdefault(user_id, TokenBucket(rate=10))",),
    ),
    (
        "workers/retry.py",
        (
            "-    time.sleep(2 ** attempt)",
            "+    time.sleep(min(2 ** attempt, 60) + random.random())",
        ),
    ),
    (
        "db/migrations/0042_add_index.sql",
        ("+CREATE INDEX CONCURRENTLY idx_payments_user ON payments(user_id);",),
    ),
    (
        "web/checkout.ts",
        (
            "-  const total = cart.items.reduce((a, i) => a + i.price, 0)",
            "+  const total = cart.total()",
        ),
    ),
    (
        "ledger/balance.py",
        (
            "+    with self.lock:",
            "+        self.balance += delta",
        ),
    ),
    ("api/webhooks.py", ("+    signature = request.headers.get('Stripe-Signature')",)),
    (
        "reports/export.py",
        (
            "-    rows = list(query)",
            "+    rows = query.yield_per(1000)",
        ),
    ),
    (
        "auth/session.go",
        (
            "+\tcookie.Secure = true",
            "+\tcookie.SameSite = http.SameSiteStrictMode",
        ),
    ),
    ("infra/terraform/bucket.tf", ("+  uniform_bucket_level_access = true",)),
    (
        "fraud/score.py",
        (
            "-    return model.predict(features)",
            "+    return model.predict_proba(features)[:, 1]",
        ),
    ),
    ("notifications/email.py", ("+    msg['Reply-To'] = settings.SUPPORT_EMAIL",)),
    (
        "billing/currency.py",
        (
            "-    return amount * rate",
            "+    return (Decimal(amount) * rate).quantize(CENT)",
        ),
    ),
    ("api/pagination.py", ("+    limit = min(int(request.args.get('limit', 50)), 500)",)),
)

# Which requests get a scripted outcome (index -> directive).
_REVIEW_SCRIPT = {
    3: "[[vb:refuse category=cyber detail=credential_harvesting]]",
    11: "[[vb:refuse]]",
    5: "[[vb:truncate]]",
    17: "[[vb:truncate]]",
    8: "[[vb:error 429]]",
    20: "[[vb:error 529]]",
    14: "[[vb:error 400]]",
    26: "[[vb:drop]]",
}

# The run's scripted outcomes: one retryable error or dropped line in each shard of 8. The
# local model is deterministic, so these fail on every attempt and end exhausted.
_RUN_SCRIPT = {
    2: "[[vb:error 503]]",
    6: "[[vb:drop]]",
    13: "[[vb:error 503]]",
    18: "[[vb:drop]]",
}
# The run's outcome columns, in the order the demo reports them.
_RUN_OUTCOMES = ("ok", "refused", "truncated", "failed", "exhausted")

_TICKETS = (
    "I was charged twice for my March invoice, please refund one of them.",
    "The export to CSV button does nothing on Safari 18.",
    "Can you add SSO with Okta for our team of 40?",
    "I can't log in since I changed my phone, 2FA codes are rejected.",
    "Your API returns 500 on POST /v2/payments since this morning.",
    "Please close my account and delete my data.",
    "The dashboard shows last month's numbers in the wrong currency.",
    "Is there a way to schedule reports weekly instead of daily?",
    "Our webhook endpoint receives every event three times.",
    "I need an invoice with our VAT number for accounting.",
    "The mobile app crashes when I open the statements tab.",
    "We'd like a sandbox environment for testing integrations.",
    "Password reset emails never arrive at our company domain.",
    "Chargeback notification came in but the dispute page is empty.",
    "Please raise our API rate limit, we hit 429 at peak hours.",
)

_TRIAGE_SCRIPT = {
    4: "[[vb:refuse block=PROHIBITED_CONTENT]]",
    9: "[[vb:finish SAFETY]]",
    13: "[[vb:truncate]]",
    7: "[[vb:error 503]]",
    19: "[[vb:error 429]]",
    23: "[[vb:error 400]]",
    16: "[[vb:drop]]",
    27: "[[vb:drop]]",
}

_TRIAGE_CONFIG = genai_types.GenerateContentConfig(
    system_instruction=(
        "Triage the support ticket. Reply with JSON: category (billing, bug, feature, account), "
        "urgency (P1, P2, P3) and a one-sentence summary."
    ),
    temperature=0.0,
    max_output_tokens=256,
    response_mime_type="application/json",
)


def claude_requests(
    count: int = 32, *, first_pr: int = 1400, script: Mapping[int, str] = _REVIEW_SCRIPT
) -> list[ClaudeRequest]:
    """The demo's code-review requests: the same rows on every call.

    ``script`` maps a request's index to the directive that scripts its outcome.
    """
    requests = []
    for i in range(count):
        path, diff = _CHANGES[i % len(_CHANGES)]
        pr = first_pr + i
        body = "\n".join(diff)
        prompt = f"PR #{pr} changes {path}:\n```diff\n{body}\n```\n{script.get(i, '')}"
        requests.append(
            ClaudeRequest(
                f"pr-{pr}/{path}",
                {
                    "max_tokens": 512,
                    "system": _REVIEW_SYSTEM,
                    "messages": [{"role": "user", "content": prompt.strip()}],
                },
            )
        )
    return requests


def gemini_requests(count: int = 30) -> list[GeminiRequest]:
    """The demo's ticket-triage requests: the same rows on every call."""
    requests = []
    for i in range(count):
        ticket = 48200 + i
        text = f"Ticket {ticket}: {_TICKETS[i % len(_TICKETS)]} {_TRIAGE_SCRIPT.get(i, '')}"
        requests.append(
            GeminiRequest(
                f"ticket-{ticket}",
                [{"role": "user", "parts": [{"text": text.strip()}]}],
                _TRIAGE_CONFIG,
            )
        )
    return requests


@dataclass
class JobReport:
    """What the demo saw of one job."""

    job: Job
    status: Status
    outcomes: Counter[str] = field(default_factory=Counter)
    tokens: Usage = field(default_factory=Usage)
    keys: dict[str, list[str]] = field(default_factory=dict)  # outcome -> keys


@dataclass
class DemoSummary:
    """What the demo did, for tests: the reports of the first run and the second run's jobs,
    and the run's final summary."""

    reports: list[JobReport]
    second_run: list[Job]
    creates_first: int
    creates_second: int
    jobs_per_id: dict[str, int]
    run: RunSummary | None = None


def run_demo(*, out: TextIO, fast: bool = False, tty: bool = False) -> DemoSummary:
    """Run the demo, writing plain text to ``out``; ``fast`` turns the simulated latency off."""
    from .emulator import LocalStack, Timing

    timing = Timing() if fast else Timing(pending_seconds=1.5, row_seconds=0.2, incremental_every=8)

    def say(line: str = "") -> None:
        out.write(line + "\n")
        out.flush()

    say("vertexbatch demo: a local Vertex AI batch-prediction service on a real GCS server")
    say("(nothing here talks to Google Cloud; the same calls run against it unchanged)")
    started = time.monotonic()
    with LocalStack(timing=timing) as stack:
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
        second, creates_second = _submit_all(stack, batches, say, first=jobs)
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
        run_summary = _run_section(stack, client, say, interval=0.05 if fast else 1.0)

    say()
    say(f"Done in {time.monotonic() - started:.0f}s. Next:")
    say("  vertexbatch emulator                 run this local stack and print its environment")
    say("  vertexbatch submit --provider claude --model claude-opus-5-5@default --id my-batch-1 \\")
    say('      requests.jsonl                   one {"key": ..., "params": {...}} per line')
    say("  vertexbatch watch my-batch-1 && vertexbatch results my-batch-1 --only retryable")
    say("  vertexbatch run submit --provider claude --model claude-opus-5-5@default \\")
    say("      --id my-run-1 requests.jsonl     the same lines, sharded and retried as a run")
    say("  vertexbatch run advance my-run-1     every few minutes until it exits 0, then")
    say("  vertexbatch run results my-run-1     one line per key across shards and attempts")
    say("  docs/quickstart.md, concepts.md, runs.md and operations.md for real Google Cloud")
    return DemoSummary(reports, second, creates_first, creates_second, jobs_per_id, run=run_summary)


def _submit_all(
    stack: Any,
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
    stack: Any, client: Client, say: Callable[[str], None], *, interval: float
) -> RunSummary:
    """Start the demo's run, advance it until done, and show its steps and final outcomes."""
    before = stack.calls()["create"]
    requests = claude_requests(RUN_REQUESTS, first_pr=1500, script=_RUN_SCRIPT)
    run = client.run_claude(
        RUN_ID, CLAUDE_MODEL, requests, shard_size=RUN_SHARD_SIZE, max_attempts=RUN_ATTEMPTS
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
        # One line per step that changed something: waiting steps repeat the line before.
        if line != last:
            say(f"   step {step:>2} {time.monotonic() - start:>3.0f}s  {line}")
            last = line
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
    exhausted = [
        _describe(result) for result in run.results() if result.outcome in ("retryable", "missing")
    ]
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


def _bar(done: int, total: int, width: int = 10) -> str:
    filled = 0 if total <= 0 else min(width, width * done // total)
    return "[" + "#" * filled + "." * (width - filled) + "]"


def _wait(
    client: Client, jobs: Sequence[Job], out: TextIO, *, tty: bool, interval: float
) -> dict[str, Status]:
    """Poll until every job is terminal, showing progress; return the last statuses."""
    start = time.monotonic()
    last_line = ""
    last_print = -1.0
    while True:
        statuses = {job.id: client.status(job) for job in jobs}
        parts = []
        for job in jobs:
            st = statuses[job.id]
            done = max(st.succeeded, 0) + max(st.failed, 0)
            state = st.state.removeprefix("JOB_STATE_")
            label = "claude" if job.provider == "anthropic" else "gemini"
            parts.append(f"{label} {_bar(done, job.keys)} {done:>2}/{job.keys} {state:<9}")
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
    """A key and, for an error, what kind of error (never the content)."""
    error = result.error
    code = getattr(error, "code", 0)
    if result.outcome in ("retryable", "failed") and code:
        return f"{result.key} ({code} {getattr(error, 'status', '')})"
    if result.refusal is not None:
        return f"{result.key} ({result.refusal.category})"
    if result.outcome == "missing":
        return f"{result.key} (no output line)"
    return result.key


def _print_outcomes(reports: Sequence[JobReport], say: Callable[[str], None]) -> None:
    header = f"   {'job':<20} {'state':<10}" + "".join(f"{o:>10}" for o in OUTCOMES)
    say(header + f"{'total':>8}")
    for r in reports:
        cells = "".join(f"{r.outcomes[o]:>10}" for o in OUTCOMES)
        state = r.status.state.removeprefix("JOB_STATE_")
        say(f"   {r.job.id:<20} {state:<10}{cells}{sum(r.outcomes.values()):>8}")
    say("")
    say(f"   {'tokens':<20} {'input':>10}{'output':>10}{'cache read':>12}{'cache write':>12}")
    for r in reports:
        t = r.tokens
        say(f"   {r.job.id:<20} {t.input:>10}{t.output:>10}{t.cache_read:>12}{t.cache_write:>12}")
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
        say(f"   {r.job.id}: resubmit {len(resubmit)} under a new id such as {r.job.id}.r1:")
        for key in resubmit:
            say(f"     {key}")
        inspect = sorted(r.keys.get("refused", [])) + sorted(r.keys.get("failed", []))
        say(f"   {r.job.id}: inspect {len(inspect)} (refused or failed):")
        for key in inspect:
            say(f"     {key}")
