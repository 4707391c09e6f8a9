"""``ctxpack serve``: an API address to point an agent at, compacting each request's history.

- ``proxy``: the ASGI app (run under uvicorn by ``cli/serve.py``): routes, forwarding, streams.
- ``wire``: the three APIs' request bodies as the policy's conversation, and back.
- ``responses``: OpenAI Responses ``input`` items as the core's messages, and back.
- ``compaction``: one body through the policy of ``ctxpack auto``, checked before it goes out.
- ``ledger``: which prefix of a request the upstream's prompt cache can read.
- ``summaries``: model-written summaries kept by the prefix they summarize.
- ``stats``: what the proxy has done, for ``GET /ctxpack/stats``.
- ``limits``: the proxy's limits (the defaults of the CLI's options).

Needs the ``serve`` extra only for its server (uvicorn); the app itself uses httpx, which the
core already depends on.
"""
