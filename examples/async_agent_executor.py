"""An asyncio agent executor: work that can wait goes to a batch, the rest is served meanwhile.

``AsyncExecutor.defer`` submits tasks that can wait as one Claude batch (``client.aio``,
half the online price) and returns at once with a future per task; a background task waits for
the job (``asyncio.sleep`` between polls) and resolves each future from the results stream. The
event loop stays free all along: ``serve`` answers urgent work on the same loop meanwhile.
Every vertexbatch call records a span; ``--spans`` prints them on stderr with OpenTelemetry's
console exporter (one JSON object each, some 400 lines).

``python examples/async_agent_executor.py`` runs it against a local stack of its own;
``--spans`` also needs the OpenTelemetry SDK (``pip install opentelemetry-sdk``, or the ``dev``
extra).

Install: ``pip install '.[local]'`` in a clone (the README's install has it too).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import vertexbatch as vb

MODEL = "claude-sonnet-4-5"


@dataclass(frozen=True, slots=True)
class Task:
    """One unit of the agent's work; its id is the batch key."""

    id: str
    prompt: str


@dataclass(frozen=True, slots=True)
class Answer:
    """What became of a deferred task."""

    task_id: str
    outcome: str
    text: str


class AsyncExecutor:
    """Defers tasks to Vertex batch jobs on the caller's event loop.

    Args:
        client: a ``vertexbatch.Client`` (its ``aio`` view is used).
        floor / ceiling: shortest and longest pause between status polls, in seconds.
    """

    def __init__(self, client: vb.Client, *, floor: float = 30.0, ceiling: float = 600.0) -> None:
        self.aio = client.aio
        self.floor = floor
        self.ceiling = ceiling
        self._collectors: set[asyncio.Task[None]] = set()

    async def defer(
        self, batch_id: str, tasks: Sequence[Task]
    ) -> dict[str, asyncio.Future[Answer]]:
        """Submit the tasks as one batch; a future per task id, resolved when the job ends.

        The batch id makes the submit idempotent: an executor restarted with the same id
        adopts the job it submitted before instead of paying twice.
        """
        requests = [
            vb.ClaudeRequest(
                t.id, {"max_tokens": 512, "messages": [{"role": "user", "content": t.prompt}]}
            )
            for t in tasks
        ]
        job = await self.aio.submit_claude(batch_id, MODEL, requests)
        loop = asyncio.get_running_loop()
        futures = {t.id: loop.create_future() for t in tasks}
        collector = asyncio.create_task(self._collect(job, futures))
        self._collectors.add(collector)  # keep a reference until it is done
        collector.add_done_callback(self._collectors.discard)
        return futures

    async def _collect(self, job: vb.Job, futures: dict[str, asyncio.Future[Answer]]) -> None:
        try:
            await self.aio.wait(job, floor=self.floor, ceiling=self.ceiling)
            async for result in self.aio.results(job):
                futures[result.key].set_result(Answer(result.key, result.outcome, result.text))
        except Exception as exc:  # every waiting caller learns of it
            for future in futures.values():
                if not future.done():
                    future.set_exception(exc)


async def serve(request: str) -> str:
    """Urgent work answered on the same loop while the batch runs (a stand-in for an online
    call or a tool)."""
    await asyncio.sleep(0.05)
    return f"served {request!r} at once"


async def run(client: vb.Client) -> list[str]:
    """Defer three tasks, serve urgent work meanwhile, then print what the batch said."""
    executor = AsyncExecutor(client, floor=0.2, ceiling=1.0)
    tasks = [
        Task("summarise-incident-311", "Summarise the incident timeline for the postmortem."),
        Task("draft-reply-ticket-48213", "Draft a reply to the customer about the double charge."),
        Task("translate-faq-12", "Translate the FAQ entry to German. [[vb:drop]]"),
    ]
    answers = await executor.defer("async-agent-1", tasks)
    served = 0
    while not all(f.done() for f in answers.values()):  # the loop serves on meanwhile
        await serve(f"urgent-{served}")
        served += 1
    lines = [f"served {served} urgent request(s) while the batch ran"]
    for task_id, future in answers.items():
        lines.append(f"{task_id:<26} {future.result().outcome}")
    return lines


async def closing(client: vb.Client) -> list[str]:
    """``run``, then the client closed: ``async with client.aio`` ends its threads and
    connections (as ``with client`` does for blocking code)."""
    async with client.aio:
        return await run(client)


def main(argv: Sequence[str] | None = None) -> None:
    """Run on the local stack; with ``--spans``, print vertexbatch's spans on stderr too."""
    from vertexbatch.emulator import LocalStack, Timing

    spans = "--spans" in (sys.argv[1:] if argv is None else argv)
    provider = None
    if spans:
        # Only here: the SDK is not in the README's install, and the spans are on request.
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

        provider = TracerProvider()
        # Spans go to stderr, one JSON object each; the executor's own lines go to stdout.
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    with LocalStack(timing=Timing(row_seconds=0.1)) as stack:
        stack.create_bucket("async-agent-demo")
        client = vb.Client.for_endpoints(
            vertex_endpoint=stack.vertex_endpoint,
            storage_endpoint=stack.storage_endpoint,
            project=stack.project,
            location=stack.location,
            bucket="async-agent-demo",
            tracer_provider=provider,
        )
        for line in asyncio.run(closing(client)):
            print(line)
    if provider is not None:
        provider.shutdown()


if __name__ == "__main__":
    main()
