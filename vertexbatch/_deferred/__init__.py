"""Google's client libraries, imported no further than a call needs: a cold process pays for
every module it imports (docs/performance.md, "The job service alone").

- ``aiplatform``: ``aiplatform_v1``'s job service and its types without the rest of the package
  (``job_service``), the package left whole to whoever imports it later.

Imports nothing of vertexbatch: every layer above may use it.
"""
