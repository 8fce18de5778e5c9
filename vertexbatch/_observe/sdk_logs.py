"""Third-party debug logging that would show request content, kept out of vertexbatch's calls.

The anthropic SDK logs every request's options, the JSON body included (the prompt), at DEBUG
on ``anthropic._base_client``. google-auth's ``AuthorizedSession`` (the Gemini online fallback's
transport) logs each request's JSON body and each JSON answer at DEBUG on
``google.auth.transport.requests``, in the records' ``extra`` fields (``httpRequest``,
``httpResponse``), once the ``google`` logger is configured. vertexbatch never lets request
content reach a log record, so its own calls through them (the online fallback,
``count_tokens``) run inside ``quiet_requests``: a filter on each logger drops those records only
while a vertexbatch call is under way in the same thread or task (a context variable), and the
caller's own use of the libraries logs as before.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextvars import ContextVar

__all__ = ["quiet_requests"]

# The loggers, and the starts of their messages, of the records that hold a body.
_RECORDS = {
    "anthropic._base_client": ("Request options",),
    "google.auth.transport.requests": ("Making request", "Response received"),
}

_quiet: ContextVar[bool] = ContextVar("vertexbatch_quiet_requests", default=False)


class _DropBodies(logging.Filter):
    def __init__(self, starts: tuple[str, ...]) -> None:
        super().__init__()
        self._starts = starts

    def filter(self, record: logging.LogRecord) -> bool:
        return not (
            _quiet.get() and isinstance(record.msg, str) and record.msg.startswith(self._starts)
        )


_FILTERS = {name: _DropBodies(starts) for name, starts in _RECORDS.items()}


@contextlib.contextmanager
def quiet_requests() -> Iterator[None]:
    """Run SDK calls whose records of request and answer bodies must not be logged."""
    for name, found in _FILTERS.items():
        logger = logging.getLogger(name)
        if found not in logger.filters:
            logger.addFilter(found)  # once per process: the filter passes everything else
    token = _quiet.set(True)
    try:
        yield
    finally:
        _quiet.reset(token)
