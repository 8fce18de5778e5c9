"""The online fallback: answer staged requests through the online APIs, as output rows.

Used by runs past their deadline. Each staged line is sent with the provider's own client
(``anthropic.AnthropicVertex`` for Claude, ``google-genai`` on Vertex for Gemini), with bounded
concurrency and retries on 429/529/5xx; every answer is written as a Vertex output row carrying
the key's digest, so it is read, correlated and classified exactly like a batch row.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ._identity import read_key_map, read_staged_lines
from ._lines import KEY_FIELD, StagedLine
from ._models import Job
from ._staging import JSONL

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["answer_online"]

logger = logging.getLogger("vertexbatch")

CONCURRENCY = 8


def _is_local(endpoint: str) -> bool:
    return endpoint.startswith("http://")


def _claude_caller(client: Client, model: str) -> Any:
    from anthropic import AnthropicVertex

    endpoint = client._vertex.endpoint
    if _is_local(endpoint):
        vertex = AnthropicVertex(
            region=client.location,
            project_id=client.project,
            access_token="local-stack",
            base_url=f"{endpoint}/v1",
            max_retries=0,
        )
    else:
        vertex = AnthropicVertex(region=client.location, project_id=client.project, max_retries=0)

    def call(request: dict[str, Any]) -> dict[str, Any]:
        params = {k: v for k, v in request.items() if k != "anthropic_version"}
        message = vertex.messages.create(model=model, **params)
        dumped: dict[str, Any] = message.model_dump(mode="json")
        return dumped

    return call


def _gemini_caller(client: Client, model: str) -> Any:
    from google import genai
    from google.genai import types

    endpoint = client._vertex.endpoint
    if _is_local(endpoint):
        from google.oauth2.credentials import Credentials

        api = genai.Client(
            vertexai=True,
            project=client.project,
            location=client.location,
            credentials=Credentials(token="local-stack"),  # type: ignore[no-untyped-call]
            http_options=types.HttpOptions(base_url=endpoint, api_version="v1"),
        )
    else:
        api = genai.Client(vertexai=True, project=client.project, location=client.location)

    def call(request: dict[str, Any]) -> dict[str, Any]:
        config = dict(request.get("generationConfig") or {})
        config.update(
            {k: v for k, v in request.items() if k not in ("contents", "generationConfig")}
        )
        response = api.models.generate_content(
            model=model,
            contents=[types.Content.model_validate(c) for c in request["contents"]],
            config=types.GenerateContentConfig.model_validate(config),
        )
        dumped: dict[str, Any] = response.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dumped

    return call


def _status_code(exc: BaseException) -> int:
    for attribute in ("status_code", "code"):
        value = getattr(exc, attribute, None)
        if isinstance(value, int):
            return value
    return 0


def answer_online(client: Client, job: Job, settled: set[str], name: str) -> int:
    """Answer the job's keys not in ``settled`` online; write their rows to ``name`` create-only.

    Returns how many keys were answered (0 if another caller wrote the rows first).
    """
    staging = client._staging
    if staging.exists(name):
        return 0
    wanted = {k for k in read_key_map(staging, job).keys if k not in settled}
    if not wanted:
        lines: list[StagedLine] = []
    else:
        lines = list(read_staged_lines(staging, job, wanted))
    caller = (_claude_caller if job.provider == "anthropic" else _gemini_caller)(client, job.model)

    def answer(line: StagedLine) -> bytes:
        staged = json.loads(line.data)
        id_field = "custom_id" if job.provider == "anthropic" else KEY_FIELD
        row: dict[str, Any] = {id_field: line.digest}
        try:
            row["response"] = client.retry.call(
                f"online answer for a key of {job.id}", lambda: caller(staged["request"])
            )
            row["status"] = ""
        except Exception as exc:  # the key's outcome says what happened; no content kept
            code = _status_code(exc)
            logger.warning(
                "online call for a key of %s failed: %s %s", job.id, type(exc).__name__, code
            )
            row["status"] = {"code": code, "message": f"online call failed: {type(exc).__name__}"}
        return json.dumps(row).encode("utf-8") + b"\n"

    rows: Iterable[bytes]
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        rows = list(pool.map(answer, lines))
    upload = staging.upload(name, JSONL)
    for row in rows:
        upload.write(row)
    if not upload.finish():
        return 0
    logger.info("answered %d key(s) of %s online", len(lines), job.id)
    return len(lines)
