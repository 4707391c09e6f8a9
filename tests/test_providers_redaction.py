"""The API key never comes back out, in whatever form a server echoes it (issue 22.10)."""

from __future__ import annotations

import base64
import json
import string

from hypothesis import given
from hypothesis import strategies as st

from compactor_core.providers.redaction import REDACTED, RUN, Redactor

KEYS = st.text(string.ascii_letters + string.digits + "-_", min_size=20, max_size=120)
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)


def forms(key: str) -> list[str]:
    """What servers were seen to echo: as sent, upper- and lower-cased, a character short at
    either end, base64 alone and inside a Basic authorization, URL-safe base64."""
    basic = base64.b64encode(f"me:{key}".encode()).decode()
    return [
        key,
        key.upper(),
        key.lower(),
        key[:-1],
        key[1:],
        base64.b64encode(key.encode()).decode(),
        basic,
        base64.urlsafe_b64encode(key.encode()).decode(),
    ]


def leaks(key: str, text: str) -> bool:
    """Whether ``text`` still holds RUN characters in a row of a form of the key."""
    runs = {
        form[start : start + RUN].lower()
        for form in forms(key)
        for start in range(len(form) - RUN + 1)
    }
    lowered = text.lower()
    return any(lowered[start : start + RUN] in runs for start in range(len(text) - RUN + 1))


@given(KEYS, st.data())
def test_no_form_of_the_key_survives(key: str, data: st.DataObject) -> None:
    form = data.draw(st.sampled_from(forms(key)))
    before, after = data.draw(TEXT), data.draw(TEXT)
    redacted = Redactor(key).text(f"{before}{form}{after}")
    assert REDACTED in redacted and not leaks(key, redacted)


@given(KEYS, TEXT)
def test_text_without_the_key_is_left_as_it_is(key: str, text: str) -> None:
    if not leaks(key, text):
        assert Redactor(key).text(text) == text


def test_a_decoded_reply_is_redacted_string_by_string_and_stays_json() -> None:
    key = "sk-live-0123456789abcdefXYZ"
    reply = {"error": {"message": f'bad key "{key.upper()}"', key: [1, f"{key[:-2]}!"]}}
    redacted = Redactor(key).value(reply)
    assert redacted == {"error": {"message": 'bad key "[redacted]"', REDACTED: [1, "[redacted]!"]}}
    assert json.loads(json.dumps(redacted)) == redacted


def test_a_short_placeholder_key_is_no_secret() -> None:
    assert Redactor("ollama").text("model ollama says ollama") == "model ollama says ollama"
    assert Redactor(None).text("anything") == "anything"
