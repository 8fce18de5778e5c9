"""A tool loop in batches: each turn of many conversations is one batch job, and no process stays
alive between two turns.

``start`` submits turn 1 and parks the conversations in GCS beside the job
(``LOOP/turn-1.json``, written create-only). ``step`` is what a scheduler calls, from any
process: once the last turn's job is done, it runs each answer's tools, appends
``Result.assistant_turn()`` (the answer as the provider wrote it, signatures kept) and
``Result.tool_results(outputs)`` to its conversation, parks them as the next turn and submits
that turn as the next batch. A conversation whose answer calls no tool is finished.

``python examples/tool_loop.py`` runs it against the local stack for Claude (thinking on) and a
Gemini 3 model: both refuse a follow-up that drops the signatures.

Install: ``pip install '.[local]'`` in a clone (the local stack it runs on).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from google.cloud import storage

import vertexbatch as vb

MODELS = {"claude": "claude-sonnet-4-5", "gemini": "gemini-3.8-flash"}
WEATHER = {
    "name": "weather",
    "description": "The weather in a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


def weather(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The tool the model calls (a real executor would look it up)."""
    return {"city": arguments["city"], "celsius": 4}


TOOLS: dict[str, Callable[[Mapping[str, Any]], Any]] = {"weather": weather}


def _requests(provider: str, conversations: Mapping[str, list[Any]]) -> list[Any]:
    """One request per conversation, the whole conversation as its messages or contents."""
    if provider == "claude":
        params = {"max_tokens": 2048, "thinking": {"type": "enabled", "budget_tokens": 1024}}
        params["tools"] = [WEATHER]
        return [vb.ClaudeRequest(k, {**params, "messages": m}) for k, m in conversations.items()]
    declaration = {
        "name": "weather",
        "description": WEATHER["description"],
        "parameters": {
            "type": "OBJECT",
            "properties": {"city": {"type": "STRING"}},
            "required": ["city"],
        },
    }
    config = {"tools": [{"function_declarations": [declaration]}]}
    return [vb.GeminiRequest(k, m, config) for k, m in conversations.items()]


def _user(provider: str, text: str) -> dict[str, Any]:
    if provider == "claude":
        return {"role": "user", "content": text}
    return {"role": "user", "parts": [{"text": text}]}


def _park(bucket: storage.Bucket, loop_id: str, turn: int, state: dict[str, Any]) -> None:
    blob = bucket.blob(f"{loop_id}/turn-{turn}.json")
    blob.upload_from_string(json.dumps(state), if_generation_match=0)  # create-only


def _parked(bucket: storage.Bucket, loop_id: str) -> tuple[int, dict[str, Any]]:
    """The last turn parked: its number and its state."""
    turns = [
        int(blob.name.rsplit("-", 1)[1].removesuffix(".json"))
        for blob in bucket.list_blobs(prefix=f"{loop_id}/turn-")
    ]
    turn = max(turns)
    return turn, json.loads(bucket.blob(f"{loop_id}/turn-{turn}.json").download_as_bytes())


def _submit(client: vb.Client, provider: str, submission: str, conversations: Any) -> vb.Job:
    submit = client.submit_claude if provider == "claude" else client.submit_gemini
    return submit(submission, MODELS[provider], _requests(provider, conversations))


def start(
    client: vb.Client,
    bucket: storage.Bucket,
    loop_id: str,
    provider: str,
    questions: Mapping[str, str],
) -> vb.Job:
    """Submit turn 1 of one conversation per question and park the conversations."""
    conversations = {key: [_user(provider, text)] for key, text in questions.items()}
    job = _submit(client, provider, f"{loop_id}-turn-1", conversations)
    state = {"provider": provider, "job": job.to_dict(), "conversations": conversations}
    _park(bucket, loop_id, 1, {**state, "answers": {}})
    return job


def step(client: vb.Client, bucket: storage.Bucket, loop_id: str) -> dict[str, str] | None:
    """Take the loop one turn on, if its last job is done; the final answers once no
    conversation calls a tool any more (a failed one answers with its outcome), else ``None``."""
    turn, state = _parked(bucket, loop_id)
    if state["job"] is None:
        return dict(state["answers"])
    job = vb.Job.from_dict(state["job"])
    if not client.status(job).terminal:
        return None
    answers, following = dict(state["answers"]), {}
    for result in client.results(job):
        if not result.ok:
            answers[result.key] = f"<{result.outcome}>"
        elif result.tool_calls:
            outputs = [TOOLS[call.name](call.arguments) for call in result.tool_calls]
            turn_messages = [result.assistant_turn(), result.tool_results(outputs)]
            following[result.key] = [*state["conversations"][result.key], *turn_messages]
        else:
            answers[result.key] = result.text
    provider = state["provider"]
    next_job = None
    if following:
        next_job = _submit(client, provider, f"{loop_id}-turn-{turn + 1}", following).to_dict()
    parked = {"provider": provider, "job": next_job, "conversations": following}
    _park(bucket, loop_id, turn + 1, {**parked, "answers": answers})
    return None if following else answers


def main() -> None:
    """Run a loop per provider on the local stack, one step per scheduler tick."""
    from google.auth.credentials import AnonymousCredentials

    from vertexbatch.emulator import LocalStack, Timing

    questions = {
        "oslo": "What should I wear in Oslo today? [[vb:tool_call name=weather]]",
        "lima": "Is it beach weather in Lima? [[vb:tool_call name=weather]]",
    }
    with (
        LocalStack(timing=Timing(row_seconds=0.05)) as stack,
        stack.client(bucket="tool-loop-demo") as client,
    ):
        gcs = storage.Client(
            project=stack.project,
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options={"api_endpoint": stack.storage_endpoint},
        )
        bucket = gcs.bucket(client.bucket)
        for provider in MODELS:
            start(client, bucket, f"loop-{provider}", provider, questions)
            answers = None
            while answers is None:
                stack.settle()
                answers = step(client, bucket, f"loop-{provider}")
            for key, text in sorted(answers.items()):
                print(f"{provider:<7} {key:<5} {text[:40]}")


if __name__ == "__main__":
    main()
