"""run_request.resolve: a front end's plain values become a run's settings, checked, in one call,
from the environment it is given (never the process's own)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compactor_core.errors import ConfigError, UsageError
from compactor_core.providers.catalog import ProviderRequest
from compactor_core.run_request import RunRequest, resolve
from compactor_core.settings import RunSettings, Settings


def test_the_provider_reads_its_key_and_base_url_from_the_environment_given() -> None:
    environ = {"OPENAI_API_KEY": "sk-given", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
    asked = ProviderRequest("openai", file_base_url="http://file.example/v1", environ=environ)
    settings = resolve(RunRequest(RunSettings("full"), provider=asked)).provider
    assert settings is not None
    assert (settings.api_key, settings.base_url) == ("sk-given", "http://127.0.0.1:1/v1")


def test_a_base_url_set_outside_the_file_comes_before_the_providers_own_variable() -> None:
    environ = {"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
    asked = ProviderRequest("openai", base_url="http://flag.example/v1", environ=environ)
    settings = asked.settings()
    assert settings.base_url == "http://flag.example/v1"
    assert ProviderRequest("openai", file_base_url="http://f.example/v1").settings().base_url == (
        "http://f.example/v1"
    )


def test_a_key_variable_the_config_names_is_required_by_a_hosted_provider() -> None:
    asked = ProviderRequest("anthropic", key_env="MY_KEY", environ={"MY_KEY": "k"})
    settings = asked.settings()
    assert (settings.key_variable, settings.api_key, settings.key_required) == ("MY_KEY", "k", True)


def test_an_unknown_provider_fails_as_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match="unknown provider 'nope'"):
        resolve(RunRequest(RunSettings("full"), provider=ProviderRequest("nope")))


def test_a_bad_session_id_fails_before_any_input() -> None:
    with pytest.raises(UsageError, match=r"invalid session id '\.\./x'"):
        resolve(RunRequest(RunSettings("micro"), session_id="../x"))


def test_a_bad_tools_table_names_the_config_file() -> None:
    with pytest.raises(ConfigError, match=r"^/etc/ctxpack\.toml: \[tools\]"):
        resolve(RunRequest(RunSettings("micro"), tools=["x"], config_path="/etc/ctxpack.toml"))


def test_the_tools_table_becomes_the_settings_rules() -> None:
    told = RunSettings("micro", Settings(keep_recent=3))
    run = resolve(RunRequest(told, tools={"grep": {"kind": "search"}})).run
    assert run.settings.keep_recent == 3 and [name for name, _ in run.settings.tool_rules] == [
        "grep"
    ]


def test_the_user_store_comes_from_the_state_home_given(tmp_path: Path) -> None:
    request = RunRequest(RunSettings("full"), keeps_snapshots=True, state_home=str(tmp_path))
    snapshots = resolve(request).run.snapshots
    assert snapshots is not None and Path(snapshots.location) == tmp_path / "ctxpack"
    assert resolve(RunRequest(RunSettings("full"))).run.snapshots is None


def test_a_run_done_here_builds_its_provider_once_and_a_batch_does_not() -> None:
    asked = ProviderRequest("extractive")
    here = resolve(RunRequest(RunSettings("auto"), provider=asked, here=True))
    batch = resolve(RunRequest(RunSettings("auto"), provider=asked))
    dry = resolve(RunRequest(RunSettings("auto", dry_run=True), provider=asked, here=True))
    assert here.summarizer is not None and batch.summarizer is None and dry.summarizer is None
    assert batch.provider == here.provider
