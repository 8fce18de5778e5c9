"""Waiting for a job: when to poll again or stop (``schedule``, pure) and the
loops that poll, blocking and async (``wait``), given the status call and the tracing.

Imports: values, errors, rules, observing.
"""
