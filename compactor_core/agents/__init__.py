"""The agents' own session files (SPEC §8): Claude Code, Codex, and the framework they share.

``registry`` lists the formats and detects them; ``session`` reads, views, checks and rewrites a
session file of any of them; one module per agent implements ``base.AgentFormat``.
"""
