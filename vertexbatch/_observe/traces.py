"""OpenTelemetry traces: one span per public operation, child spans for the protocol's steps.

Only ``opentelemetry-api`` is needed; with no SDK installed every span is a no-op.

A span never carries request or response content: its attributes are the model, the provider,
the submission id, the job's resource name and counts; an error sets the span's status and
records the exception's *type* (``error.type`` and an ``exception`` event with
``exception.type`` only), never its message or traceback, which for a Google error may quote
what the service was sent.

The steps (``step``) are spans of the operation under way in this context (a ``ContextVar``
set by ``Tracing.operation``, which ``asyncio.to_thread`` and ``contextvars.copy_context`` carry
into threads): the modules of the protocol need no tracer handed down, and called on their own
(outside any operation) they record nothing.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, StatusCode

from .._values import Job, Result, Status
from .metrics import OPERATION, PROVIDER, _version

if TYPE_CHECKING:
    from opentelemetry.util.types import AttributeValue

__all__ = [
    "Tracing",
    "failed",
    "job_attributes",
    "note",
    "step",
    "stepped",
    "traced",
]

PREFIX = "vertexbatch."

_current: ContextVar[Tracing | None] = ContextVar("vertexbatch_tracing", default=None)

P = ParamSpec("P")
T = TypeVar("T")
S = TypeVar("S")


def job_attributes(job: object) -> dict[str, AttributeValue]:
    """What a span says about a job: its model, resource name, submission id and key count.

    Anything but a ``Job`` says nothing: the operation itself refuses it, with a clear error.
    """
    if not isinstance(job, Job):
        return {}
    return {
        "gen_ai.request.model": job.model,
        "vertexbatch.submission.id": job.id,
        "vertexbatch.job.name": job.name,
        "vertexbatch.job.keys": job.keys,
    }


class Tracing:
    """The tracer of one client (its ``tracer_provider``, else OpenTelemetry's global one).

    ``location``, when given, is every span's ``cloud.region`` (with ``cloud.provider=gcp``).
    """

    def __init__(
        self, tracer_provider: trace.TracerProvider | None = None, location: str | None = None
    ) -> None:
        provider = tracer_provider or trace.get_tracer_provider()
        self._tracer = provider.get_tracer("vertexbatch", _version())
        self._base: dict[str, AttributeValue] = {
            "gen_ai.operation.name": OPERATION,
            "gen_ai.provider.name": PROVIDER,
        }
        if location is not None:
            self._base.update({"cloud.provider": "gcp", "cloud.region": location})

    @contextlib.contextmanager
    def operation(
        self, name: str, attributes: Mapping[str, AttributeValue] | None = None
    ) -> Iterator[Span]:
        """A span for one public operation, current while the block runs; steps nest under it."""
        with self._span(name, attributes, SpanKind.CLIENT) as span:
            token = _current.set(self)
            try:
                yield span
            finally:
                _current.reset(token)

    @contextlib.contextmanager
    def _span(
        self, name: str, attributes: Mapping[str, AttributeValue] | None, kind: SpanKind
    ) -> Iterator[Span]:
        with self._tracer.start_as_current_span(
            PREFIX + name,
            kind=kind,
            attributes={**self._base, **(attributes or {})},
            record_exception=False,  # its message and traceback may quote request content
            set_status_on_exception=False,
        ) as span:
            try:
                yield span
            except BaseException as exc:
                failed(span, exc)
                raise

    def passing(
        self,
        results: Iterator[Result],
        attributes: Mapping[str, AttributeValue],
        name: str = "results",
    ) -> Iterator[Result]:
        """``results``, inside one span for the whole pass: its counts per outcome set at the end.

        The span is not made current: the caller's code runs between two results, and must not
        find itself inside this span.
        """
        span = self._tracer.start_span(
            PREFIX + name, kind=SpanKind.CLIENT, attributes={**self._base, **attributes}
        )
        counts: Counter[str] = Counter()
        answered = 0  # ok results, counted apart: nearly every result, and no outcome to work out
        try:
            for result in results:
                if result.error is None:
                    answered += 1
                else:
                    counts[result.outcome] += 1
                yield result
        except GeneratorExit:
            span.set_attribute("vertexbatch.results.complete", False)
            raise
        except BaseException as exc:
            failed(span, exc)
            raise
        else:
            span.set_attribute("vertexbatch.results.complete", True)
        finally:
            if answered:
                counts["ok"] += answered
            span.set_attribute("vertexbatch.results", sum(counts.values()))
            for outcome, count in sorted(counts.items()):
                span.set_attribute(f"vertexbatch.results.{outcome}", count)
            span.end()


def failed(span: Span, exc: BaseException) -> None:
    """Mark ``span`` failed with ``exc``'s type only (never its message)."""
    kind = type(exc).__qualname__
    span.set_attribute("error.type", kind)
    span.add_event("exception", {"exception.type": kind})
    span.set_status(StatusCode.ERROR, kind)


@contextlib.contextmanager
def step(name: str, attributes: Mapping[str, AttributeValue] | None = None) -> Iterator[Span]:
    """A child span of the operation under way in this context; a no-op outside any."""
    tracing = _current.get()
    if tracing is None:
        yield trace.INVALID_SPAN
        return
    with tracing._span(name, attributes, SpanKind.INTERNAL) as span:
        yield span


def stepped(name: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Decorate a function of the protocol with a ``step`` span named ``name``."""

    def decorate(function: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(function)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
            with step(name):
                return function(*args, **kwargs)

        return wrapper

    return decorate


def note(attributes: Mapping[str, AttributeValue]) -> None:
    """Set attributes on the current span, if it is this package's (an operation or a step)."""
    span = trace.get_current_span()
    if _current.get() is not None and span.is_recording():
        span.set_attributes(attributes)


def _attributes_of(arguments: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """The attributes a call's own arguments give: its id, model and job."""
    found: dict[str, AttributeValue] = {}
    found.update(job_attributes(arguments.get("job")))
    for name, attribute in (("id", "vertexbatch.submission.id"), ("model", "gen_ai.request.model")):
        value = arguments.get(name)
        if isinstance(value, str):
            found[attribute] = value
    return found


def _attributes_of_result(value: object) -> dict[str, AttributeValue]:
    if isinstance(value, Job):
        return job_attributes(value)
    if isinstance(value, Status):
        return {"vertexbatch.job.state": value.state}
    return {}


def traced(
    name: str, tracing_of: Callable[[S], Tracing]
) -> Callable[[Callable[Concatenate[S, P], T]], Callable[Concatenate[S, P], T]]:
    """Decorate a method with an operation span named ``name``.

    The span's attributes come from the arguments named ``id``, ``model`` and ``job`` (never
    from requests), and from the ``Job`` or ``Status`` it returns.
    """

    def decorate(method: Callable[Concatenate[S, P], T]) -> Callable[Concatenate[S, P], T]:
        signature = inspect.signature(method)

        @functools.wraps(method)
        def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
            bound = signature.bind_partial(self, *args, **kwargs)
            with tracing_of(self).operation(name, _attributes_of(bound.arguments)) as span:
                value = method(self, *args, **kwargs)
                if span.is_recording():
                    span.set_attributes(_attributes_of_result(value))
                return value

        return wrapper

    return decorate
