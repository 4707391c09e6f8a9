"""The real coding agents, offline: a local model server and runners (SPEC §8.6).

- ``server.ModelServer``: plays the model on 127.0.0.1, records every request, answers from a
  ``script.Script`` of ``Reply`` objects (text, thinking, tool calls).
- ``claude.run_claude`` / ``codex.run_codex``: run the pinned real CLI from ``.agents/`` in a
  scratch home against that server (``make agents`` installs them).
"""
