"""The GCS byte paths: create-only staging of objects (``staging``), each written in one request
(``upload``; a large input in parts, ``parts``), ranged streaming reads (``ranged_read``) and the
lines of the ranges read (``line_blocks``, pure).

These modules use google-cloud-storage's private API where its public one buffers or retries
the wrong way; that use is kept behind this package's boundary.

Imports: ``_errors``, ``_retry``, ``_rules`` (``Limits``); nothing above the values layer, as
every package that touches GCS imports this one.
"""
