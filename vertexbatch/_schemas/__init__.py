"""Answer schemas (pure): checked and digested (``check``), written into a request in
each provider's form (``forms``), and an answer validated into ``Result.parsed`` (``parsed``).

Imports: values, errors, ``_json``.
"""
