"""The model catalogue: which publisher models the local service serves (thread-safe).

A create (or an online call) naming a model the catalogue does not hold fails as Vertex fails
it: 404 NOT_FOUND `The PublisherModel projects/…/publishers/P/models/M does not exist.` by
default, or with the code the stack was given. The default catalogue holds the models the
project's tests, docs, demo and benchmarks use; `LocalStack(models=...)` replaces it and
`LocalStack.add_model` extends it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from vertexbatch.emulator._errors import ApiError

__all__ = ["DEFAULT_MODELS", "PUBLISHERS", "VERSION_FORM", "Catalogue"]

PUBLISHERS: tuple[str, ...] = ("anthropic", "google")

DEFAULT_MODELS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "anthropic": ("claude-sonnet-4-5", "claude-opus-5-5", "claude-sonnet-5"),
        "google": ("gemini-2.5-flash", "gemini-3.8-flash"),
    }
)
"""The default catalogue, by publisher: the real ids the docs, demo and examples use
(`claude-sonnet-4-5`, `gemini-2.5-flash`), and fictional ones the project's tests use
(`claude-opus-5-5`, `claude-sonnet-5`, `gemini-3.8-flash`: no price table knows them). An id
without `@` holds the model with no version and every version of the forms Vertex uses
(`VERSION_FORM`: `claude-sonnet-4-5@default`, `claude-sonnet-4-5@20250929`,
`gemini-2.5-flash@001`), never another (`@no-such-version`); one with `@` holds only that
version."""

VERSION_FORM = re.compile(r"default|\d{8}|\d{3}")
"""The versions a bare catalogue id holds: `default`, a date `YYYYMMDD`, a number `NNN`."""


class Catalogue:
    """The publisher models one stack serves, and the error for any other.

    Args:
        models: model ids by publisher ("anthropic", "google"); None: DEFAULT_MODELS.
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
        for publisher, ids in (DEFAULT_MODELS if models is None else models).items():
            for model in ids:
                self.add(publisher, model)

    def add(self, publisher: str, model: str) -> None:
        """Serve `model` (a bare id, with or without `@version`) under `publisher`."""
        if publisher not in PUBLISHERS:
            raise ValueError(f"publisher must be one of {PUBLISHERS}")
        if not model or "/" in model:
            raise ValueError("model must be a bare model id such as 'claude-sonnet-4-5'")
        with self._lock:
            self._models[publisher].add(model)

    def remove(self, publisher: str, model: str) -> None:
        """Stop serving `model` under `publisher` (exactly that id; absent is no error)."""
        with self._lock:
            self._models.get(publisher, set()).discard(model)

    def models(self) -> dict[str, tuple[str, ...]]:
        """The models held now, by publisher, sorted."""
        with self._lock:
            return {publisher: tuple(sorted(ids)) for publisher, ids in self._models.items()}

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
        """Raise the ApiError Vertex answers when the model is not served."""
        if not self.holds(publisher, model):
            raise ApiError(
                self.missing_code,
                f"The PublisherModel projects/{project_number}/locations/{location}/publishers/"
                f"{publisher}/models/{model} does not exist.",
            )
