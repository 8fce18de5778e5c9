"""Third-party debug logging that would show request content, kept out of vertexbatch's calls.

The anthropic SDK logs every request's options, the JSON body included (the prompt), at DEBUG
on ``anthropic._base_client``. vertexbatch never lets request content reach a log line, so its
own calls through the SDK (the online fallback, ``count_tokens``) run inside ``quiet_requests``:
a filter on that logger drops those records only while a vertexbatch call is under way in the
same thread or task (a context variable), and the caller's own use of the SDK logs as before.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextvars import ContextVar

__all__ = ["quiet_requests"]

# The logger and message of the SDK's record that holds the request body.
_LOGGER = "anthropic._base_client"
_REQUEST_OPTIONS = "Request options"

_quiet: ContextVar[bool] = ContextVar("vertexbatch_quiet_requests", default=False)


class _DropRequestOptions(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (
            _quiet.get() and isinstance(record.msg, str) and record.msg.startswith(_REQUEST_OPTIONS)
        )


_FILTER = _DropRequestOptions()


@contextlib.contextmanager
def quiet_requests() -> Iterator[None]:
    """Run SDK calls whose request-options records must not be logged."""
    logger = logging.getLogger(_LOGGER)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)  # once per process: the filter passes everything else
    token = _quiet.set(True)
    try:
        yield
    finally:
        _quiet.reset(token)
