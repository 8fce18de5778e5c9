"""A submission's inputs on the client's side: its keywords as one frozen
options value (``options``), its requests turned into staged lines one at a time (``lines``),
and requests kept as JSONL files under a GCS prefix (``request_files``).

It sits in the layer of ``_client`` and ``_operations``, which use it. Imports: ``_plans``,
``_runs`` (task shares), ``_providers`` (each row's builder), ``_requests``, ``_schemas``,
``_bigquery`` (a source's rows), ``_gcs``, ``_vertex`` (job controls), ``_cloud`` and
``_client_base``.
"""
