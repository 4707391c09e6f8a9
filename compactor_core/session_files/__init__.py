"""Agents' session files (SPEC §8): the framework every agent format plugs into.

``registry`` lists the formats (one module each in ``compactor_core.agents``) and detects them;
``index`` reads a session file once into a small index and its conversation view; ``compact``
decides what micro, full and auto do to it; ``write`` writes the result as a stream; ``check``,
``listing`` and ``in_use`` read, list and guard session files.
"""
