"""Open models (Llama, Qwen, DeepSeek, gpt-oss) in batch: OpenAI chat-completions bodies in,
one Result per key out, with the same outcomes as the Claude and Gemini lanes."""

import pydantic

import vertexbatch as vb


class Capital(pydantic.BaseModel):
    """The answer each request is held to (schema=: OpenAI's response_format)."""

    country: str
    capital: str


client = vb.Client.from_env()
model = "meta/llama-3.3-70b-instruct-maas"  # PUBLISHER/MODEL, as Vertex names it
requests = [
    vb.ChatRequest(
        country,
        {
            "messages": [
                {"role": "system", "content": "Answer in JSON."},
                {"role": "user", "content": f"What is the capital of {country}?"},
            ],
            "max_tokens": 200,
        },
    )
    for country in ("France", "Japan", "Kenya")
]
print(client.plan_chat("capitals-1", model, requests, schema=Capital).to_send, "lines to send")
job = client.submit_chat("capitals-1", model, requests, schema=Capital)
client.wait(job, floor=1)

for result in client.results(job, schema=Capital):
    if result.ok:
        print(f"{result.key}: {type(result.parsed).__name__}, {result.usage.output} tokens out")
    else:
        print(f"{result.key}: {result.outcome}")  # refused, truncated, retryable, failed, missing
