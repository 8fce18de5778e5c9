"""A pytest plugin that runs google-genai's own tests against the local stack, unchanged.

Loaded only by tests/emulator/test_genai_bigquery.py's pytest subprocesses (`-p
tests.emulator.genai_harness`). Two things genai's harness has and this project does not:

- pytest-asyncio: each `@pytest.mark.asyncio` coroutine test runs in a fresh event loop, all
  those tests need.
- a base URL: `genai.Client` reads GOOGLE_VERTEX_BASE_URL (`_base_url.get_base_url`), but genai's
  conftest builds its `ReplayApiClient` itself, with no HttpOptions; this hands that client the
  base URL, project and location, as `genai.Client(project=, location=, http_options=)` would.

And one of ours: the tests named by VERTEXBATCH_GENAI_XFAIL become strict xfails (no test body
is changed).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import sys
from typing import Any

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "asyncio: run the coroutine test in an event loop")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests VERTEXBATCH_GENAI_XFAIL names (JSON: node id ending -> reason) strict
    xfails: each needs what the stack cannot do, and passing would fail the run."""
    reasons: dict[str, str] = json.loads(os.environ.get("VERTEXBATCH_GENAI_XFAIL", "{}"))
    for item in items:
        for ending, reason in reasons.items():
            if item.nodeid.split("[", 1)[0].endswith(ending):
                item.add_marker(pytest.mark.xfail(strict=True, reason=reason))


def pytest_collection_finish(session: pytest.Session) -> None:
    base_url = os.environ.get("GOOGLE_VERTEX_BASE_URL")
    if not base_url:
        return
    for name, module in list(sys.modules.items()):
        if not name.endswith("._replay_api_client") or module is None:
            continue
        replay: Any = module.ReplayApiClient
        if getattr(replay, "_local_stack_base_url", False):
            continue
        original = replay.__init__

        def init(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> None:
            if kwargs.get("vertexai") and kwargs.get("http_options") is None:
                kwargs["http_options"] = {"base_url": base_url}
                # Named, so that genai keeps project and location in the path (with a bare
                # base URL it takes a proxy and drops them).
                kwargs["project"] = kwargs.get("project") or os.environ["GOOGLE_CLOUD_PROJECT"]
                kwargs["location"] = kwargs.get("location") or os.environ["GOOGLE_CLOUD_LOCATION"]
            _original(self, *args, **kwargs)

        replay.__init__ = init
        replay._local_stack_base_url = True


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    function: Any = pyfuncitem.obj
    if not inspect.iscoroutinefunction(function):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    asyncio.run(function(**{name: pyfuncitem.funcargs[name] for name in names}))
    return True
