"""The staged folder of one submission id: the manifest that claims it
(``manifest``) and what a submission records in it beside its rows (``amend``; a usage per
tier, as records keep one: ``usage``), staging rows create-only (``write``), and reading them
back verified (``read``). How an input is staged in parts: docs/guarantees.md, "Staged parts".

Imports: ``_requests``, ``_schemas``, ``_gcs``, ``_vertex``, ``_bigquery``, ``_observe``, and the
values, errors and rules.
"""
