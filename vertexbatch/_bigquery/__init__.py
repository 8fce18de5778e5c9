"""BigQuery as a job's sink: the ``dest=`` URI checked (``dest``), the output table read back
through the Storage Read API (``read``); and as its source: a caller's table read as requests
(``source``)."""
