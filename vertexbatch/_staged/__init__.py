"""The staged folder of one submission id: the manifest that claims it
(``manifest``), staging rows create-only (``write``), and reading them back verified
(``read``). How an input is staged in parts: docs/guarantees.md, "Staged parts".

Imports: ``_requests``, ``_schemas``, ``_gcs``, ``_vertex``, ``_bigquery``, ``_observe``, and the
values, errors and rules.
"""
