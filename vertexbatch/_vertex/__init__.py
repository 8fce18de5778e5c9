"""The Vertex boundary: job control through ``aiplatform_v1`` (``jobs``), the online
calls of the fallback (``online``) and their price tiers (``tiers``), and job controls: labels,
CMEK key, service account (``controls``).

Imports: values, errors, rules, retry, the catalogue (``tiers``: which models Flex serves),
observing, ``_bigquery`` (sink names), ``_lifecycle``.
"""
