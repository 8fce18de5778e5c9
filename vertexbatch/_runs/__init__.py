"""Runs: many keys split into shards, each shard an identity-keyed job, advanced by stateless
steps (a Cloud Scheduler function) and read as one result set.

``run`` holds the public ``Run`` and its values; ``start`` creates or opens one, ``shards`` cuts
its requests (at one job's limits for the model: the catalogue's); ``step`` advances it;
``jobs`` lists and cancels its attempts' jobs; ``read`` and ``records`` read its results and
the records it writes; ``plan`` is the pure shard planner; ``ledger`` is the run's
record of shards and attempts, ``done`` a finished shard's record and ``usage`` the usage it
keeps (a run's spend from it); ``sink`` its BigQuery sink; ``online`` is the online fallback for
keys that batch could not answer, ``claim`` its claims and ``online_rows`` its joined answers. A
run staged by many tasks: ``tasks`` is the ``Task`` value and its part of the input;
``start_task`` stages one task's part and registers it; ``registry`` holds the tasks' records and
makes the ledger once every task registered; ``shares`` is a task's share of a set of files.

Imports: ``_plans`` (prices and spend), ``_job`` (each shard's job), ``_waiting``, ``_cache``,
``_staged``, ``_providers``, ``_cloud`` and the layers below; never ``_operations`` or
``_client``, above it.
"""
