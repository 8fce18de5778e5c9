"""The online fallback: answer staged requests through the online APIs, as output rows.

Used by runs past their deadline. Each staged line is sent with the provider's own client
(``anthropic.AnthropicVertex`` for Claude, ``google-genai`` on Vertex for Gemini), with bounded
concurrency and retries on 429/529/5xx; every answer is written as a Vertex output row carrying
the key's digest, so it is read, correlated and classified exactly like a batch row.

Online calls bill at the full rate, so each key is answered online at most once across
processes. Before calling anything, a caller claims the shard in GCS::

    PREFIX/SHARD/online.claim.json   {"format", "owner", "expires"}: who answers, and until when
    PREFIX/SHARD/online.jsonl        the answers, written create-only once every key has one

1. ``online.jsonl`` exists: the shard was answered; nothing is called.
2. The claim is created create-only (``if_generation_match=0``). Of callers racing, one creates
   it; the others find it held and unexpired, call nothing and report the shard pending.
3. The holder renews the claim every ``CLAIM_SECONDS / 5`` (60 s) to ``CLAIM_SECONDS`` (300 s)
   ahead, each renewal conditional on the claim still being the one it last wrote (checked,
   then overwritten on that generation); it starts no call once its own claim is within one
   renewal of expiring or was taken over, and then writes nothing.
4. A claim past its expiry was left by a holder that died (or stopped renewing; a holder that
   fails with an exception expires its claim at once): a later caller takes it over by
   overwriting it conditional on the stale claim's generation, so of two callers seeing the
   same stale claim exactly one wins; the winner answers every unsettled key.
5. The claim is never deleted: once ``online.jsonl`` exists, step 1 ends every later attempt.

Assumptions: clocks agree to well within a renewal period (60 s), and a holder that cannot
reach GCS for a whole ``CLAIM_SECONDS`` loses its claim (a key may then be answered twice, as
calls already made by the old holder are lost with it). A crashed holder delays the shard by at
most ``CLAIM_SECONDS``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ._errors import InvalidRequestError
from ._keymap import KEY_FIELD
from ._lines import StagedLine
from ._models import Job
from ._sdk_logs import quiet_requests
from ._staged import read_key_map, read_staged_lines
from ._staging import JSONL, Folder, Staging
from ._tracing import note, stepped

if TYPE_CHECKING:
    from ._cloud import Cloud

__all__ = ["CLAIM", "CLAIM_SECONDS", "answer_online", "claude_api", "gemini_api"]

logger = logging.getLogger("vertexbatch")

# Online calls in flight at once, by default (Run.advance's online_concurrency).
CONCURRENCY = 8
CLAIM = "online.claim.json"
CLAIM_FORMAT = "vertexbatch-online-claim/1"
# How far ahead a claim reaches; its holder renews it five times per period.
CLAIM_SECONDS = 300.0


def _is_local(endpoint: str) -> bool:
    return endpoint.startswith("http://")


def claude_api(cloud: Cloud) -> Any:
    """An ``anthropic.AnthropicVertex`` for the cloud's project and location (or local stack)."""
    from anthropic import AnthropicVertex

    endpoint = cloud.vertex.endpoint
    if _is_local(endpoint):
        return AnthropicVertex(
            region=cloud.location,
            project_id=cloud.project,
            access_token="local-stack",
            base_url=f"{endpoint}/v1",
            max_retries=0,
        )
    return AnthropicVertex(region=cloud.location, project_id=cloud.project, max_retries=0)


def gemini_api(cloud: Cloud) -> Any:
    """A google-genai ``Client`` on Vertex for the cloud's project and location (or local stack)."""
    from google import genai
    from google.genai import types

    endpoint = cloud.vertex.endpoint
    if _is_local(endpoint):
        from google.oauth2.credentials import Credentials

        return genai.Client(
            vertexai=True,
            project=cloud.project,
            location=cloud.location,
            credentials=Credentials(token="local-stack"),  # type: ignore[no-untyped-call]
            http_options=types.HttpOptions(base_url=endpoint, api_version="v1"),
        )
    return genai.Client(vertexai=True, project=cloud.project, location=cloud.location)


def _claude_caller(cloud: Cloud, model: str) -> Any:
    vertex = claude_api(cloud)

    def call(request: dict[str, Any]) -> dict[str, Any]:
        params = {k: v for k, v in request.items() if k != "anthropic_version"}
        with quiet_requests():
            message = vertex.messages.create(model=model, **params)
        dumped: dict[str, Any] = message.model_dump(mode="json")
        return dumped

    return call


def _gemini_caller(cloud: Cloud, model: str) -> Any:
    from google.genai import types

    api = gemini_api(cloud)

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


def _claim_value(owner: str, seconds: float) -> dict[str, str]:
    expires = datetime.now(UTC) + timedelta(seconds=seconds)
    return {"format": CLAIM_FORMAT, "owner": owner, "expires": expires.isoformat()}


def _expiry(claim: Any, uri: str) -> datetime:
    """When a claim read from GCS expires; it may have been edited, so every field is checked."""
    expires = claim.get("expires") if isinstance(claim, dict) else None
    try:
        moment = datetime.fromisoformat(expires) if isinstance(expires, str) else None
    except ValueError:
        moment = None
    if (
        moment is None
        or moment.utcoffset() is None
        or claim.get("format") != CLAIM_FORMAT
        or not isinstance(claim.get("owner"), str)
    ):
        raise InvalidRequestError(
            f"{uri} is not a vertexbatch online claim: it was damaged or edited; delete it to "
            "let the fallback answer the shard",
            field="staging",
        )
    return moment


