"""Runs: many keys split into shards, each shard an identity-keyed job, advanced by stateless
steps (a Cloud Scheduler function) and read as one result set.

``run`` holds the public ``Run`` and its values; ``start`` creates or opens one; ``step``
advances it; ``jobs`` lists and cancels its attempts' jobs; ``read`` and ``records`` read its
results and the records it writes; ``plan`` is the pure shard planner; ``ledger`` is the run's
record of shards and attempts; ``online`` is the online fallback for keys that batch could not
answer. A run staged by many tasks: ``tasks`` is the ``Task`` value and its part of the input;
``start_task`` stages one task's part and registers it; ``registry`` holds the tasks' records and
makes the ledger once every task registered.
"""
