"""Where evidence comes from: search providers, scraping, summaries, reliability and the evidence store.

Entry points: :func:`retrieval.runpath.open_retrieval` (what the run session,
:class:`debates.session.RunSession`, calls for every run path: a configuration's ``retrieval:``
block and ``--retrieval live|record|replay|off`` turned into a run's evidence sources),
:class:`retrieval.policy.EvidencePolicy` (a run's leakage filter and source ratings), the search
providers' registry (:mod:`retrieval.providers.registry`), :func:`retrieval.pipeline.mr2_replay_pipeline`
(offline, from a recorded MR2 trace), and the query answerers in :mod:`retrieval.answerer`.
"""
