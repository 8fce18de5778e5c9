"""BigQuery as a job's sink: the ``dest=`` URI checked (``dest``, pure), the output table read
back through the Storage Read API (``read``); as its source: a caller's table read as requests
(``source``); and a run task's share of a source table with the run's one snapshot (``share``).

google-cloud-bigquery and its Storage client are imported inside the functions that use them
(the ``bigquery`` extra). Imports: values, errors, ``_json``, ``_retry``, ``_requests`` (a Gemini
row's request-level field names), ``_gcs`` (the run's snapshot record).
"""
