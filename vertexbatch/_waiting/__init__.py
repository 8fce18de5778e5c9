"""Waiting for a job: when to poll again or stop (``schedule``, pure) and the
blocking loop (``wait``).

Imports: values, errors, observing, ``_client_base``.
"""
