"""A canary before the big job (against `vertexbatch emulator`)."""

import warnings

import vertexbatch as vb

client = vb.Client.from_env()
model = "claude-opus-5-5@default"
prices = [vb.Price("claude-opus-5-5", input=5, output=25)]  # online list $ per million tokens
tool = {"name": "get weather", "input_schema": {"type": "object"}}  # a space: Claude refuses it
params = {"max_tokens": 200, "tools": [tool], "messages": [{"role": "user", "content": "Hi."}]}
requests = [vb.ClaudeRequest(f"r{i}", params) for i in range(1000)]

plan = client.plan_claude("canary-1", model, requests, prices=prices, canary=2)
print(f"canary: {plan.canary} requests online, up to ${plan.canary_cost_high:.4f}")

try:  # the model refuses the first request for good: nothing staged, no job, the id left free
    client.submit_claude("canary-1", model, requests, canary=2)
except vb.InvalidRequestError as exc:
    print("refused:", exc.field, exc.__cause__.key, exc.__cause__.code)

tool["name"] = "get_weather"  # fixed: the same id submits
with warnings.catch_warnings(record=True) as seen:  # a transient failure would be a warning
    warnings.simplefilter("always", vb.CanaryWarning)
    job = client.submit_claude("canary-1", model, requests, canary=2)
print(f"submitted {job.keys} keys; canary warnings: {len(seen)}")