class _Lease:
    """A claim this process holds, renewed in the background until the ``with`` block ends."""

    def __init__(self, staging: Staging, name: str, claim: dict[str, str], seconds: float) -> None:
        self._staging = staging
        self._name = name
        self._claim = claim
        self._seconds = seconds
        self._expires = datetime.fromisoformat(claim["expires"])
        self._lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name="vertexbatch-claim", daemon=True)

    def __enter__(self) -> _Lease:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        if exc is not None and not self._lost.is_set():
            # Failed before writing the answers: let the next step take the claim over at once.
            released = {**self._claim, "expires": datetime.now(UTC).isoformat()}
            with contextlib.suppress(Exception):  # the claim then simply expires on its own
                self._staging.replace_json(self._name, released, self._claim)

    def held(self) -> bool:
        """Whether a call may start: the claim is ours and more than one renewal from expiry."""
        margin = timedelta(seconds=self._seconds / 5)
        return not self._lost.is_set() and datetime.now(UTC) < self._expires - margin

    def _renew(self) -> None:
        while not self._stop.wait(self._seconds / 5):
            renewed = _claim_value(self._claim["owner"], self._seconds)
            try:
                replaced = self._staging.replace_json(self._name, renewed, self._claim)
                # A renewal whose answer was lost is retried and refused; it still took effect.
                replaced = replaced or self._staging.read_json(self._name) == renewed
            except Exception as exc:  # the next tick tries again; held() ends at the expiry
                logger.warning(
                    "could not renew the online claim %s: %s", self._name, type(exc).__name__
                )
                continue
            if not replaced:
                logger.warning("the online claim %s was taken over by another caller", self._name)
                self._lost.set()
                return
            self._claim, self._expires = renewed, datetime.fromisoformat(renewed["expires"])


def _claim(staging: Staging, folder: Folder, seconds: float) -> _Lease | None:
    """Claim the shard's online answers; ``None`` if another caller holds the claim."""
    name = folder.name(CLAIM)
    owner = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:12]}"
    mine = _claim_value(owner, seconds)
    if staging.create_json(name, mine):
        return _Lease(staging, name, mine, seconds)
    held = staging.read_json(name)
    if held == mine:  # created by this call, whose answer was lost and retried
        return _Lease(staging, name, mine, seconds)
    if held is None:  # removed by hand meanwhile: the next step claims it afresh
        return None
    expires = _expiry(held, folder.uri(CLAIM))
    if datetime.now(UTC) < expires:
        logger.info("%s is claimed by %s until %s", folder.uri(CLAIM), held["owner"], expires)
        return None
    mine = _claim_value(owner, seconds)
    if not staging.replace_json(name, mine, held) and staging.read_json(name) != mine:
        return None  # another caller took the stale claim over first
    logger.warning("took over %s from %s, expired at %s", folder.uri(CLAIM), held["owner"], expires)
    return _Lease(staging, name, mine, seconds)


@stepped("online_fallback")
def answer_online(
    cloud: Cloud,
    job: Job,
    settled: Callable[[], set[str]],
    folder: Folder,
    rows_leaf: str,
    concurrency: int = CONCURRENCY,
) -> bool:
    """Answer the job's keys not in ``settled()`` online, once across processes (see above).

    The rows go to ``folder``'s ``rows_leaf``, create-only. ``settled`` is called only by the
    caller that holds the claim.

    Returns:
        ``True`` once the rows are written (by this call or an earlier one), ``False`` while
        another caller holds the claim (or this one lost it): the shard is still pending.
    """
    staging = cloud.staging
    name = folder.name(rows_leaf)
    if staging.exists(name):
        return True
    lease = _claim(staging, folder, CLAIM_SECONDS)
    if lease is None:
        return False
    with lease:
        # A holder whose claim went stale may have written the rows before this one took over.
        if staging.exists(name):
            return True
        rows = _answer(cloud, job, settled(), lease, concurrency)
        if rows is None:
            logger.warning("gave up answering %s online: its claim was lost", job.id)
            return False
        upload = staging.upload(name, JSONL)
        for row in rows:
            upload.write(row)
        note({"vertexbatch.online.answered": len(rows)})
        if upload.finish():
            logger.info("answered %d key(s) of %s online", len(rows), job.id)
    return True


def _answer(
    cloud: Cloud, job: Job, settled: set[str], lease: _Lease, concurrency: int
) -> list[bytes] | None:
    """One output row per unsettled key, or ``None`` if the claim was lost before the last."""
    staging = cloud.staging
    wanted = {k for k in read_key_map(staging, job).keys if k not in settled}
    # A deduplicated key's alias (no data) is answered by its line's row, as in a batch job.
    lines = (
        [line for line in read_staged_lines(staging, job, wanted) if line.data] if wanted else []
    )
    caller = (_claude_caller if job.provider == "anthropic" else _gemini_caller)(cloud, job.model)
    id_field = "custom_id" if job.provider == "anthropic" else KEY_FIELD

    def answer(line: StagedLine) -> bytes | None:
        if not lease.held():
            return None
        staged = json.loads(line.data)
        row: dict[str, Any] = {id_field: line.digest}
        try:
            row["response"] = cloud.retry.call(
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

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        answered = [row for row in pool.map(answer, lines) if row is not None]
    return answered if len(answered) == len(lines) else None
