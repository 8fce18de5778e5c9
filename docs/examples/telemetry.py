"""Record vertexbatch's metrics with the OpenTelemetry SDK and print them.

In production, pass the MeterProvider your exporter is set up with; this one keeps the points
in memory so they can be printed.
"""

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

import vertexbatch as vb

reader = InMemoryMetricReader()
provider = MeterProvider(metric_readers=[reader])
with vb.Client.from_env(meter_provider=provider) as client:
    params = {
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "Summarise the incident."}],
    }
    job = client.submit_claude("telemetry-1", "claude-sonnet-4-5", [vb.ClaudeRequest("a", params)])
    client.wait(job, floor=1)
    for result in client.results(job):  # each result yielded is recorded
        print(result.key, result.outcome, result.usage)

    for resource in reader.get_metrics_data().resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    print(metric.name, dict(point.attributes or {}))
