"""The agents' session formats (SPEC §8): one module per agent, each an ``AgentFormat``.

What they share (reading, the view, checking, rewriting a session file of any of them) is
``compactor_core.session_files``; ``session_files.registry`` lists these modules.
"""
