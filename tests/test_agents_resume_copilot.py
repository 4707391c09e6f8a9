"""The real Copilot CLI resumes the sessions ctxpack changed, and sends less (SPEC §8.6).

Its session is one it writes here while a scripted model works (rounds of parallel tool calls
with long outputs, a first run and a resumed one); it is changed by ``micro``, ``full``,
``auto`` and ``micro`` + ``restore`` in place, then resumed by the real agent against the
local server (tests in agents/resume_tests.py).
"""

from agents.resume_tests import *  # noqa: F403

AGENT = "copilot-cli"
