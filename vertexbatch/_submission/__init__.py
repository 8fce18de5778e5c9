"""A submission's inputs on the client's side: its keywords as one frozen
options value (``options``), its requests turned into staged lines one at a time (``lines``),
and requests kept as JSONL files under a GCS prefix (``request_files``).

Imports: ``_requests``, ``_plans``, ``_runs`` (task shares), ``_bigquery``, ``_cloud``.
"""
