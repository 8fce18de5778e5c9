"""Checks of a project before and after a submission: ``doctor`` (configuration, access, job
controls, a BigQuery dataset, a run's state; its pure rules in ``doctor_rules``) and ``probe``
(a tiny real batch in two parts, ``probe_stage``, that settles the wire facts a project's model
serves; its pure half in ``probe_shape``, its rows in ``probe_input``, each lane's row facts in
``probe_output``).

Each check returns findings as values; the command (``vertexbatch._command``) renders them.
Imports: ``_client`` (doctor's checks use the ``Cloud`` of a ``Client`` built from the same
environment and flags), ``_config``, ``_providers``, ``_vertex``, ``_bigquery``, ``_requests``,
``_rows`` (probe reads an output row with the lane's own reader), values and rules; never the
command or the local stack. The SDKs each check needs are imported inside it.
"""
