"""Plan a nightly evaluation, submit it with dedupe and the answer cache, then the next night.

`Client.from_env()` reads GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION and VERTEXBATCH_BUCKET
(or the local stack's environment, as `vertexbatch emulator` prints it).
"""

import vertexbatch as vb

with vb.Client.from_env() as client:
    MODEL = "claude-sonnet-4-5"

    def ask(key: str, prompt: str) -> vb.ClaudeRequest:
        return vb.ClaudeRequest(
            key, {"max_tokens": 256, "messages": [{"role": "user", "content": prompt}]}
        )

    night_1 = [
        ask("suite-a/q0", "Is xs[0] safe on an empty list?"),
        ask("suite-a/q1", "Is ' OR 1=1 -- an SQL injection?"),
        ask("suite-b/q0", "Is xs[0] safe on an empty list?"),  # the same request: sent once
    ]
    # The next night resends yesterday's prompts and adds one.
    night_2 = [*night_1, ask("suite-b/q1", "Is token == expected a constant-time comparison?")]

    for submission_id, batch in [("eval-night-1", night_1), ("eval-night-2", night_2)]:
        # A plan stages nothing: what would be sent, and what it may cost at batch prices.
        plan = client.plan_claude(submission_id, MODEL, batch, dedupe=True, cache=True)
        print(f"{submission_id}: {plan.requests} requests, {plan.distinct} distinct, "
              f"{plan.cached} cached, {plan.to_send} to send, {plan.jobs} job(s)")  # fmt: skip
        job = client.submit_claude(submission_id, MODEL, batch, dedupe=True, cache=True)
        client.wait(job, floor=1)
        for r in client.results(job):  # read to the end: the ok answers fill the cache
            print(r.key, r.outcome, "cached" if r.cached else "shared" if r.shared else "paid")
