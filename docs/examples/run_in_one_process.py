"""Start a run, advance it until every key has its final outcome, and print each key's.

Every step could as well be taken by another process (a scheduled function, a shell running
`vertexbatch run advance`): the run's state is in GCS, and the run id is all a step needs.
"""

import time

import vertexbatch as vb

MODEL = "claude-sonnet-4-5"
questions = ["What is idempotence?", "Why shard a batch?", "What is a ledger?"] * 2
requests = [
    vb.ClaudeRequest(f"q{i}", {"max_tokens": 256, "messages": [{"role": "user", "content": q}]})
    for i, q in enumerate(questions)
]

with vb.Client.from_env() as client:
    # Calling this again with the same id and requests rejoins the run instead of starting another.
    run = client.run_claude("faq-1", MODEL, requests, shard_size=4, max_attempts=3)
    pause = 1.0
    while not (summary := run.advance()).done:
        print(dict(summary.outcomes), "live jobs:", summary.live_jobs)
        time.sleep(pause)
        pause = min(pause * 2, 600)  # on Vertex, a step every few minutes is plenty

    # Elsewhere: vb.Client.from_env().open_run("faq-1") opens the same run from its id.
    for result in run.results():
        print(result.key, result.outcome)
