"""The answer cache: one create-only entry per request digest (``entry``, pure), the store over
GCS (``store``), a ``cache=True`` submission and its ``cached:ID`` job (``submission``), the
generations of the ``gs://`` objects its requests name (``files``), and filling the cache while
a results pass reads (``fill``).

This package owns the ``cached:ID`` job kind: ``submission.is_cached_job`` is the one test of it.

Imports: ``_staged`` (the manifest and key map), ``_rows`` (a cached answer's ``Result``),
``_requests`` (digests), ``_schemas``, ``_vertex``, ``_gcs`` and the values below them; never
``_job``, which uses it on both sides (submitting and reading).
"""
