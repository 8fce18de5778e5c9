"""Your code: review diffs as one Claude batch, and send what failed transiently once more."""

import vertexbatch as vb

MODEL = "claude-sonnet-4-5"
RESUBMIT = {"retryable", "missing"}


def review(
    client: vb.Client,
    batch_id: str,
    diffs: dict[str, str],
    *,
    floor: float = 30.0,
    timeout: float | None = None,
) -> dict[str, str]:
    """Review each diff under its key; return each key's outcome after at most one resubmit."""
    requests = [
        vb.ClaudeRequest(
            key, {"max_tokens": 1024, "messages": [{"role": "user", "content": f"Review: {diff}"}]}
        )
        for key, diff in diffs.items()
    ]
    job = client.submit_claude(batch_id, MODEL, requests)
    outcomes: dict[str, str] = {}
    for attempt in range(2):
        client.wait(job, floor=floor, timeout=timeout)
        outcomes.update((result.key, result.outcome) for result in client.results(job))
        again = [key for key, outcome in outcomes.items() if outcome in RESUBMIT]
        if not again or attempt == 1:
            break
        job = client.resubmit(job, keys=again)  # under the derived id BATCH_ID.r1
    return outcomes


def review_from_env(batch_id: str, diffs: dict[str, str], *, floor: float = 30.0) -> dict[str, str]:
    """The same from a Cloud Run job or a Cloud Function, configured by its environment."""
    return review(vb.Client.from_env(), batch_id, diffs, floor=floor)
