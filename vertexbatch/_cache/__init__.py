"""The answer cache: one create-only entry per request digest (``entry``), the store over GCS
(``store``), a ``cache=True`` submission and its ``cached:ID`` job (``submission``), and filling
the cache while a results pass reads (``fill``).

This package owns the ``cached:ID`` job kind: ``submission.is_cached_job`` is the one test of it.
"""
