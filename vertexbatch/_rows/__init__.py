"""One output row into one ``Result`` (pure, fail closed).

``classify`` decides every outcome; ``fast_path`` reads the usual row in one step and is held
equal to ``classify`` by a property test; ``failures`` reads a per-line error; ``content``
reads an answer's text and tool calls; ``build`` makes a row's ``Result`` fast.

Imports: values, errors, ``_json``, ``_retry``'s rules, ``_requests`` (digests).
"""
