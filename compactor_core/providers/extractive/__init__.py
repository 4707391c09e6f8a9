"""The built-in summarizer: offline, deterministic, and fast (SPEC §7, issue 10).

It writes the six parts the prompt asks for — goal, work done, key constraints, important file
paths, key tool results (errors first), what is needed to continue — from the messages themselves:
the user's own requests quoted (never text the harness injected, see ``boilerplate``), what was
done newest first (files edited with the gist of the edit, commands with their outcome, test runs,
decisions; ``worklog``), every file path given to a tool, errors picked out, and always the latest
request, the errors still open and the next step. The summary takes at most a quarter of the
history it reads (a previous summary counts whole) unless its essential lines need more, and never
more than ``max_tokens``, all by the estimate; when everything does not fit, the least important
lines go first, and among equals the oldest. A previous summary of this format (a rolling
compaction) is merged section by section, so its facts, file paths above all, carry forward, and
its first request stays the only one so labelled.
"""

from __future__ import annotations

from ...estimate import estimate, quarters_to_tokens, text_quarters
from ...formats import Message
from ..base import SummaryRequest
from .compose import compose
from .facts import Facts, gather, tool_outputs
from .fit import Line, fit, render
from .wording import SECTIONS

SHARE = 4  # the summary takes at most 1/SHARE of the (new) history it reads ...
MIN_TOKENS = 256  # ... but may always take this much


class ExtractiveSummarizer:
    """Summarizes by extraction: no model, no network, the same output for the same input."""

    name = "extractive"

    def summarize(self, request: SummaryRequest) -> str:
        lang = request.lang if request.lang in SECTIONS else "en"
        history = request.messages if request.history is None else request.history
        facts = gather(history, tool_outputs(request.original))
        lines = compose(facts, lang)
        budget = summary_budget(history, facts, lines, request.max_tokens, lang)
        return render(fit(lines, budget, lang), lang)


def summary_budget(
    messages: list[Message], facts: Facts, lines: list[Line], max_tokens: int, lang: str
) -> int:
    """Tokens the summary may take, never more than ``max_tokens``: a quarter of what is new plus
    the summaries before it whole, or what the essential lines (priority 0 and 1: the goal, the file
    paths, the latest request, the next step) need, if that is more.

    A summary as long as the history it replaces saves nothing (and the no-gain guard refuses it);
    one that shrinks a previous summary again at every rolling compaction would wear its facts
    away; one without the files worked on is of little use to whoever carries on.
    """
    headings = text_quarters(f"## {name}\n\n" for name in SECTIONS[lang])
    previous = 0
    if facts.summaries:
        previous = quarters_to_tokens(text_quarters(facts.summaries) + headings)
    target = previous + max(estimate(messages) - previous, 0) // SHARE
    essential = headings + sum(
        text_quarters([line.text]) + 4 for line in lines if line.priority <= 1
    )
    wanted = max(MIN_TOKENS, target, quarters_to_tokens(essential))
    # never as big as the history itself, which the no-gain guard would refuse whole
    return min(max_tokens, wanted, max(MIN_TOKENS, estimate(messages) - 1))
