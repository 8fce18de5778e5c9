"""The canary: a submission's first requests sent online before anything is staged.

``canary=N`` (``submit_*``, ``run_*``, their ``client.aio`` twins, ``--canary N``) sends the
first ``N`` of the caller's requests, in the caller's order, to the model's online method
(the provider table's ``online`` column, ``_vertex.online``: the staged body, unchanged, at
Standard PayGo) before the batch job is staged. Each answer is read as a batch row is read
(``_rows.classify``):

- a call the service refused with a failure no retry mends (a non-transient ``LineError``:
  400 invalid argument, 404 model not found, a request shape the model refuses) refuses the
  submission with an ``InvalidRequestError`` (``field="canary"``) naming the key and the
  failure's code and status, never content; its cause is that ``LineError``. Nothing is
  staged and no job is created, so the id stays free for the corrected requests;
- a transient failure (429, 5xx, a deadline, a transport failure) once the client's retry
  policy gave up is a ``CanaryWarning`` and does not block: the batch job retries on its own;
- an answer (any answer: a refusal of the content or a truncation says nothing of the other
  requests) passes, and is paid for at its tier.

What the answers used, per tier they were billed at (``_staged.usage``), is logged priced and
recorded with the id's manifest (``_staged.amend.with_canary``; a run's: its ledger), so a
job's and a run's spend count it (docs/cost.md, "Canary"). It is recorded once the rows are
staged, never before: a canary whose submission then failed leaves no record, and the retry
sends its own.

An id that already holds a submission (its manifest) or a run (its ledger) sends no canary:
submitting again adopts (or is refused by) what it holds, and the canary, run before anything
was staged, was paid by the submission that staged it.

``N`` more than the requests given is refused (no clamping: a canary of every request pays
the whole job online).
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .._cloud import Cloud
from .._errors import InvalidRequestError, LineError
from .._plans.canary import too_few_requests
from .._plans.prices import Price
from .._plans.spend import SpendMeter, count_tiers
from .._providers import PROVIDERS
from .._requests.lines import StagedLine
from .._rows.classify import classify_row
from .._runs.ledger import read_ledger
from .._runs.usage import Tally
from .._staged.manifest import read_manifest
from .._staged.usage import TierUsage
from .._values import Provider
from .._vertex.online import from_service, status_code
from .._vertex.tiers import billed_tier

__all__ = ["CanaryWarning", "canaried", "check_canary", "send_canary"]

logger = logging.getLogger("vertexbatch")

_TIER = "standard"  # the canary's calls: Standard PayGo, the tier every online model serves


class CanaryWarning(UserWarning):
    """A canary request failed with a transient failure (429, 5xx, a deadline) once retries
    were spent: the submission went on. Names the key and the failure's code, never content."""


def check_canary(value: object) -> int:
    """``canary=``: a whole number of requests, 0 (the default) for none."""
    if type(value) is not int or value < 0:
        raise InvalidRequestError(
            f"canary must be a whole number of requests, 0 or more, got {value!r:.40}",
            field="canary",
        )
    return value


def canaried(
    cloud: Cloud,
    id: str,
    provider: Provider,
    model: str,
    lines: Iterable[StagedLine],
    count: int,
    *,
    run: bool = False,
    prices: Iterable[Price] = (),
) -> tuple[Iterator[StagedLine], TierUsage]:
    """``lines`` unchanged, once their first ``count`` passed the canary (``send_canary``), and
    what its answers used (empty: none sent); nothing is sent when ``count`` is 0 or the id (a
    run's id: ``run``) already holds something."""
    lines = iter(lines)
    if not count:
        return lines, {}
    head = list(itertools.islice(lines, count))
    if len(head) < count:
        raise too_few_requests(count, len(head))
    held = read_ledger(cloud.staging, id) if run else read_manifest(cloud.staging, id)
    usage = {} if held is not None else send_canary(cloud, id, provider, model, head, prices)
    return itertools.chain(head, lines), usage


def send_canary(
    cloud: Cloud,
    id: str,
    provider: Provider,
    model: str,
    lines: list[StagedLine],
    prices: Iterable[Price] = (),
) -> TierUsage:
    """Send each line's request online, one at a time, and return what the answers used, per
    tier they were billed at; log what they cost.

    Raises:
        InvalidRequestError: a request failed for good (``field="canary"``; its cause: the
            key's ``LineError``).
    """
    lane = PROVIDERS[provider]
    caller = lane.online(cloud.online, model, 1, _TIER)
    tally = Tally(provider, model)
    try:
        for line in lines:
            body: dict[str, Any] = json.loads(line.data)["request"]
            failure: BaseException | None = None
            try:
                response = cloud.retry.call(
                    f"canary request of {id}", functools.partial(caller.call, body)
                )
            except Exception as exc:
                if not from_service(exc):
                    raise  # a call that could not be built is a bug, never a key's answer
                failure = exc
            if failure is not None:  # outside the handler: the refusal keeps no provider text
                _failed(id, provider, model, line.key, failure)
                continue
            row = {lane.id_field: line.digest, "status": "", "response": response}
            result = classify_row(row, key=line.key, provider=provider)
            tally.add(result, billed_tier(response, _TIER))
    finally:
        caller.close()
    usage = tally.usage()
    meter = SpendMeter(provider, model, prices)
    count_tiers(meter, usage)
    logger.info("canary of %s: %d request(s) answered online, %s", id, len(lines), meter.spend)
    return usage


def _failed(id: str, provider: Provider, model: str, key: str, exc: BaseException) -> None:
    """A canary call the service failed: refuse the submission, or warn (transient)."""
    status: dict[str, Any] = {"code": status_code(exc)}
    body = _error_body(exc)
    if body is not None:
        status["error"] = body
    error = classify_row({"status": status}, key=key, provider=provider).error
    assert isinstance(error, LineError)
    said = (
        f"HTTP {error.code} {error.status}".strip() if error.code else error.status or "no status"
    )
    if error.transient:
        warnings.warn(
            f"canary of {id}: request {key!r:.80} failed online with a transient failure "
            f"({said}) once retries were spent; the batch job goes on",
            CanaryWarning,
            stacklevel=2,
        )
        return
    raise InvalidRequestError(
        f"canary of {id}: model {model} refused request {key!r:.80} online with {said}, a "
        "failure no retry mends: every request like it would fail in the batch job; nothing "
        "was staged and no job was created",
        field="canary",
    ) from error


def _error_body(exc: BaseException) -> Mapping[str, Any] | None:
    """The service's error object (Anthropic's ``body``, Google's response JSON), read for its
    code and status name only."""
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        return body
    response = getattr(exc, "response", None)
    try:
        data = response.json() if response is not None else None
    except ValueError:
        return None
    return data if isinstance(data, Mapping) else None
