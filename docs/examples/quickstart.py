"""Submit two requests to Claude, wait for the job, and print what became of each key.

`Client.from_env()` reads GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION and VERTEXBATCH_BUCKET:
your project, or the local stack once you export what `vertexbatch emulator` prints.
"""

import vertexbatch as vb

with vb.Client.from_env() as client:  # closed at the end of the block
    prompts = {
        "skill-a": "Review this diff: - retries = 3  + retries = 30",
        "skill-b": "Name one risk of retrying a create call that is not idempotent.",
    }
    requests = [
        vb.ClaudeRequest(key, {"max_tokens": 1024, "messages": [{"role": "user", "content": text}]})
        for key, text in prompts.items()
    ]
    # Your id: submitting it again adopts this job instead of making another.
    job = client.submit_claude("review-0a1b2c", "claude-sonnet-4-5", requests)
    # Poll with backoff until the job is terminal. A short floor for the local stack, which
    # answers in seconds; a Vertex job takes minutes to hours, and the pauses grow to 5 minutes.
    status = client.wait(job, floor=1)
    print(job.id, status.state)
    for r in client.results(job):  # streamed; keys with no output line come last, as missing
        if r.ok:
            print(r.key, r.outcome, r.text, r.usage)
        elif vb.is_retryable(r.error):
            print(r.key, "retry it:", type(r.error).__name__)
        else:
            print(r.key, r.outcome)
