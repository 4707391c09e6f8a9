"""The built-in summarizer: offline, deterministic, and fast (SPEC §7, issues 10 and 23).

It writes the six parts the prompt asks for — goal, work done, key constraints, important file
paths, key tool results, what is needed to continue — from the messages themselves, for the agent
that carries on: the user's own words (never text the harness injected, see ``boilerplate``),
every request newest first, corrections and refusals with what they answer; what was done, newest
first, with how it ended and why it failed; every file path given to a tool with the names the
work touched next to it; the errors still open, the agent's open tasks and the next step, read
from how the history ends. Summaries before it (its own, or an agent's) are parsed and merged
part by part. The summary takes at most a quarter of the history it reads (the summaries before
it count whole) unless its essential lines need more, and never more than ``max_tokens``, all by
the estimate; when everything does not fit, a few lines of every kind go in before more of any,
the least important go first, and among equals the oldest.

One module per job: ``facts`` gathers the history in one pass, ``calls`` tells what kind of call
each is, ``outcomes`` how it ended, ``worklog`` says what it did in a line, ``tasks`` reads the
agent's task list, ``names`` picks the names the work touched, ``previous`` reads a summary
before this one, ``state`` says where the work stands, ``compose`` makes the lines of each part,
``fit`` keeps what fits and renders it, ``wording`` holds the words in both languages.
"""

from __future__ import annotations

from ...compaction.estimate import estimate, quarters_to_tokens, text_quarters
from ...conversation.formats import Message
from ..base import SummaryRequest
from .compose import compose, is_path_line
from .facts import Facts, gather, tool_outputs
from .fit import Line, fit, line_cost, render
from .wording import LABELS, PATHS, SECTIONS

SHARE = 4  # the summary takes at most 1/SHARE of the (new) history it reads ...
MIN_TOKENS = 256  # ... but may always take this much


class ExtractiveSummarizer:
    """Summarizes by extraction: no model, no network, the same output for the same input."""

    name = "extractive"
    deterministic = True  # a history's summary can be written again word for word (cache_aware)

    def summarize(self, request: SummaryRequest) -> str:
        lang = request.lang if request.lang in SECTIONS else "en"
        history = request.messages if request.history is None else request.history
        facts = gather(history, tool_outputs(request.original))
        lines = compose(facts, lang)
        budget = summary_budget(history, facts, lines, request.max_tokens, lang)
        return render(fit_with_paths_counted(lines, budget, lang), lang)


def fit_with_paths_counted(lines: list[Line], budget: int, lang: str) -> list[Line]:
    """The lines that fit; when some file paths do not, the last paths that did make room for
    the count of those left out (the changed and the most used stay: they come first)."""
    chosen = fit(lines, budget, lang)
    paths = [line for line in lines if is_path_line(line)]
    kept = [line for line in chosen if line in paths]
    if len(kept) == len(paths):
        return chosen
    more = LABELS[lang]["more_paths"]
    needed = line_cost(Line(PATHS, more.format(count=len(paths)), 1))
    while kept and needed > 0:
        dropped = kept.pop()
        chosen.remove(dropped)
        needed -= line_cost(dropped)
    count = Line(PATHS, more.format(count=len(paths) - len(kept)), 1)
    after = chosen.index(kept[-1]) + 1 if kept else 0
    return [*chosen[:after], count, *chosen[after:]]


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
