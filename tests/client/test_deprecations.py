"""The deprecated public forms (issue 39): each still works for one release, warns with
``DeprecationWarning`` naming its replacement, and says so in its docstring.

``vertexbatch.wait(client, job)`` is ``client.wait(job)``, ``AsyncClient(client)`` is
``client.aio``, and ``PRICES_DATE`` / ``PRICES_SOURCE`` are ``PRICES.date`` / ``PRICES.source``.
"""

from __future__ import annotations

import asyncio
import re
import warnings
from collections.abc import Callable

import pytest

import vertexbatch as vb
from tests.helpers import CLAUDE, claude_requests
from vertexbatch.emulator import LocalStack


@pytest.mark.parametrize(
    ("old", "new"), [("PRICES_DATE", "date"), ("PRICES_SOURCE", "source")], ids=["date", "source"]
)
def test_the_price_table_constants_warn_and_are_the_table_attributes(old: str, new: str) -> None:
    """``vb.PRICES_DATE`` and ``vb.PRICES_SOURCE`` warn, naming ``PRICES.date`` / ``.source``,
    and give the same value."""
    with pytest.warns(DeprecationWarning, match=rf"vertexbatch\.{old} is deprecated: use "):
        value = getattr(vb, old)
    assert value == getattr(vb.PRICES, new) and value
    assert f"vertexbatch.PRICES.{new}" in str(_warning_of(lambda: getattr(vb, old)))


def test_deprecated_constants_are_not_exported_and_other_names_still_fail() -> None:
    """``from vertexbatch import *`` takes no deprecated name (so it never warns), and a name the
    package does not have is still an ``AttributeError``."""
    assert {"PRICES_DATE", "PRICES_SOURCE"}.isdisjoint(vb.__all__)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec("from vertexbatch import *", {})
    with pytest.raises(AttributeError, match="no attribute 'PRICES_TODAY'"):
        vb.PRICES_TODAY  # type: ignore[attr-defined]  # noqa: B018


def test_the_price_table_is_still_a_tuple_of_prices() -> None:
    """``PRICES`` is the same table as before, a tuple of ``Price``, now carrying its date and
    its sources."""
    assert isinstance(vb.PRICES, tuple) and all(isinstance(p, vb.Price) for p in vb.PRICES)
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", vb.PRICES.date) and "https://" in vb.PRICES.source


def test_the_deprecated_forms_refuse_a_non_client_naming_the_replacement() -> None:
    """``vb.wait`` and ``AsyncClient`` given something else than a client raise
    ``InvalidRequestError`` naming the call to use, before any warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(vb.InvalidRequestError, match=r"not str: call client\.wait\(job\)"):
            vb.wait("a client", "a job")  # type: ignore[arg-type]
        with pytest.raises(vb.InvalidRequestError, match=r"not str: use client\.aio") as info:
            vb.AsyncClient("a client")  # type: ignore[arg-type]
    assert info.value.field == "client"


def test_the_docstrings_say_deprecated_and_name_the_replacement() -> None:
    """Each deprecated callable's docstring says so and names what to use."""
    assert vb.wait.__doc__ and "Deprecated: use ``client.wait(job, ...)``" in vb.wait.__doc__
    assert vb.AsyncClient.__doc__ and "``AsyncClient(client)`` is deprecated" in (
        vb.AsyncClient.__doc__
    )
    assert "use ``client.aio``" in vb.AsyncClient.__doc__


def test_vertexbatch_wait_warns_and_waits_as_client_wait(
    client: vb.Client, stack: LocalStack
) -> None:
    """``vb.wait(client, job)`` warns, naming ``client.wait(job)``, and returns its status."""
    job = client.submit_claude("deprecated-wait", CLAUDE, claude_requests(1))
    stack.wait_job(job.name)
    with pytest.warns(DeprecationWarning, match=r"use client\.wait\(job\)"):
        status = vb.wait(client, job, floor=0.01, ceiling=0.05)
    assert status == client.wait(job, floor=0.01, ceiling=0.05)
    assert status.state == "JOB_STATE_SUCCEEDED"


def test_async_client_of_a_client_warns_and_is_a_view_of_it(
    client: vb.Client, stack: LocalStack
) -> None:
    """``AsyncClient(client)`` warns, naming ``client.aio``, and is an async view that works and
    closes with its client; ``client.aio`` itself never warns."""
    with pytest.warns(DeprecationWarning, match=r"use client\.aio"):
        view = vb.AsyncClient(client)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert isinstance(client.aio, vb.AsyncClient) and client.aio is not view

    async def main() -> vb.Job | None:
        await view.submit_claude("deprecated-view", CLAUDE, claude_requests(1))
        return await view.find("deprecated-view")

    assert asyncio.run(main()) is not None
    client.close()
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(view.find("deprecated-view"))


def _warning_of(call: Callable[[], object]) -> Warning | str:
    """The one warning ``call`` gives."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        call()
    (found,) = seen
    return found.message
