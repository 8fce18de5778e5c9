"""A budget on a submission, and what its job did cost (against `vertexbatch emulator`)."""

import vertexbatch as vb

client = vb.Client.from_env()
model = "claude-opus-5-5@default"
prices = [vb.Price("claude-opus-5-5", input=5, output=25)]  # online list $ per million tokens
params = {"max_tokens": 1000, "messages": [{"role": "user", "content": "Review this diff."}]}
requests = [vb.ClaudeRequest(f"r{i}", params) for i in range(20)]

plan = client.plan_claude("spend-1", model, requests, prices=prices)
print(f"plan: up to ${plan.cost_high:.4f}")  # every line writing its whole max_tokens

try:  # over the budget: refused before anything is staged or created
    client.submit_claude("spend-1", model, requests, budget=0.10, prices=prices)
except vb.InvalidRequestError as exc:
    print("refused:", exc.field)

job = client.submit_claude("spend-1", model, requests, budget=1.00, prices=prices)
client.wait(job, floor=1)
meter = vb.SpendMeter(job.provider, job.model, prices)
kept = [r.key for r in meter.counted(client.results(job)) if r.ok]  # counted as they pass
print(f"{meter.spend.answers} answers paid, {meter.spend} at batch prices")
