"""Observing: OpenTelemetry metrics (``metrics``) and traces (``traces``), progress
of long work (``progress``), and third-party SDK logs kept quiet (``sdk_logs``).

No request or response content ever reaches any of them. Imports: values and errors only.
"""
