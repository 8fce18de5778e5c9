"""The model catalogue: which publisher models the local service serves, and where (thread-safe).

A create (or an online call) naming a model the catalogue does not hold fails as Vertex fails
it: 404 NOT_FOUND `The PublisherModel projects/…/publishers/P/models/M does not exist.` by
default, or with the code the stack was given, and the message goes on to say that the model is
missing from the local stack's catalogue and how to add it (`LocalStack.add_model`,
`vertexbatch emulator --model P/M`).

The default catalogue holds the fictional and real ids the project's tests, docs, demo and
benchmarks use (`DEFAULT_MODELS`, served in every location) and every anthropic and google model
of the client's catalogue (`vertexbatch/_catalogue/models.toml`: `catalogued()`). A model held
only because the client's catalogue lists it is served in the locations its row gives (none
given: everywhere); under another location a create or online call gets the same 404, saying
where the catalogue serves it (Vertex answers a model a region does not serve as not found; its
exact words there are UNCONFIRMED). `add_model` serves a model everywhere. `LocalStack(models=)`
replaces the whole default, the client's catalogue included.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from vertexbatch._catalogue import catalogue
from vertexbatch.emulator._errors import ApiError

__all__ = [
    "DEFAULT_MODELS",
    "OPEN_PUBLISHERS",
    "PUBLISHERS",
    "VERSION_FORM",
    "Catalogue",
    "catalogued",
    "missing_hint",
]

OPEN_PUBLISHERS: tuple[str, ...] = (
    "meta", "mistralai", "qwen", "deepseek-ai", "openai", "ai21", "xai", "moonshotai",
)  # fmt: skip
"""The publishers of Vertex's managed open models ("Model-as-a-Service"): their lines are in the
OpenAI batch format and answered in the OpenAI shape (`_openmaas.py`)."""
PUBLISHERS: tuple[str, ...] = ("anthropic", "google", *OPEN_PUBLISHERS)

DEFAULT_MODELS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "anthropic": ("claude-sonnet-4-5", "claude-opus-5-5", "claude-sonnet-5"),
        "google": ("gemini-2.5-flash", "gemini-3.8-flash"),
    }
)
"""The ids served in every location by default, by publisher (the client's catalogue is served
too, where it says: `catalogued()`): the real ids the docs, demo and examples use
(`claude-sonnet-4-5`, `gemini-2.5-flash`), and fictional ones the project's tests use
(`claude-opus-5-5`, `claude-sonnet-5`, `gemini-3.8-flash`: no price table knows them). An id
without `@` holds the model with no version and every version of the forms Vertex uses
(`VERSION_FORM`: `claude-sonnet-4-5@default`, `claude-sonnet-4-5@20250929`,
`gemini-2.5-flash@001`), never another (`@no-such-version`); one with `@` holds only that
version."""

VERSION_FORM = re.compile(r"default|\d{8}|\d{3}")
"""The versions a bare catalogue id holds: `default`, a date `YYYYMMDD`, a number `NNN`."""


def catalogued() -> tuple[tuple[str, str, frozenset[str]], ...]:
    """(publisher, bare id, locations) of every model in the client's catalogue the stack can
    serve (publishers `PUBLISHERS`, an open model's read from its `PUBLISHER/MODEL` id; a row
    of another publisher is left out). Read from
    `vertexbatch._catalogue.catalogue()`, the one list of models vertexbatch knows."""
    served = []
    for row in catalogue():
        publisher, model = row.publisher, row.id
        if "/" in model:  # an open model's PUBLISHER/MODEL id (the openmaas lane)
            publisher, _, model = model.partition("/")
        if publisher in PUBLISHERS:
            served.append((publisher, model, frozenset(row.locations)))
    return tuple(served)


class Catalogue:
    """The publisher models one stack serves, where, and the error for any other.

    Args:
        models: model ids by publisher ("anthropic", "google"), served everywhere; None:
            `DEFAULT_MODELS` everywhere and the client's catalogue (`catalogued()`) in the
            locations its rows give.
        missing_code: the HTTP code of the error for a model not held (404 NOT_FOUND, as Vertex;
            400 gives INVALID_ARGUMENT).
    """

    def __init__(
        self, models: Mapping[str, Iterable[str]] | None = None, missing_code: int = 404
    ) -> None:
        if not 400 <= missing_code <= 599:
            raise ValueError("missing_code must be an HTTP error code (400 to 599)")
        self.missing_code = missing_code
        self._lock = threading.Lock()
        self._models: dict[str, set[str]] = {publisher: set() for publisher in PUBLISHERS}
        # (publisher, bare id) -> the only locations serving it: catalogue rows not also held
        # everywhere (a DEFAULT_MODELS id, or one added).
        self._where: dict[tuple[str, str], frozenset[str]] = {}
        for publisher, ids in (DEFAULT_MODELS if models is None else models).items():
            for model in ids:
                self.add(publisher, model)
        if models is None:
            for publisher, model, locations in catalogued():
                if model not in self._models[publisher]:  # a DEFAULT_MODELS id: everywhere
                    self.add(publisher, model, locations or None)

    def add(self, publisher: str, model: str, locations: Iterable[str] | None = None) -> None:
        """Serve `model` (a bare id, with or without `@version`) under `publisher`: in every
        location, or (`locations`) only in those (of the model without `@version`)."""
        if publisher not in PUBLISHERS:
            raise ValueError(f"publisher must be one of {PUBLISHERS}")
        if not model or "/" in model:
            raise ValueError("model must be a bare model id such as 'claude-sonnet-4-5'")
        where = None if locations is None else frozenset(locations)
        if where is not None and (not where or not all(isinstance(n, str) for n in where)):
            raise ValueError("locations must be location names (at least one), or None")
        with self._lock:
            self._models[publisher].add(model)
            key = (publisher, model.partition("@")[0])
            if where is None:
                self._where.pop(key, None)
            else:
                self._where[key] = where

    def remove(self, publisher: str, model: str) -> None:
        """Stop serving `model` under `publisher` (exactly that id; absent is no error)."""
        with self._lock:
            self._models.get(publisher, set()).discard(model)
            self._where.pop((publisher, model), None)

    def models(self) -> dict[str, tuple[str, ...]]:
        """The models held now, by publisher, sorted (an open model's publisher when it holds
        one)."""
        with self._lock:
            return {
                publisher: tuple(sorted(ids))
                for publisher, ids in self._models.items()
                if ids or publisher not in OPEN_PUBLISHERS  # an open publisher only when held
            }

    def locations(self, publisher: str, model: str) -> frozenset[str] | None:
        """The only locations serving `model` (a catalogue row's), None for every location."""
        with self._lock:
            return self._where.get((publisher, model.partition("@")[0]))

    def listed_locations(self) -> frozenset[str]:
        """Every location some model is served only in (the stack serves each of them)."""
        with self._lock:
            return frozenset().union(*self._where.values())

    def holds(self, publisher: str, model: str) -> bool:
        """Whether `publisher/model` is served: the id itself, or its model without `@version`
        when the version has a form Vertex uses (`VERSION_FORM`)."""
        with self._lock:
            ids = self._models.get(publisher)
            if ids is None:
                return False
            bare, at, version = model.partition("@")
            return model in ids or (
                bare in ids and (not at or VERSION_FORM.fullmatch(version) is not None)
            )

    def check(self, project_number: str, location: str, publisher: str, model: str) -> None:
        """Raise the ApiError Vertex answers when the model is not served in `location`."""
        held = self.holds(publisher, model)
        where = self.locations(publisher, model) if held else None
        if held and (where is None or location in where):
            return
        vertex = (
            f"The PublisherModel projects/{project_number}/locations/{location}/publishers/"
            f"{publisher}/models/{model} does not exist."
        )
        raise ApiError(
            self.missing_code, f"{vertex} {missing_hint(publisher, model, location, where)}"
        )


def missing_hint(
    publisher: str, model: str, location: str = "", where: frozenset[str] | None = None
) -> str:
    """What the local stack adds to Vertex's message: why, and how to serve the model."""
    bare = model.partition("@")[0]
    if where is not None:
        return (
            f"(Local stack: its catalogue serves {publisher}/{bare} in {', '.join(sorted(where))}"
            f", not in {location}, as vertexbatch's model catalogue lists it; create the job in "
            f"one of those, or serve it everywhere with LocalStack.add_model({publisher!r}, "
            f"{bare!r}) or `vertexbatch emulator --model {publisher}/{bare}`.)"
        )
    return (
        f"(Local stack: {publisher}/{model} is not in the local stack's model catalogue; add it "
        f"with LocalStack.add_model({publisher!r}, {bare!r}) or `vertexbatch emulator --model "
        f"{publisher}/{bare}`.)"
    )


def model_option(text: str) -> tuple[str, str]:
    """`PUBLISHER/MODEL` (`vertexbatch emulator --model google/gemini-3.5-flash`) as
    (publisher, model id).

    Raises:
        ValueError: not of that form, or a publisher the stack does not serve.
    """
    publisher, slash, model = text.partition("/")
    if not slash or publisher not in PUBLISHERS or not model or "/" in model:
        raise ValueError(
            f"model {text!r} must be PUBLISHER/MODEL, PUBLISHER one of {', '.join(PUBLISHERS)} "
            "(e.g. google/gemini-3.5-flash, anthropic/claude-haiku-4-5@20251001)"
        )
    return publisher, model
