"""The GCS byte paths: create-only staging of objects (``staging``), uploads in one request or
resumable (``upload``, ``resumable``), and ranged streaming reads (``ranged_read``).

These modules use google-cloud-storage's private API where its public one buffers or retries
the wrong way; that use is kept behind this package's boundary.
"""
