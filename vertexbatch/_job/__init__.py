"""One job's protocol: submit by id (``submit``: list, adopt, create, record, cancel
twins), find what an id holds (``find``), and read its output into results (``results``).

Imports: ``_staged``, ``_cache``, ``_rows``, ``_vertex``, ``_gcs``, ``_bigquery``, ``_observe``,
and the pure layers below them (``_requests``, ``_schemas``, values, errors, rules, retry).
Nothing here knows a ``Client``: it is handed a ``Cloud``.
"""
