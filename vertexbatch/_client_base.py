"""``ClientBase``: what the layers a ``Client`` is built from may know of a client.

``Client`` makes its async view (``client.aio``) and waits (``Client.wait``), so ``_aio`` and
``_waiting.wait`` sit below ``_client`` and cannot import it. They take a client all the same (the
public ``AsyncClient(client)`` and ``vertexbatch.wait(client, job)``): this base, which ``Client``
alone derives from, is how they refuse anything else and reach the client's ``Cloud``, without a
dependency pointing up (docs/architecture.md, Layers).
"""

from __future__ import annotations

from types import TracebackType
from typing import NoReturn

from ._cloud import Cloud
from ._errors import InvalidRequestError
from ._lifecycle import Lifecycle

__all__ = ["ASYNC_WITH", "ClientBase", "check_client", "cloud_of", "lifecycle_of"]

# The one message of a blocking client in ``async with`` and of its async view in ``with``:
# as in google-genai, the client is blocking and ``client.aio`` is its async view.
ASYNC_WITH = (
    "{what} is not {how} context manager: use 'async with client.aio as aio:' in async code "
    "(it closes the client at its end), or 'with client:' in blocking code"
)


class ClientBase:
    """The base of ``Client``: its ``Cloud`` (``_cloud``), refused once the client is closed."""

    __slots__ = ()
    _life: Lifecycle  # what the client built, closed with it (its views' too: ``client.aio``)

    @property
    def _cloud(self) -> Cloud:
        raise NotImplementedError  # pragma: no cover - Client defines it

    # ``async with Client(...)``: refused with the right form rather than Python's bare
    # "does not support the asynchronous context manager protocol". Nothing is opened or
    # closed: ``__aexit__`` is never reached, as ``__aenter__`` raises.
    async def __aenter__(self) -> NoReturn:
        raise TypeError(ASYNC_WITH.format(what="vertexbatch.Client", how="an async"))

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None  # pragma: no cover - __aenter__ always raises


def check_client(client: object, how: str) -> None:
    """Refuse anything but a ``Client`` before it is used (a swapped argument, say).

    Raises:
        InvalidRequestError: ``client`` is not a ``vertexbatch.Client`` (``field == "client"``);
            ``how`` is the right call, for the message.
    """
    if not isinstance(client, ClientBase):
        raise InvalidRequestError(
            f"client must be a vertexbatch.Client, not {type(client).__name__}: {how}",
            field="client",
        )


def cloud_of(client: ClientBase) -> Cloud:
    """The ``Cloud`` of ``client``, for work that takes one (``vertexbatch doctor``'s checks)."""
    return client._cloud


def lifecycle_of(client: ClientBase) -> Lifecycle:
    """The ``Lifecycle`` of ``client``: what its views (``client.aio``) close with it."""
    return client._life
