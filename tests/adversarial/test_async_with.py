"""A blocking ``Client`` in ``async with`` (and its async view in ``with``) is refused with a
message naming the right form, before anything is opened or closed."""

from __future__ import annotations

import pytest

import vertexbatch as vb
from vertexbatch.emulator import LocalStack


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_async_with_a_client_from_env_names_async_with_client_aio(
    stack_env: str, anyio_backend: str
) -> None:
    """``async with vb.Client.from_env()`` says to use ``async with client.aio``, and leaves the
    client open."""
    client = vb.Client.from_env()
    with pytest.raises(TypeError, match=r"async with client\.aio"):
        async with client:
            pass  # pragma: no cover - never entered
    assert client.find("nothing-here") is None  # still open: the refusal closed nothing
    client.close()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_async_with_a_client_built_directly_names_async_with_client_aio(
    stack: LocalStack, bucket: str, anyio_backend: str
) -> None:
    """``async with vb.Client(...)`` (the constructor, ``for_endpoints``) says the same."""
    client = stack.client(bucket=bucket, prefix="jobs")
    with pytest.raises(TypeError, match=r"async with client\.aio"):
        async with client:
            pass  # pragma: no cover - never entered
    async with client.aio as aio:  # the form it names works
        assert await aio.find("nothing-here") is None


def test_with_the_async_view_names_async_with(stack: LocalStack, bucket: str) -> None:
    """``with client.aio`` (blocking ``with`` on the async view) says to use ``async with``."""
    client = stack.client(bucket=bucket, prefix="jobs")
    with pytest.raises(TypeError, match=r"async with client\.aio"), client.aio:
        pass  # pragma: no cover - never entered
    assert client.find("nothing-here") is None
    client.close()
