"""The GCS byte paths: create-only staging of objects (``staging``), each written in one request
(``upload``; a large input in parts, ``parts``), and ranged streaming reads (``ranged_read``).

These modules use google-cloud-storage's private API where its public one buffers or retries
the wrong way; that use is kept behind this package's boundary.
"""
