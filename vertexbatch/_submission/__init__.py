"""A submission's inputs on the client's side: its keywords as one frozen
options value (``options``), its requests turned into staged lines one at a time (``lines``),
requests kept as JSONL files under a GCS prefix (``request_files``), and the canary: its first
requests sent online before anything is staged (``canary``).

It sits in the layer of ``_client`` and ``_operations``, which use it. Imports: ``_plans``,
``_runs`` (task shares, a run's ledger), ``_providers`` (each row's builder and online call),
``_requests``, ``_schemas``, ``_rows`` (a canary's answer read as a row), ``_staged`` (the
id's manifest), ``_bigquery`` (a source's rows), ``_gcs``, ``_vertex`` (job controls, the
online calls), ``_cloud`` and ``_client_base``.
"""
