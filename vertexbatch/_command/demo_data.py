"""The demo's scripted data: its ids and models, and the requests it submits.

Some prompts carry ``[[vb:...]]`` directives: they script the local model's outcome (a refusal,
a truncation, a per-line error, a dropped line), as docs/local-stack.md describes. The rows are
the same on every call, so a second submission under the same id adopts the first job.
"""

from __future__ import annotations

from collections.abc import Mapping

from google.genai import types as genai_types

from .._values import ClaudeRequest, GeminiRequest

__all__ = [
    "BUCKET",
    "CLAUDE_MODEL",
    "GEMINI_MODEL",
    "PREFIX",
    "REVIEW_ID",
    "RUN_ATTEMPTS",
    "RUN_ID",
    "RUN_REQUESTS",
    "RUN_SHARD_SIZE",
    "TRIAGE_ID",
    "claude_requests",
    "gemini_requests",
    "run_requests",
]

CLAUDE_MODEL = "claude-sonnet-4-5"
GEMINI_MODEL = "gemini-2.5-flash"
REVIEW_ID = "demo-code-review"
TRIAGE_ID = "demo-ticket-triage"
RUN_ID = "demo-nightly-review"
RUN_REQUESTS = 20
RUN_SHARD_SIZE = 8
RUN_ATTEMPTS = 2
# The demo's own bucket and prefix: the stack is its own, started and stopped by the demo.
BUCKET = "vertexbatch-demo"
PREFIX = "demo"

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


def run_requests() -> list[ClaudeRequest]:
    """The requests of the demo's run: more reviews, one scripted failure in each shard."""
    return claude_requests(RUN_REQUESTS, first_pr=1500, script=_RUN_SCRIPT)
