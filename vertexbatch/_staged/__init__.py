"""The staged folder of one submission id: the manifest that claims it
(``manifest``), staging rows create-only (``write``), and reading them back verified
(``read``).

Imports: ``_requests``, ``_schemas``, ``_gcs``, ``_vertex``, ``_bigquery``, observing.
"""
