"""The claims of a shard's online answers, and the tokens of its attempts' creators, in GCS.

The protocol is ``vertexbatch._runs.online``'s (its steps 2, 3, 6 and 8)::

    PREFIX/SHARD/online.claim.json          {"format", "owner", "expires"}: who answers, until when
    PREFIX/SHARD/creating/ID.json           the same, for one caller creating an attempt's job

A claim is one object per shard, created create-only and taken over, once expired, on its
generation: of callers racing, one holds it. A token is one object per creator, renewed as a
claim is while it creates and deleted once the job is recorded. A creator writes its token,
then looks at the claim; a holder of the claim looks at the tokens: whichever writes second
sees the other, so a job is never created while the shard is answered online.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any

from .._errors import InvalidRequestError
from .._gcs.staging import Folder, Staging

__all__ = [
    "CLAIM",
    "CLAIM_SECONDS",
    "Lease",
    "claimed",
    "creator_token",
    "live_creators",
    "take_claim",
]

logger = logging.getLogger("vertexbatch")

CLAIM = "online.claim.json"
CLAIM_FORMAT = "vertexbatch-online-claim/1"
# How far ahead a claim reaches; its holder renews it five times per period.
CLAIM_SECONDS = 300.0
CREATING = "creating"


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


class Lease:
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

    def __enter__(self) -> Lease:
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
        if exc is not None:
            # Failed before writing the answers: let the next step take the claim over at once.
            with contextlib.suppress(Exception):  # the claim then simply expires on its own
                self.release()

    def release(self) -> None:
        """Expire the claim now (unless it was lost), so the next caller takes it at once."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()  # no renewal after this
        if self._lost.is_set() or self._claim.get("released"):
            return
        released = {**self._claim, "expires": datetime.now(UTC).isoformat(), "released": "yes"}
        if self._staging.replace_json(self._name, released, self._claim):
            self._claim = released

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


def take_claim(staging: Staging, folder: Folder, seconds: float) -> Lease | None:
    """Claim the shard's online answers; ``None`` if another caller holds the claim."""
    name = folder.name(CLAIM)
    owner = _owner()
    mine = _claim_value(owner, seconds)
    if staging.create_json(name, mine):
        return Lease(staging, name, mine, seconds)
    held = staging.read_json(name)
    if held == mine:  # created by this call, whose answer was lost and retried
        return Lease(staging, name, mine, seconds)
    if held is None:  # removed by hand meanwhile: the next step claims it afresh
        return None
    expires = _expiry(held, folder.uri(CLAIM))
    if datetime.now(UTC) < expires:
        logger.info("%s is claimed by %s until %s", folder.uri(CLAIM), held["owner"], expires)
        return None
    mine = _claim_value(owner, seconds)
    if not staging.replace_json(name, mine, held) and staging.read_json(name) != mine:
        return None  # another caller took the stale claim over first
    if held.get("released"):  # its holder was done with it
        logger.info("took over %s, released by %s", folder.uri(CLAIM), held["owner"])
    else:
        logger.warning(
            "took over %s from %s, expired at %s", folder.uri(CLAIM), held["owner"], expires
        )
    return Lease(staging, name, mine, seconds)


def _owner() -> str:
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:12]}"


def claimed(staging: Staging, folder: Folder) -> bool:
    """Whether a caller holds the shard's claim now: neither expired nor released."""
    held = staging.read_json(folder.name(CLAIM))
    if held is None:
        return False
    return not held.get("released") and datetime.now(UTC) < _expiry(held, folder.uri(CLAIM))


@contextlib.contextmanager
def creator_token(staging: Staging, folder: Folder) -> Iterator[None]:
    """Write this caller's token (renewed meanwhile) and delete it when the block ends."""
    name = folder.name(f"{CREATING}/{uuid.uuid4().hex}.json")
    token = _claim_value(_owner(), CLAIM_SECONDS)
    staging.create_json(name, token)  # a fresh name: a retried write of it is this one's
    try:
        with Lease(staging, name, token, CLAIM_SECONDS):
            yield
    finally:
        staging.delete(name)


def live_creators(staging: Staging, folder: Folder) -> bool:
    """Whether a caller is creating an attempt's job of the shard now (its token unexpired;
    one left by a creator that died expires within ``CLAIM_SECONDS``)."""
    for uri, _, _ in staging.list_names(folder.uri(CREATING)):
        token = staging.read_json(uri)
        if token is not None and datetime.now(UTC) < _expiry(token, uri):
            return True
    return False
