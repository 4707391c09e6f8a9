"""``ctxpack setup AGENT`` and ``ctxpack serve --install``.

Setup changes the agent's own settings file, keeps the old one, and ``--undo`` puts it back
byte for byte (mode too); the real Claude Code and Codex, so set up, send their requests to a
running serve, which forwards them where they went before.
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest
from agents.claude import ClaudeHome, run_claude
from agents.process import agent_bin, clean_environment
from agents.script import Script
from agents.server import ModelServer
from helpers import CTXPACK
from serve_support import Serving

# As a user may have left it: odd spacing, no newline at the end, keys ctxpack does not know.
CLAUDE_SETTINGS = b'{\n    "model": "opus",  "env": {"FOO": "1"},\n\t"permissions": {}\n}'
CODEX_CONFIG = b"""# my settings
model = "gpt-test"   # the model
model_provider = "mine"

[model_providers.mine]
name = "Mine"
base_url = "https://llm.example/api/v1"
env_key = "MINE_KEY"
wire_api = "responses"

[profiles.x]
model = "o3"
"""


def setup(
    home: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    environment = {**clean_environment(), "HOME": str(home), **(env or {})}
    return subprocess.run(
        [str(CTXPACK), "setup", *args],
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
    )


def test_claude_setup_then_undo_leaves_settings_json_byte_for_byte(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_bytes(CLAUDE_SETTINGS)
    settings.chmod(0o640)
    done = setup(tmp_path, "claude", "--yes", "--address", "http://127.0.0.1:9999")
    assert done.returncode == 0, done.stderr
    assert b'+    "ANTHROPIC_BASE_URL": "http://127.0.0.1:9999"' in done.stdout  # the diff first
    changed = json.loads(settings.read_bytes())
    assert changed["env"] == {"FOO": "1", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9999"}
    assert changed["model"] == "opus" and changed["permissions"] == {}

    done = setup(tmp_path, "claude", "--undo")
    assert done.returncode == 0, done.stderr
    assert settings.read_bytes() == CLAUDE_SETTINGS
    assert settings.stat().st_mode & 0o777 == 0o640
    assert sorted(path.name for path in settings.parent.iterdir()) == ["settings.json"]


def test_a_file_that_was_not_there_is_not_there_after_undo(tmp_path: Path) -> None:
    assert setup(tmp_path, "claude", "--yes").returncode == 0
    settings = tmp_path / ".claude" / "settings.json"
    assert json.loads(settings.read_bytes()) == {
        "env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8765"}
    }
    assert setup(tmp_path, "claude", "--undo").returncode == 0
    assert list(settings.parent.iterdir()) == []


def test_codex_setup_keeps_the_users_provider_at_serve_and_undo_puts_the_file_back(
    tmp_path: Path,
) -> None:
    config = tmp_path / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_bytes(CODEX_CONFIG)
    done = setup(tmp_path, "codex", "--yes")
    assert done.returncode == 0, done.stderr
    assert b"ctxpack serve --upstream https://llm.example" in done.stderr
    text = config.read_text()
    assert "# my settings" in text and 'model = "gpt-test"   # the model' in text
    parsed = tomllib.loads(text)
    assert parsed["model_provider"] == "ctxpack"
    assert parsed["model_providers"]["ctxpack"] == {
        "name": "Mine",
        "base_url": "http://127.0.0.1:8765/api/v1",
        "env_key": "MINE_KEY",
        "wire_api": "responses",
        "supports_websockets": False,
    }
    assert parsed["model_providers"]["mine"]["base_url"] == "https://llm.example/api/v1"
    assert parsed["profiles"] == {"x": {"model": "o3"}}
    assert parsed["mcp_servers"]["ctxpack"]["args"] == ["mcp"]  # recall: Codex's MCP server
    assert Path(parsed["mcp_servers"]["ctxpack"]["command"]).name == "ctxpack"
    assert setup(tmp_path, "codex", "--yes").returncode == 0  # again: the first original kept
    assert setup(tmp_path, "codex", "--undo").returncode == 0
    assert config.read_bytes() == CODEX_CONFIG


def test_nothing_is_written_without_a_yes_or_with_dry_run(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_bytes(CLAUDE_SETTINGS)
    asked = setup(tmp_path, "claude")  # no terminal to ask on
    assert asked.returncode == 2
    assert b"add --yes" in asked.stderr
    shown = setup(tmp_path, "claude", "--dry-run")
    assert shown.returncode == 0 and b"+++ " in shown.stdout
    assert settings.read_bytes() == CLAUDE_SETTINGS
    assert setup(tmp_path, "claude", "--undo").returncode == 2  # nothing to undo


def test_claude_code_set_up_goes_through_the_running_serve(tmp_path: Path) -> None:
    home = ClaudeHome(tmp_path / "claude")
    home.config.mkdir(parents=True)
    cwd = tmp_path / "project"
    cwd.mkdir()
    with ModelServer(Script()) as server, Serving(server.url) as serve:
        env = {"CLAUDE_CONFIG_DIR": str(home.config)}
        assert setup(home.home, "claude", "--yes", "--address", serve.url, env=env).returncode == 0
        with ModelServer(Script()) as elsewhere:  # ANTHROPIC_BASE_URL: the settings win
            run_claude(home, cwd, "say hello", elsewhere).check()
        assert elsewhere.requests == []
        asked = len(server.model_requests)
        offered = json.dumps(server.turn_requests[0].body)
    assert asked >= 1 and serve.log.count("POST /v1/messages") == asked
    # ctxpack mcp joined its MCP servers: the recall tool is offered (deferred to its tool search)
    assert "mcp__ctxpack__recall" in offered
    assert setup(home.home, "claude", "--undo", env=env).returncode == 0
    assert not (home.config / ".claude.json").exists() or "ctxpack" not in json.loads(
        (home.config / ".claude.json").read_text()
    ).get("mcpServers", {})


def test_setup_leaves_claude_codes_own_state_and_takes_out_only_its_server(
    tmp_path: Path,
) -> None:
    state = tmp_path / ".claude.json"
    state.write_text(json.dumps({"numStartups": 3, "mcpServers": {"other": {"command": "x"}}}))
    assert setup(tmp_path, "claude", "--yes").returncode == 0
    servers = json.loads(state.read_text())["mcpServers"]
    assert servers["ctxpack"]["args"] == ["mcp"] and servers["other"] == {"command": "x"}
    state.write_text(json.dumps({"numStartups": 4, "mcpServers": servers}))  # Claude Code ran
    assert setup(tmp_path, "claude", "--undo").returncode == 0
    assert json.loads(state.read_text()) == {
        "numStartups": 4,
        "mcpServers": {"other": {"command": "x"}},
    }
    assert setup(tmp_path, "claude", "--yes", "--no-recall").returncode == 0
    assert "ctxpack" not in json.loads(state.read_text())["mcpServers"]


def test_codex_set_up_goes_through_the_running_serve(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    cwd = tmp_path / "project"
    cwd.mkdir()
    with ModelServer(Script()) as server, Serving(server.url) as serve:
        config = CODEX_CONFIG.replace(b"https://llm.example/api/v1", f"{server.url}/v1".encode())
        (codex_home / "config.toml").write_bytes(config)
        env = {"CODEX_HOME": str(codex_home)}
        assert setup(tmp_path, "codex", "--yes", "--address", serve.url, env=env).returncode == 0
        done = subprocess.run(
            [str(agent_bin("codex")), "exec", "--skip-git-repo-check", "say hello"],
            cwd=cwd,
            env={**clean_environment(), "HOME": str(tmp_path), **env, "MINE_KEY": "sk-test"},
            capture_output=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        asked = [request.path for request in server.requests]
    assert asked == ["/v1/responses"]  # no WebSocket upgrade tried first
    assert b" ERROR " not in done.stderr  # nor its error line
    assert serve.log.count("POST /v1/responses 200") == 1


@pytest.mark.skipif(os.uname().sysname != "Linux", reason="a systemd unit on Linux")
def test_serve_install_writes_a_user_unit_and_says_how_to_start_it(tmp_path: Path) -> None:
    environment = {**clean_environment(), "HOME": str(tmp_path)}
    arguments = ["--upstream", "https://api.anthropic.com", "--instructions", "keep 100% of it"]
    done = subprocess.run(
        [str(CTXPACK), "serve", "--install", *arguments],
        env=environment,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    unit = tmp_path / ".config" / "systemd" / "user" / "ctxpack-serve.service"
    assert done.stdout.decode() == f"{unit}\n"
    assert b"systemctl --user enable --now ctxpack-serve.service" in done.stderr
    exec_start = next(line for line in unit.read_text().splitlines() if "ExecStart" in line)
    assert exec_start == (
        f"ExecStart={CTXPACK} serve --upstream https://api.anthropic.com "
        '--instructions "keep 100%% of it"'
    )


def test_setup_statusline_installs_a_command_that_reads_claude_codes_own_session(
    tmp_path: Path,
) -> None:
    """Claude Code runs its statusLine only on its interactive screen (never with -p): the
    command setup installs is run here on a session the real Claude Code wrote, with the JSON
    Claude Code passes it."""
    import shlex

    home = ClaudeHome(tmp_path / "claude")
    home.config.mkdir(parents=True)
    cwd = tmp_path / "project"
    cwd.mkdir()
    env = {"CLAUDE_CONFIG_DIR": str(home.config)}
    with ModelServer(Script()) as server:  # its address as serve's, so the session is written
        installed = setup(
            home.home, "claude", "--yes", "--statusline", "--address", server.url, env=env
        )
        assert installed.returncode == 0, installed.stderr
        done = run_claude(home, cwd, "say hello", server).check()
    command = json.loads((home.config / "settings.json").read_text())["statusLine"]["command"]
    transcript = home.session_file(cwd, done.session_id)
    given = {"session_id": done.session_id, "transcript_path": str(transcript)}
    shown = subprocess.run(
        shlex.split(command),
        input=json.dumps(given).encode(),
        capture_output=True,
        env={**clean_environment(), "HOME": str(home.home)},
        timeout=30,
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.decode().startswith("ctxpack ") and "/200k" in shown.stdout.decode()


def test_codex_setup_without_recall_leaves_its_mcp_servers_alone(tmp_path: Path) -> None:
    config = tmp_path / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_bytes(CODEX_CONFIG)
    assert setup(tmp_path, "codex", "--yes", "--no-recall").returncode == 0
    assert "mcp_servers" not in tomllib.loads(config.read_text())
    assert setup(tmp_path, "codex", "--yes").returncode == 0  # and once more, with it: one table
    assert config.read_text().count("[mcp_servers.ctxpack]") == 1
