"""How each agent is pointed at serve: where it would have gone, what sends it to the proxy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compactor_core.errors import UsageError
from compactor_core.serve.pointing import pointing

PROXY = "http://127.0.0.1:4321"


def test_claude_code_goes_where_its_variable_says_else_its_settings_else_anthropic(
    tmp_path: Path,
) -> None:
    assert pointing("claude", {}, tmp_path).upstream == "https://api.anthropic.com"
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"env": {"ANTHROPIC_BASE_URL": "https://gw.example/anth"}}))
    route = pointing("/opt/bin/claude", {}, tmp_path)
    assert (route.upstream, route.environment(PROXY)) == (
        "https://gw.example",
        {"ANTHROPIC_BASE_URL": f"{PROXY}/anth"},  # the path stays the agent's
    )
    given = {"ANTHROPIC_BASE_URL": "http://10.0.0.1:9000"}
    assert pointing("claude", given, tmp_path).upstream == "https://gw.example"  # settings win
    settings.write_text("{}")
    assert pointing("claude", given, tmp_path).upstream == "http://10.0.0.1:9000"
    # the settings' env would win over the variable; --settings wins over both
    settings_flag = '{"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:4321"}}'
    assert pointing("claude", given, tmp_path).arguments(PROXY) == ["--settings", settings_flag]


def test_codex_keeps_its_own_provider_at_the_proxy_without_websockets(tmp_path: Path) -> None:
    (tmp_path / "codex").mkdir()
    (tmp_path / "codex" / "config.toml").write_text(
        'model_provider = "mine"\n[model_providers.mine]\nbase_url = "https://llm.example/v1"\n'
    )
    route = pointing("codex", {"CODEX_HOME": str(tmp_path / "codex")}, tmp_path)
    assert route.upstream == "https://llm.example"
    assert route.environment(PROXY) == {}
    assert route.arguments(PROXY) == [
        "-c",
        f'model_providers.mine.base_url="{PROXY}/v1"',
        "-c",
        "model_providers.mine.supports_websockets=false",
    ]


@pytest.mark.parametrize(
    ("auth", "environ", "upstream"),
    [
        (None, {}, "https://api.openai.com"),
        (None, {"OPENAI_BASE_URL": "http://10.0.0.2/v1"}, "http://10.0.0.2"),
        ({"tokens": {"id_token": "…"}}, {}, "https://chatgpt.com"),
        ({"OPENAI_API_KEY": "sk-…", "tokens": None}, {}, "https://api.openai.com"),
    ],
)
def test_codex_on_openais_provider_gets_a_stand_in_of_the_same_sign_in(
    tmp_path: Path, auth: dict[str, object] | None, environ: dict[str, str], upstream: str
) -> None:
    if auth is not None:
        (tmp_path / ".codex").mkdir()
        (tmp_path / ".codex" / "auth.json").write_text(json.dumps(auth))
    route = pointing("codex", environ, tmp_path)
    assert route.upstream == upstream
    arguments = route.arguments(PROXY)
    assert arguments[:2] == ["-c", 'model_provider="ctxpack"']
    assert "requires_openai_auth = true, supports_websockets = false" in arguments[3]


def test_qwen_and_copilot_through_their_variables(tmp_path: Path) -> None:
    qwen = pointing(
        "qwen", {"OPENAI_BASE_URL": "https://dash.example/compatible-mode/v1"}, tmp_path
    )
    assert qwen.environment(PROXY) == {"OPENAI_BASE_URL": f"{PROXY}/compatible-mode/v1"}
    copilot = pointing("copilot", {"COPILOT_PROVIDER_BASE_URL": "https://x.example/v1"}, tmp_path)
    assert copilot.environment(PROXY) == {"COPILOT_PROVIDER_BASE_URL": f"{PROXY}/v1"}


@pytest.mark.parametrize("agent", ["copilot", "gemini", "pi", "opencode", "cline", "vim"])
def test_an_agent_that_cannot_be_pointed_from_outside_is_refused(
    agent: str, tmp_path: Path
) -> None:
    with pytest.raises(UsageError, match=f"^{agent}: "):
        pointing(agent, {}, tmp_path)
