"""Which language a conversation is in, for ``--lang auto`` (SPEC §3.5, issue 10).

The user's own words decide (harness-injected text removed, see boilerplate.py), not tool output
or the assistant's replies. A user who writes Chinese between code, paths and English identifiers
is writing Chinese: in real sessions such requests are only 10-15% CJK characters. So the share
counted is CJK ideographs among all letters, and a low bar (5%) decides; kana make it Japanese,
which is not Chinese.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .boilerplate import user_texts
from .formats import Message

LANGUAGES = ("zh", "en")
AUTO = "auto"
CHINESE_SHARE = 0.05  # CJK ideographs among all letters at or above which the text is Chinese
MIN_IDEOGRAPHS = 2  # one stray character (a name, a quoted word) does not make a Chinese user
IDEOGRAPH = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")
KANA = re.compile(r"[\u3040-\u30ff]")
LATIN_LETTER = re.compile(r"[A-Za-z\u00c0-\u024f]")
QUOTED = re.compile(r"“(.*?)”", re.S)
# The headings a previous summary was written with tell its language when the user wrote nothing.
CHINESE_SUMMARY = re.compile(r"^## (目标|已完成工作|后续所需上下文)$", re.M)


def text_language(texts: Iterable[str]) -> str | None:
    """ "zh" or "en" for what ``texts`` say; None if they hold no letters at all."""
    ideographs = kana = latin = 0
    for text in texts:
        ideographs += len(IDEOGRAPH.findall(text))
        kana += len(KANA.findall(text))
        latin += len(LATIN_LETTER.findall(text))
    letters = ideographs + kana + latin
    if not letters:
        return None
    chinese = ideographs >= MIN_IDEOGRAPHS and kana * 5 < ideographs
    return "zh" if chinese and ideographs / letters >= CHINESE_SHARE else "en"


def users_words(messages: list[Message]) -> list[str]:
    """What the user wrote, and the requests an earlier summary quotes (“…”): so that a rolling
    compaction does not change language because the newest request is short."""
    found = []
    for message in messages:
        if message.get("role") != "user":
            continue
        for text in user_texts(message):
            found.extend([text.written] if text.written else [])
            found.extend(QUOTED.findall(text.earlier_summary or ""))
    return found


def conversation_language(messages: list[Message]) -> str:
    """The language the user writes in; with no words of theirs, a previous summary's; else en."""
    language = text_language(users_words(messages))
    if language is not None:
        return language
    for message in messages:
        content = message.get("content")
        if isinstance(content, str) and CHINESE_SUMMARY.search(content):
            return "zh"
    return "en"


def resolve(lang: str, messages: list[Message], compat: bool = False) -> str:
    """The language to use: ``lang`` itself, or for "auto" the conversation's (Chinese under
    the BareAgent profile, as the reference is)."""
    if lang != AUTO:
        return lang
    return "zh" if compat else conversation_language(messages)
