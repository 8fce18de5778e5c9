"""Typed results: the reader that holds the class reads instances of it; a reader that holds
only the Job reads JSON data; a schema other than the job's is refused before any result."""

import pydantic

import vertexbatch as vb


class Verdict(pydantic.BaseModel):
    """What a reviewer decides about one change."""

    approve: bool
    reason: str
    score: int = pydantic.Field(ge=1, le=5)


client = vb.Client.from_env()
requests = [
    vb.ClaudeRequest(
        f"change-{i}",
        {"max_tokens": 256, "messages": [{"role": "user", "content": f"Review change {i}."}]},
    )
    for i in range(3)
]
job = client.submit_claude("reviews-1", "claude-sonnet-4-5", requests, schema=Verdict)
client.wait(job, floor=1)

# The class the job was submitted with: each ok result's parsed is a Verdict.
for result in client.results(job, schema=Verdict):
    if result.ok:
        verdict: Verdict = result.parsed
        print(f"{result.key}: score {verdict.score}, approve {verdict.approve}")
    else:
        print(f"{result.key}: {result.outcome}")

# Only the Job (another process, a day later): JSON data, and parsed_as(Verdict) builds one.
stored = vb.Job.from_dict(job.to_dict())
first = next(iter(client.results(stored)))
print(type(first.parsed).__name__, type(first.parsed_as(Verdict)).__name__)


class Score(pydantic.BaseModel):
    score: int


# Another schema than the job's: refused as the pass begins, before any result is read.
try:
    next(iter(client.results(job, schema=Score)))
except vb.InvalidRequestError as error:
    print(f"refused ({error.field}): another schema than the job's")
client.close()
