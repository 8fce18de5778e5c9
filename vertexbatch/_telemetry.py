"""OpenTelemetry GenAI metrics for yielded results; only ``opentelemetry-api`` is needed.

No request or response content ever becomes an attribute: only the model, provider, token type
and outcome.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from opentelemetry import metrics

from ._models import Job, Result

__all__ = ["Telemetry"]

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

    def record(self, result: Result, job: Job) -> None:
        base = {
            "gen_ai.operation.name": OPERATION,
            "gen_ai.provider.name": PROVIDER,
            "gen_ai.request.model": job.model,
        }
        usage = result.usage
        # Tokens are recorded once per paid line: not again for the other keys of a
        # deduplicated line, nor for an answer from the cache.
        if (usage.input or usage.output) and not (result.shared or result.cached):
            self._tokens.record(usage.input, {**base, "gen_ai.token.type": "input"})
            self._tokens.record(usage.output, {**base, "gen_ai.token.type": "output"})
        attributes = {**base, "vertexbatch.outcome": result.outcome}
        if result.error is not None:
            attributes["error.type"] = type(result.error).__name__
        self._results.add(1, attributes)
