"""An agent executor that runs its tasks as one batch at half the online price.

``BatchExecutor.run`` fans a list of tasks out as one Claude batch keyed by task id, waits for it
(``Client.wait``: backoff, never faster than a floor), maps every outcome back to its
task, and
resubmits the retryable and missing tasks under ``ID.r1``, ``ID.r2``, ... with
``Client.resubmit``, which reads them back from the staged input. Every id is derived from
the batch id, so an executor that crashes and runs again adopts each job instead of paying twice.

``python examples/agent_executor.py`` runs it against the local stack.

Install: ``pip install '.[local]'`` in a clone (the local stack it runs on; no package index
serves vertexbatch).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import vertexbatch as vb

RESUBMIT = frozenset({"retryable", "missing"})


@dataclass(frozen=True, slots=True)
class Task:
    """One unit of the agent's work: its id becomes the batch key."""

    id: str
    prompt: str
    max_tokens: int = 1024


@dataclass(frozen=True, slots=True)
class TaskResult:
    """What became of a task: the outcome word, the text, and which submission answered it."""

    task: Task
    outcome: str
    text: str
    submission_id: str
    attempts: int


class BatchExecutor:
    """Runs tasks as Claude batches; see the module docstring.

    Args:
        client: a ``vertexbatch.Client``.
        model: a bare Claude model id.
        floor / ceiling: shortest and longest wait between status polls, in seconds.
        timeout: give up waiting for one job after this many seconds.
        max_resubmits: how many times retryable and missing tasks are sent again.
    """

    def __init__(
        self,
        client: vb.Client,
        model: str = "claude-sonnet-4-5",
        *,
        floor: float = 30.0,
        ceiling: float = 600.0,
        timeout: float = 24 * 3600.0,
        max_resubmits: int = 1,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.model = model
        self.floor = floor
        self.ceiling = ceiling
        self.timeout = timeout
        self.max_resubmits = max_resubmits
        self.sleep = sleep

    def run(self, batch_id: str, tasks: Sequence[Task]) -> dict[str, TaskResult]:
        """Run the tasks; return one ``TaskResult`` per task id."""
        by_id = {task.id: task for task in tasks}
        done: dict[str, TaskResult] = {}
        job = self.client.submit_claude(batch_id, self.model, [self._request(t) for t in tasks])
        for attempt in range(1, self.max_resubmits + 2):
            self.client.wait(
                job,
                timeout=self.timeout,
                floor=self.floor,
                ceiling=self.ceiling,
                sleep=self.sleep,
            )
            again = []
            for result in self.client.results(job):
                task = by_id[result.key]
                done[task.id] = TaskResult(task, result.outcome, result.text, job.id, attempt)
                if result.outcome in RESUBMIT:
                    again.append(task.id)
            if not again or attempt > self.max_resubmits:
                break
            # Read back from the staged input under the derived id ID.r1, ID.r2, ...
            job = self.client.resubmit(job, keys=again)
        return done

    @staticmethod
    def _request(task: Task) -> vb.ClaudeRequest:
        return vb.ClaudeRequest(
            task.id,
            {
                "max_tokens": task.max_tokens,
                "messages": [{"role": "user", "content": task.prompt}],
            },
        )


def main() -> None:
    """Run a few tasks on the local stack and print what became of each."""
    from vertexbatch.emulator import LocalStack, Timing

    tasks = [
        Task("summarise-incident-311", "Summarise the incident timeline for the postmortem."),
        Task("draft-reply-ticket-48213", "Draft a reply to the customer about the double charge."),
        Task("extract-actions-meeting-7", "List the action items from the meeting notes."),
        # Directives script the local model: this one is rate limited, that one dropped.
        Task("classify-email-9001", "Classify the email. [[vb:error 429]]"),
        Task("translate-faq-12", "Translate the FAQ entry to German. [[vb:drop]]"),
    ]
    with (
        LocalStack(timing=Timing(row_seconds=0.05)) as stack,
        stack.client(bucket="agent-demo") as client,
    ):
        executor = BatchExecutor(client, floor=0.2, ceiling=2.0)
        for task_id, result in executor.run("agent-run-1", tasks).items():
            print(
                f"{task_id:<28} {result.outcome:<10} after {result.attempts} attempt(s) "
                f"({result.submission_id})"
            )


if __name__ == "__main__":
    main()
