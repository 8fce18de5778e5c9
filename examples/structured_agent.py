"""An agent executor that asks for answers in a schema and acts on values, not text.

``TriageAgent.triage`` submits one Claude batch of support tickets with ``schema=Triage`` (a
pydantic model): vertexbatch writes the schema into every request (a forced tool for Claude,
``responseSchema`` for Gemini) and checks every answer against it. The agent then acts on each
result's ``parsed`` value (``Result.parsed_as(Triage)`` gives the model instance) and on its
``tool_calls`` (a ticket the model wants looked up first), and resubmits the answers that broke
the schema (``SchemaError``, retryable: another sample may comply) under ``ID.r1``.

``python examples/structured_agent.py`` runs it against the local stack, whose directives script
a non-conforming answer and a tool call.

Install: ``pip install '.[local]'`` in a clone (the local stack it runs on; no package index
serves vertexbatch).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import pydantic

import vertexbatch as vb

MODEL = "claude-sonnet-4-5"

LOOKUP = {
    "name": "lookup_order",
    "description": "Look up an order by its number before deciding.",
    "input_schema": {
        "type": "object",
        "properties": {"order": {"type": "string"}},
        "required": ["order"],
    },
}


class Triage(pydantic.BaseModel):
    """What the agent needs to route one ticket."""

    queue: Literal["billing", "bugs", "account"]
    urgent: bool
    summary: str = pydantic.Field(max_length=200)


@dataclass(frozen=True, slots=True)
class Action:
    """What the agent does with one ticket: route it, look something up, or give up."""

    ticket: str
    kind: Literal["route", "lookup", "failed"]
    detail: str


class TriageAgent:
    """Triage tickets in one batch; every answer is a ``Triage`` or a tool call."""

    def __init__(self, client: vb.Client, *, sleep: Callable[[float], None] | None = None):
        self._client = client
        self._sleep = sleep

    def triage(self, batch_id: str, tickets: Sequence[tuple[str, str]]) -> dict[str, Action]:
        requests = [
            vb.ClaudeRequest(
                key=ticket,
                params={
                    "max_tokens": 512,
                    "tools": [LOOKUP],
                    "messages": [{"role": "user", "content": text}],
                },
            )
            for ticket, text in tickets
        ]
        job = self._client.submit_claude(batch_id, MODEL, requests, schema=Triage)
        actions = self._act(job)
        retry = [key for key, action in actions.items() if action.detail == "SchemaError"]
        if retry:  # another sample may comply: once more, under ID.r1
            again = self._client.resubmit(job, keys=retry)
            actions.update(self._act(again))
        return actions

    def _act(self, job: vb.Job) -> dict[str, Action]:
        self._client.wait(job, floor=0.05, ceiling=0.5, sleep=self._sleep)
        actions: dict[str, Action] = {}
        for result in self._client.results(job):
            if result.ok and result.tool_calls:
                call = result.tool_calls[0]
                actions[result.key] = Action(result.key, "lookup", f"{call.name} {call.id}")
            elif result.ok:
                triage = result.parsed_as(Triage)
                queue = f"{triage.queue}{' (urgent)' if triage.urgent else ''}"
                actions[result.key] = Action(result.key, "route", queue)
            else:
                detail = type(result.error).__name__
                actions[result.key] = Action(result.key, "failed", detail)
        return actions


def main() -> None:
    """Triage a few tickets on the local stack and print what the agent does with each."""
    from vertexbatch.emulator import LocalStack, Timing

    tickets = [
        ("ticket-101", "I was charged twice for my subscription."),
        # Directives script the local model: a tool call, an answer outside the schema.
        ("ticket-102", "Where is order 5531? [[vb:tool_call name=lookup_order]]"),
        ("ticket-103", "The app crashes on start. [[vb:nonconforming]]"),
    ]
    with (
        LocalStack(timing=Timing(row_seconds=0.05)) as stack,
        stack.client(bucket="triage-demo") as client,
    ):
        for ticket, action in TriageAgent(client).triage("triage-1", tickets).items():
            print(f"{ticket:<12} {action.kind:<7} {action.detail}")


if __name__ == "__main__":
    main()
