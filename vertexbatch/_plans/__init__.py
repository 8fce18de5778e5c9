"""Planning before paying: what a submission would stage, send and cost
(``estimate``), the dated batch price table (``prices``) and its bands by prompt size
(``bands``), exact input tokens through the
count-tokens APIs (``count_tokens``), a budget (``budget``), spend (``spend``) and a canary's
figures (``canary``).

Imports: ``_catalogue``, ``_requests``, ``_staged``, ``_providers``, ``_cloud``, ``_vertex``.
"""
