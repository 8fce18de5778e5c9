"""One job's protocol: submit by id (``submit``: list, adopt, create, record, cancel
twins), find what an id holds (``find``), and read its output into results (``results``).

Imports: ``_staged``, ``_cache``, ``_rows``, ``_vertex``, ``_gcs``, ``_bigquery``.
"""
