"""A progress callback on a submit and on a results pass: counts and sizes, never content."""

import vertexbatch as vb

client = vb.Client.from_env()
params = {"max_tokens": 64, "messages": [{"role": "user", "content": "Summarise the report."}]}
requests = [vb.ClaudeRequest(f"doc-{i}", params) for i in range(1000)]


def show(progress: vb.Progress) -> None:
    if progress.done:  # the last call: the call's work has finished
        total = progress.total_rows or "?"
        print(f"{progress.phase}: {progress.rows} of {total} in {progress.elapsed:.1f}s")


job = client.submit_claude("progress-1", "claude-sonnet-4-5", requests, progress=show)
client.wait(job, floor=1)
results = list(client.results(job, progress=show))
client.close()
