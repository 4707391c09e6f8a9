"""``ctxpack report``: what the agents' sessions on this machine cost, why the cache was written,
and what ctxpack would have billed instead.

``bill`` reads one session's recorded requests (``AgentFormat.recorded_usage``) into a
``SessionBill`` whose cache writes each have a cause (``causes``); ``prices`` turns tokens into
money by model; ``ledger`` keeps each file's bill in the state folder, keyed by its path, size
and change time, so a second report reads only what changed; ``groups`` adds bills up by day,
week, month, session, project, agent or model.
"""
