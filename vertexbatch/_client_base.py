"""``ClientBase``: what the layers a ``Client`` is built from may know of a client.

``Client`` makes its async view (``client.aio``) and waits (``Client.wait``), so ``_aio`` and
``_wait`` sit below ``_client`` and cannot import it. They take a client all the same (the public
``AsyncClient(client)`` and ``vertexbatch.wait(client, job)``): this base, which ``Client`` alone
derives from, is how they refuse anything else and reach the client's ``Cloud``, without a
dependency pointing up (docs/architecture.md, Layers).
"""

from __future__ import annotations

from ._cloud import Cloud
from ._errors import InvalidRequestError

__all__ = ["ClientBase", "check_client", "cloud_of"]


class ClientBase:
    """The base of ``Client``: it holds the ``Cloud`` the client built once (``_cloud``)."""

    __slots__ = ()
    _cloud: Cloud


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
