"""The demo's last section: pay once per distinct request (dedupe, the answer cache, a plan).

A nightly evaluation is planned, then submitted with ``dedupe=True`` and ``cache=True``; the
next night's set (yesterday's prompts, a few repeated, a few new) is planned again — the plan
says how much the cache will answer — and submitted: only the new prompts go to Vertex.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .._client import Client
from .._plans.estimate import Plan
from .._values import ClaudeRequest
from .demo_data import CLAUDE_MODEL

__all__ = ["EVAL_IDS", "cache_section", "eval_requests"]

EVAL_IDS = ("demo-eval-night-1", "demo-eval-night-2")
_PROMPTS = (
    "Does this function handle an empty list? def head(xs): return xs[0]",
    "Is this SQL injectable? cursor.execute('SELECT * FROM t WHERE id=' + user_id)",
    "Name the race in: if not os.path.exists(p): open(p, 'w').write(data)",
    "Is this retry loop bounded? while True: try: call(); break\nexcept Exception: pass",
    "What does this regex match? ^[a-z0-9][a-z0-9._-]{0,62}$",
    "Is this comparison safe for secrets? if token == expected: grant()",
)


def eval_requests(night: int) -> list[ClaudeRequest]:
    """Night 1: six prompts, two of them sent twice (keys of two suites). Night 2: the same,
    plus two new prompts."""
    prompts = [*_PROMPTS[:4], _PROMPTS[0], _PROMPTS[1]]
    if night == 2:
        prompts += [_PROMPTS[4], _PROMPTS[5]]
    return [
        ClaudeRequest(
            f"eval-{i:02d}",
            {
                "max_tokens": 256,
                "system": "You are a careful code reviewer. Answer in one sentence.",
                "messages": [{"role": "user", "content": prompt}],
            },
        )
        for i, prompt in enumerate(prompts)
    ]


def _plan_line(plan: Plan) -> str:
    cost = (
        "cost unknown"
        if plan.cost_high is None or plan.cost_low is None
        else f"${plan.cost_low:.4f} to ${plan.cost_high:.4f} at batch prices"
    )
    return (
        f"plan: {plan.requests} requests, {plan.distinct} distinct, {plan.cached} cached, "
        f"{plan.to_send} to send in {plan.jobs} job(s), ~{plan.input_tokens} input tokens, {cost}"
    )


def cache_section(client: Client, say: Callable[[str], None], *, interval: float) -> None:
    """Plan and submit two nights of an evaluation; the second is answered mostly from cache."""
    for night, submission_id in enumerate(EVAL_IDS, start=1):
        requests = eval_requests(night)
        plan = client.plan_claude(
            submission_id, CLAUDE_MODEL, requests, dedupe=True, cache=True, count_tokens=True
        )
        say(f"   night {night}: {_plan_line(plan)}")
        job = client.submit_claude(submission_id, CLAUDE_MODEL, requests, dedupe=True, cache=True)
        while not client.status(job).terminal:
            time.sleep(interval)
        results = list(client.results(job))  # read to the end: the ok answers fill the cache
        cached = sum(r.cached for r in results)
        shared = sum(r.shared for r in results)
        paid = sum(r.usage.input for r in results if not (r.cached or r.shared))
        sent = "no job (answered from the cache)" if job.name.startswith("cached:") else job.name
        say(f"   {submission_id:<20} {sent}")
        say(
            f"   {'':<20} {len(results)} results: {cached} from the cache, {shared} shared with "
            f"an equal request, {len(results) - cached - shared} answered by this job "
            f"({paid} input tokens paid; the plan said {plan.input_tokens})"
        )
