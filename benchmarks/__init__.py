"""Throughput and memory of vertexbatch against raw baselines, on the local stack.

Run ``python -m benchmarks.run`` (or ``python benchmarks/run.py``); see docs/performance.md.
"""
