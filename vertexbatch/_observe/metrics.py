"""OpenTelemetry GenAI metrics for yielded results; only ``opentelemetry-api`` is needed.

No request or response content ever becomes an attribute: only the model, provider, token type
and outcome. Metrics are recorded per result as it is yielded, with attribute sets built once per
model, outcome and error type.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from opentelemetry import metrics

from .._values import Job, Result

__all__ = ["SILENT", "Telemetry"]

# The GenAI semantic conventions' advisory buckets for token counts.
_TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304]
OPERATION = "batch_predict"
PROVIDER = "gcp.vertex_ai"


def _version() -> str:
    try:
        return version("vertexbatch")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"


class Telemetry:
    """Records each yielded result: token usage and outcome."""

    def __init__(self, meter_provider: metrics.MeterProvider | None) -> None:
        provider = meter_provider or metrics.get_meter_provider()
        meter = provider.get_meter("vertexbatch", _version())
        self._tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self._results = meter.create_counter(
            "vertexbatch.results",
            unit="{result}",
            description="Batch results yielded, by outcome",
        )

        # Attribute sets built once per model, outcome and error type, then reused (never
        # modified): one result per output row, and building them was most of the cost.
        self._attributes: dict[tuple[str, str, str], dict[str, str]] = {}
        self._token_attributes: dict[str, tuple[dict[str, str], dict[str, str]]] = {}

    def record(self, result: Result, job: Job) -> None:
        usage = result.usage
        # Tokens are recorded once per paid line: not again for the other keys of a
        # deduplicated line, nor for an answer from the cache.
        if (usage.input or usage.output) and not (result.shared or result.cached):
            tokens = self._token_attributes.get(job.model)
            if tokens is None:
                if len(self._token_attributes) >= _MAX_SETS:
                    self._token_attributes.clear()
                tokens = self._token_attributes[job.model] = (
                    {**_base(job), "gen_ai.token.type": "input"},
                    {**_base(job), "gen_ai.token.type": "output"},
                )
            self._tokens.record(usage.input, tokens[0])
            self._tokens.record(usage.output, tokens[1])
        error = result.error
        kind = "" if error is None else type(error).__name__
        attributes = self._attributes.get((job.model, result.outcome, kind))
        if attributes is None:
            if len(self._attributes) >= _MAX_SETS:  # many models in one long-lived client
                self._attributes.clear()
            attributes = {**_base(job), "vertexbatch.outcome": result.outcome}
            if error is not None:
                attributes["error.type"] = kind
            self._attributes[(job.model, result.outcome, kind)] = attributes
        self._results.add(1, attributes)


# Attribute sets kept before starting over (models x outcomes x error types).
_MAX_SETS = 256


def _base(job: Job) -> dict[str, str]:
    return {
        "gen_ai.operation.name": OPERATION,
        "gen_ai.provider.name": PROVIDER,
        "gen_ai.request.model": job.model,
    }


# For the library's own passes over results (a run's steps, ``resubmit`` choosing its keys):
# only a caller's reading is recorded, once per result it is yielded.
SILENT = Telemetry(metrics.NoOpMeterProvider())
