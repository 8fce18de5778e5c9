"""One job's protocol: submit by id (``submit``: list, adopt, create, record, cancel
twins), find what an id holds (``find``), read its output into results (``results``), and a
caller's results pass of it (``results_pass``: arguments checked, cache filled, traced).

Imports: ``_staged``, ``_cache``, ``_rows``, ``_vertex``, ``_gcs``, ``_bigquery``, ``_observe``,
``_cloud``, ``_providers`` (a sink table's id column), and the pure layers below them
(``_requests``, ``_schemas``, values, errors, rules, retry). Nothing here knows a ``Client``: it
is handed a ``Cloud`` (or its parts).
"""
