"""run_request.resolve: a run's settings checked and completed (its stores, its session id, its
tool rules) in one call, from the environment it is given (never the process's own)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compactor_core.errors import ConfigError, UsageError
from compactor_core.run_request import resolve
from compactor_core.settings import RunSettings, Settings


def test_a_bad_session_id_fails_before_any_input() -> None:
    with pytest.raises(UsageError, match=r"invalid session id '\.\./x'"):
        resolve(RunSettings("micro", session_id="../x"))


def test_a_batchs_runs_keep_each_inputs_own_session() -> None:
    assert resolve(RunSettings("micro")).session_id is None
    assert resolve(RunSettings("micro", session_id="task-7")).session_id == "task-7"


def test_a_bad_tools_table_names_the_config_file() -> None:
    with pytest.raises(ConfigError, match=r"^/etc/ctxpack\.toml: \[tools\]"):
        resolve(RunSettings("micro"), tools=["x"], config_path="/etc/ctxpack.toml")


def test_the_tools_table_becomes_the_settings_rules() -> None:
    told = RunSettings("micro", Settings(keep_recent=3))
    run = resolve(told, tools={"grep": {"kind": "search"}})
    assert run.settings.keep_recent == 3 and [name for name, _ in run.settings.tool_rules] == [
        "grep"
    ]


def test_the_user_store_comes_from_the_state_home_given(tmp_path: Path) -> None:
    run = resolve(RunSettings("full"), keeps_snapshots=True, state_home=str(tmp_path))
    snapshots = run.snapshots
    assert snapshots is not None and Path(snapshots.location) == tmp_path / "ctxpack"
    assert resolve(RunSettings("full")).snapshots is None


def test_recall_keeps_its_originals_in_the_state_home_given(tmp_path: Path) -> None:
    run = resolve(RunSettings("micro", Settings(recall=True)), state_home=str(tmp_path))
    assert run.originals is not None and run.originals.folder == tmp_path / "ctxpack" / "originals"
    assert resolve(RunSettings("micro")).originals is None
