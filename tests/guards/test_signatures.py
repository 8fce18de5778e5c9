"""The async view keeps the blocking one's signatures, by this test rather than by copying.

Every public method of ``Client`` has an ``AsyncClient`` method of the same name taking the same
parameters (names, kinds, defaults, annotations as written), and every public method of ``Run``
an ``AsyncRun`` one; the few that differ on purpose are named below with the reason. Return
annotations are not compared: an async method returns its awaitable or stream view
(``AsyncRun``, ``ResultStream``).
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import vertexbatch as vb
from vertexbatch import AsyncClient, AsyncRun, Client, Run, _operations
from vertexbatch._submission import options as _submit_options
from vertexbatch._submission.options import PlanKeywords, RunKeywords, SubmitKeywords

# Blocking members with no async twin of the same name, and why.
NO_TWIN: dict[type, dict[str, str]] = {
    Client: {
        "aio": "the async view itself",
        "close": "AsyncClient.aclose, which waits for the calls under way off the loop",
        "from_env": "a constructor: build the Client, then take client.aio",
        "for_endpoints": "a constructor: build the Client, then take client.aio",
    },
    Run: {},
}
# Parameters whose annotation differs on purpose: (class, method, parameter) -> why.
ANNOTATION_DIFFERS: dict[tuple[type, str, str], str] = {
    (
        Client,
        "wait",
        "sleep",
    ): "the async wait awaits its sleep: Callable[[float], Awaitable[None]]",
}
PAIRS = [(Client, AsyncClient), (Run, AsyncRun)]


def _public(cls: type) -> dict[str, Any]:
    """The public methods and properties of ``cls`` (its own and inherited, not object's)."""
    return {
        name: value
        for klass in reversed(cls.__mro__[:-1])
        for name, value in vars(klass).items()
        if not name.startswith("_")
    }


def _function(member: Any) -> Any:
    """The function under a member (a classmethod's, a property's getter), or ``None``."""
    if isinstance(member, classmethod | staticmethod):
        return member.__func__
    if isinstance(member, property):
        return None
    return member if callable(member) else None


def _parameters(function: Any) -> list[tuple[str, str, str, str]]:
    """Each parameter as (name, kind, default, annotation), all as written in the source."""
    signature = inspect.signature(function, eval_str=False)
    return [
        (p.name, p.kind.name, repr(p.default), str(p.annotation))
        for p in signature.parameters.values()
    ]


def differences(sync: type, aio: type) -> list[str]:
    """Each public member of ``sync`` its async twin lacks or takes other parameters for."""
    found = []
    twins = _public(aio)
    for name, member in sorted(_public(sync).items()):
        if name in NO_TWIN[sync]:
            continue
        if name not in twins:
            found.append(f"{aio.__name__} has no {name}")
            continue
        blocking, awaited = _function(member), _function(twins[name])
        if (blocking is None) != (awaited is None):
            found.append(f"{aio.__name__}.{name} is not the same kind of member")
            continue
        if blocking is None:  # properties: the same name is all there is to hold
            continue
        ours, theirs = _parameters(blocking), _parameters(awaited)
        for index, (mine, twin) in enumerate(zip(ours, theirs, strict=False)):
            if (sync, name, mine[0]) in ANNOTATION_DIFFERS and mine[:3] == twin[:3]:
                continue
            if mine != twin:
                found.append(f"{aio.__name__}.{name} parameter {index}: {twin} != {mine}")
        if len(ours) != len(theirs):
            found.append(f"{aio.__name__}.{name} takes {len(theirs)} parameters, not {len(ours)}")
    return found


@pytest.mark.parametrize(("sync", "aio"), PAIRS, ids=lambda cls: cls.__name__)
def test_the_async_view_takes_the_same_parameters(sync: type, aio: type) -> None:
    assert differences(sync, aio) == []


def test_the_named_exceptions_exist() -> None:
    """Each named exception is a real member (a renamed one must leave the list)."""
    for cls, names in NO_TWIN.items():
        assert set(names) <= set(_public(cls)), cls.__name__
    for cls, method, parameter in ANNOTATION_DIFFERS:
        assert parameter in inspect.signature(_public(cls)[method]).parameters


def test_the_check_names_a_missing_twin_and_a_changed_parameter() -> None:
    """The check itself, on two small classes: a method missing, a default changed."""

    class Sync:
        def go(self, x: int, *, fast: bool = False) -> int:
            return x

        def stop(self) -> None:
            pass

    class Async:
        async def go(self, x: int, *, fast: bool = True) -> int:
            return x

    NO_TWIN[Sync] = {}
    try:
        found = differences(Sync, Async)
    finally:
        del NO_TWIN[Sync]
    assert found == [
        "Async.go parameter 2: ('fast', 'KEYWORD_ONLY', 'True', 'bool') != "
        "('fast', 'KEYWORD_ONLY', 'False', 'bool')",
        "Async has no stop",
    ]


# Each entry point that takes its keywords as ``**options: Unpack[...]``, with a request of its
# provider: a TypedDict is not checked at run time, so the entry point checks them itself.
ENTRY_POINTS = [
    (f"{kind}_{provider}", request)
    for kind in ("submit", "plan", "run")
    for provider, request in (
        ("claude", vb.ClaudeRequest("k", [{"role": "user", "content": "hi"}])),
        ("gemini", vb.GeminiRequest("k", "hi")),
    )
]


@pytest.mark.parametrize(("method", "request_"), ENTRY_POINTS, ids=[m for m, _ in ENTRY_POINTS])
def test_an_unknown_keyword_is_refused_as_python_refuses_it(
    counted: tuple[vb.Client, list[str]], method: str, request_: Any
) -> None:
    """A misspelt option (``cache_tll``) raises the ``TypeError`` a plain keyword would, naming
    it, before any cloud call: it is never taken for the default."""
    client, seen = counted
    model = "claude-x@1" if method.endswith("claude") else "gemini-x"
    with pytest.raises(
        TypeError, match=rf"^{method}\(\) got an unexpected keyword argument 'cache_tll'$"
    ):
        getattr(client, method)("typo", model, [request_], cache_tll=None)
    assert seen == []


@pytest.mark.anyio
@pytest.mark.parametrize(("method", "request_"), ENTRY_POINTS, ids=[m for m, _ in ENTRY_POINTS])
async def test_the_async_view_refuses_an_unknown_keyword_the_same_way(
    counted: tuple[vb.Client, list[str]], method: str, request_: Any
) -> None:
    client, seen = counted
    model = "claude-x@1" if method.endswith("claude") else "gemini-x"
    with pytest.raises(TypeError, match=rf"^{method}\(\) got an unexpected keyword argument 'x'$"):
        await getattr(client.aio, method)("typo", model, [request_], x=1)
    assert seen == []


@pytest.mark.parametrize("kind", [SubmitKeywords, PlanKeywords, RunKeywords])
def test_every_keyword_an_entry_point_takes_is_one_it_uses(kind: type) -> None:
    """The keyword lists are the methods' whole surface: each names only what the operation
    reads (a key added to a TypedDict but never read would be silently ignored)."""
    source = inspect.getsource(_operations) + inspect.getsource(_submit_options)
    for name in kind.__optional_keys__:  # type: ignore[attr-defined]
        assert f'given.get("{name}"' in source, name
