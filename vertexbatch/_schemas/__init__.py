"""Answer schemas (pure): checked and digested (``check``), written into a request in
each provider's form (``forms``), and an answer validated into ``Result.parsed`` (``parsed``),
built as a results pass's pydantic class when it was given one (``parsed.typed_result``).

Imports: values, errors, ``_json``.
"""
