"""The command line's provider: flag > environment > config file > default, its key only ever
from the environment (``cli.resolve.Resolver.provider``), read from the environment it is given."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.resolve import Resolver
from compactor_core.errors import ConfigError


def provider_of(
    tmp_path: Path, environ: dict[str, str], config: str = "", **flags: object
) -> Resolver:
    file = tmp_path / "config.toml"
    file.write_text(config)
    return Resolver(flags, {"CTXPACK_CONFIG": str(file), **environ})


@pytest.fixture(autouse=True)
def _no_project_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no project's config file above the working folder


def test_the_key_and_base_url_come_from_the_providers_own_variables(tmp_path: Path) -> None:
    environ = {"OPENAI_API_KEY": "sk-given", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
    config = 'base_url = "http://file.example/v1"\n'
    settings = provider_of(tmp_path, environ, config, provider="openai").provider()
    assert (settings.api_key, settings.base_url) == ("sk-given", "http://127.0.0.1:1/v1")
    # a local server may need no key: only the hosted service's URL requires one
    assert settings.key_variable == "OPENAI_API_KEY" and not settings.key_required
    hosted = provider_of(tmp_path, {}, provider="openai").provider()
    assert hosted.base_url == "https://api.openai.com/v1" and hosted.key_required


def test_a_base_url_flag_comes_first_and_the_config_file_last(tmp_path: Path) -> None:
    environ = {"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
    flagged = provider_of(tmp_path, environ, provider="openai", base_url="http://flag.example/v1")
    assert flagged.provider().base_url == "http://flag.example/v1"
    config = '[openai]\nbase_url = "http://f.example/v1"\n'
    filed = provider_of(tmp_path, {}, config, provider="openai").provider()
    assert (filed.base_url, filed.key_required) == ("http://f.example/v1", False)


def test_a_key_variable_the_config_names_is_required_by_a_hosted_provider(tmp_path: Path) -> None:
    config = '[anthropic]\napi_key_env = "MY_KEY"\nbase_url = "http://127.0.0.1:1"\n'
    resolver = provider_of(tmp_path, {"MY_KEY": "sk-secret-77"}, config, provider="anthropic")
    settings = resolver.provider()
    assert (settings.key_variable, settings.api_key, settings.key_required) == (
        "MY_KEY",
        "sk-secret-77",
        True,
    )
    assert "sk-secret-77" not in repr(settings)


def test_an_unknown_provider_is_named_where_it_was_set(tmp_path: Path) -> None:
    resolver = provider_of(tmp_path, {"CTXPACK_PROVIDER": "nope"})
    with pytest.raises(ConfigError, match=r"^CTXPACK_PROVIDER must be one of extractive, openai"):
        resolver.provider()
    filed = provider_of(tmp_path, {}, 'provider = "nope"\n')
    with pytest.raises(ConfigError, match=r"config\.toml: provider must be one of .*got 'nope'"):
        filed.provider()


def test_a_command_provider_runs_in_the_environment_given(tmp_path: Path) -> None:
    environ = {"CTXPACK_PROVIDER": "command", "CTXPACK_COMMAND": "cat", "ONLY_HERE": "1"}
    settings = provider_of(tmp_path, environ).provider()
    assert settings.command == "cat" and settings.environment is not None
    assert settings.environment["ONLY_HERE"] == "1"
