"""Request building and checking (pure): what each request becomes on the wire.

The caller's requests become input lines here (``lines``), checked before anything is staged:
the SDK fields a request may carry (``sdk_fields``, walked by ``type_walk``), the field check
(``field_check``), each provider's body (``claude_shape``, ``gemini_body``), plain JSON and its
strict encoders (``plain_json``), the importer's rules and column types (``importer_rules``,
``importer_types``), the digests keys travel under and the key map (``keymap``), and dedupe
(``dedupe``).

Imports: values, errors, ``_json`` and ``_schemas``; no I/O. The local stack imports
``sdk_fields`` (its model refuses an unknown field by the same table), so ``sdk_fields`` imports
nothing of vertexbatch but ``type_walk``, and ``type_walk`` nothing at all
(tests/guards/test_layers.py, ``SHARED_WITH_STACK``).
"""
