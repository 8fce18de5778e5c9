"""Request building and checking (pure): what each request becomes on the wire.

The caller's requests become input lines here, checked before anything is staged: the SDK
fields a request may carry (``sdk_fields``, walked by ``type_walk``), the field check, each
provider's body (``claude_shape``, ``gemini_body``), plain JSON and its strict encoders
(``plain_json``), the importer's rules and column types (``importer_rules``,
``importer_types``), the digests keys travel under and the key map (``keymap``), and dedupe.

Imports: values, errors, ``_json`` and ``_schemas``; no I/O. ``sdk_fields`` and ``type_walk``
import nothing else of the package: the local stack shares them.
"""
