"""compactor_core used from Python (issue 11.1): one entry point, frozen settings, no mutation."""

from __future__ import annotations

import copy
import doctest
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support_full import RecordingProvider, session_zh

import compactor_core
from compactor_core import Settings, Status, compact, defaults, run
from compactor_core.conversation.formats import Conversation, parse
from compactor_core.errors import InputError, ProviderError
from compactor_core.settings import RunSettings


def test_the_module_doctest_runs() -> None:
    assert doctest.testmod(compactor_core).failed == 0


def readme_example() -> str:
    """The Python block of README "Use it from Python", as it is printed there."""
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use it from Python", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None
    return block[1]


def test_the_readme_example(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run from the repository root, as a user would; it prints what it did."""
    monkeypatch.chdir(Path(__file__).parent.parent)
    before = Path("examples/claude-session.jsonl").read_bytes()
    exec(compile(readme_example(), "README.md", "exec"), {})
    conversation, session = capsys.readouterr().out.splitlines()
    tokens, _, smaller = conversation.partition(" -> ")
    assert int(smaller) < int(tokens) / 2
    summary, tokens, _, smaller = session.split()
    assert summary == "compacted" and int(smaller) < int(tokens) / 2
    assert Path("examples/claude-session.jsonl").read_bytes() == before  # output= elsewhere
    assert not Path(".transcripts").exists()


def test_everything_in_all_is_importable() -> None:
    assert sorted(compactor_core.__all__) == sorted(compactor_core._EXPORTS)
    for name in compactor_core.__all__:
        assert hasattr(compactor_core, name), name


def test_importing_the_package_loads_nothing_else() -> None:
    """The CLI imports it at start-up (for its defaults): the core loads on first use."""
    code = (
        "import sys, compactor_core.defaults; "
        "print(sorted(m for m in sys.modules if m.startswith('compactor_core')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['compactor_core', 'compactor_core.defaults']"


@pytest.mark.parametrize("mode", ["micro", "full", "auto"])
def test_compact_never_modifies_its_input(mode: str) -> None:
    messages = session_zh()
    before = copy.deepcopy(messages)
    compact(messages, mode, Settings(keep_recent=0, threshold=0))
    assert messages == before


def test_auto_without_a_provider_uses_the_extractive_one() -> None:
    example = Path(__file__).parent.parent / "examples" / "session.json"
    outcome = run(RunSettings("auto", Settings(threshold=0)), parse(example.read_bytes()))
    assert outcome.full is Status.COMPACTED
    assert outcome.conversation.messages[1]["content"].startswith("[Context Compressed]\n")


def test_keep_recent_reaches_the_summarizer() -> None:
    """One setting, one place: what micro keeps is what the summarizer sees."""
    provider = RecordingProvider()
    compact(session_zh(), "auto", Settings(keep_recent=0, threshold=0), provider)
    assert "[truncated:" in provider.request.user
    assert "[tool_result:bash] FAILED" not in provider.request.user


def test_settings_are_frozen() -> None:
    with pytest.raises(AttributeError):
        Settings().keep_recent = 1  # type: ignore[misc]


def test_an_input_error_carries_its_path_and_place() -> None:
    with pytest.raises(InputError) as caught:
        parse(b'[{"role": "user"}, {"role": "user", "content": 5}]', "f.json")
    assert (caught.value.path, caught.value.place) == ("f.json", "messages[1].content")


def test_a_provider_error_carries_the_http_status() -> None:
    import httpx

    from compactor_core.providers.registry import ProviderSettings, build_provider

    transport = httpx.MockTransport(lambda request: httpx.Response(400, json={"error": "no"}))
    settings = ProviderSettings("openai", "m", "http://127.0.0.1:9/v1", retries=0)
    provider = build_provider(settings, transport=transport)
    provider_result = compact(session_zh(), "full", provider=provider)
    assert provider_result == session_zh()
    outcome = run(RunSettings("full"), Conversation(session_zh()), provider)
    assert isinstance(outcome.error, ProviderError) and outcome.error.status_code == 400


def test_the_providers_import_without_a_cycle() -> None:
    for module in ("http", "openai", "anthropic", "command", "registry"):
        code = f"import compactor_core.providers.{module}"
        subprocess.run([sys.executable, "-c", code], check=True)


def test_the_cli_offers_every_provider() -> None:
    """``--provider`` takes its choices from defaults, so start-up imports no provider code."""
    from compactor_core.providers.catalog import SPECS

    assert tuple(SPECS) == defaults.PROVIDER_NAMES
