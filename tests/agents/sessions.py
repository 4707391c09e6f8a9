"""Genuine session files, written by the real agents themselves while a scripted model works.

The model is scripted to do what a busy coding session does: every turn it calls several tools
in parallel (shell commands with long outputs, a file read), then answers; after some turns the
agent compacts the conversation itself (Claude Code's ``/compact``, Codex's auto-compaction), and
work goes on after it, so that a session holds tool results on both sides of the boundary.

    session = make_claude_session(tmp_path / "claude", Workload(turns=2))
    session.path, session.session_id, session.project
"""

from __future__ import annotations

import json
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from helpers import CORPUS

from agents.claude import ClaudeHome, run_claude
from agents.codex import CodexHome, run_codex
from agents.qwen import QwenHome
from agents.script import Reply, Script, ToolCall
from agents.server import ModelServer, tokens_by_size

CHECKPOINT = "Checkpoint: note where we are."
# The prompt of each resume the tests make; it must reach the model intact.
RESUME_PROMPT = "Resume: what is the state of the report?"


@dataclass(frozen=True)
class Workload:
    turns: int = 3  # user requests before the agent's own compaction
    turns_after: int = 5  # and after it: more tool-result turns than micro keeps whole
    output_lines: int = 700  # lines of each shell output (about 30 characters each)
    compact: bool = True
    remote_compaction: bool = False  # Codex: compact as with OpenAI's API (an encrypted item)
    repeated: bool = False  # the same commands and read every turn: earlier results go stale


@dataclass(frozen=True)
class Session:
    agent: str  # "claude-code" or "codex"
    root: Path  # the scratch home the agent ran in
    project: Path  # the working folder
    session_id: str
    path: Path  # the session file
    remote_compaction: bool = False  # Codex: its provider is named OpenAI (see Workload)

    def copy_to(self, root: Path) -> Session:
        """The same session in a fresh scratch home: its file and project folder, nothing else.

        Codex keeps the absolute rollout path in its own sqlite state, so a copied CODEX_HOME
        would resume into the old file; a home with only the rollout file is rebuilt from it.
        """
        path = root / self.path.relative_to(self.root)
        path.parent.mkdir(parents=True)
        shutil.copy2(self.path, path)
        project = root / self.project.relative_to(self.root)
        shutil.copytree(self.project, project)
        if self.agent == "claude-code":  # the project folder's name follows the cwd
            path = _moved(path, ClaudeHome(root).project_dir(project))
        if self.agent == "qwen-code":  # so do the folder's name and every record's cwd
            path = _moved(path, QwenHome(root).chats(project))
            _rewrite_cwd(path, self.project, project)
        return Session(self.agent, root, project, self.session_id, path, self.remote_compaction)


def _rewrite_cwd(path: Path, old: Path, new: Path) -> None:
    """Qwen Code resumes a session only in the folder its records name (``cwd``)."""
    lines = []
    for line in path.read_bytes().splitlines(keepends=True):
        record = json.loads(line)
        if record.get("cwd") == str(old):
            record["cwd"] = str(new)
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        lines.append(line)
    path.write_bytes(b"".join(lines))


def _moved(path: Path, folder: Path) -> Path:
    if path.parent == folder:
        return path
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / path.name
    path.rename(target)
    return target


# The real sessions of the corpus (tests/corpus/README.md), by their session id.
ORIGINALS = {
    "cc_kimi_516b7270": "516b7270-b0ab-4d34-9e4d-1f05c9ccd20a",
    "cc_entire_1284c080": "1284c080-f9cd-45f8-9942-ff58f5c517e5",
}


def original_session(root: Path, name: str) -> Session:
    """A corpus session put where Claude Code looks for it: in a scratch project's folder."""
    project = root / "project"
    project.mkdir(parents=True)
    session_id = ORIGINALS[name]
    path = ClaudeHome(root).session_file(project, session_id)
    path.parent.mkdir(parents=True)
    shutil.copyfile(CORPUS / "originals" / f"{name}__full.jsonl", path)
    return Session("claude-code", root, project, session_id, path)


def prepare_project(project: Path, workload: Workload) -> None:
    project.mkdir(parents=True, exist_ok=True)
    lines = (f"{n:05d} report row {n}: status ok, value {n * 37 % 1000}" for n in range(4000))
    (project / "report.txt").write_text("\n".join(lines) + "\n")


def shell_commands(turn: int, workload: Workload) -> list[str]:
    """Two commands with long outputs, different each turn (so no two results are equal), or
    the same every turn with ``workload.repeated``."""
    count, label = workload.output_lines, "each turn" if workload.repeated else f"turn {turn}"
    return [
        f"seq -f '{label}: build step %g compiled' 1 {count}",
        f"seq -f '{label}: test case %g passed' {count} {2 * count}",
    ]


def make_claude_session(root: Path, workload: Workload) -> Session:
    home = ClaudeHome(root)
    project = root / "project"
    prepare_project(project, workload)
    session_id = str(uuid.uuid4())
    with ModelServer(Script()) as server:
        for turn in range(workload.turns):
            _claude_turn(home, project, server, session_id, turn, workload, first=turn == 0)
        if workload.compact:
            run_claude(home, project, "/compact", server, resume=session_id).check()
            for turn in range(workload.turns, workload.turns + workload.turns_after):
                _claude_turn(home, project, server, session_id, turn, workload, first=False)
    return Session("claude-code", root, project, session_id, home.session_file(project, session_id))


def _claude_turn(
    home: ClaudeHome,
    project: Path,
    server: ModelServer,
    session_id: str,
    turn: int,
    workload: Workload,
    first: bool,
) -> None:
    calls = [
        ToolCall("Bash", {"command": command, "description": f"step {turn}"})
        for command in shell_commands(turn, workload)
    ]
    limit = 40 if workload.repeated else 40 + turn
    calls.append(ToolCall("Read", {"file_path": str(project / "report.txt"), "limit": limit}))
    server.script.extend(
        [
            Reply(
                text=f"Turn {turn}: building, testing and reading the report.",
                thinking=f"Turn {turn} needs the build log, the tests and the report.",
                calls=tuple(calls),
            ),
            Reply(text=f"Turn {turn} done: all steps passed."),
        ]
    )
    prompt = f"Request {turn}: build, test and read the report."
    if first:
        run_claude(home, project, prompt, server, session_id=session_id).check()
    else:
        run_claude(home, project, prompt, server, resume=session_id).check()


def make_codex_session(root: Path, workload: Workload) -> Session:
    home = CodexHome(root)
    project = root / "project"
    prepare_project(project, workload)
    session_id: str | None = None
    with ModelServer(Script(), input_tokens=tokens_by_size) as server:
        for turn in range(workload.turns):
            session_id = _codex_turn(home, project, server, session_id, turn, workload)
        if workload.compact:
            # Codex compacts on its own before a turn once the context is over the limit; a turn
            # without tools, so that it does not compact again in the middle of one.
            server.script.extend([Reply(text="Noted.")])
            run_codex(
                home,
                project,
                CHECKPOINT,
                server,
                resume=session_id,
                auto_compact_tokens=1000,
                remote_compaction=workload.remote_compaction,
            ).check()
            for turn in range(workload.turns, workload.turns + workload.turns_after):
                _codex_turn(home, project, server, session_id, turn, workload)
    assert session_id is not None
    path = home.session_file(session_id)
    return Session("codex", root, project, session_id, path, workload.remote_compaction)


def _codex_turn(
    home: CodexHome,
    project: Path,
    server: ModelServer,
    session_id: str | None,
    turn: int,
    workload: Workload,
) -> str:
    calls = [
        ToolCall("exec_command", {"cmd": command}) for command in shell_commands(turn, workload)
    ]
    calls.append(ToolCall("exec_command", {"cmd": f"head -n {40 + turn} report.txt"}))
    server.script.extend(
        [
            Reply(
                text=f"Turn {turn}: building, testing and reading the report.", calls=tuple(calls)
            ),
            Reply(text=f"Turn {turn} done: all steps passed."),
        ]
    )
    prompt = f"Request {turn}: build, test and read the report."
    remote = workload.remote_compaction
    run = run_codex(home, project, prompt, server, resume=session_id, remote_compaction=remote)
    run.check()
    assert run.session_id is not None
    return run.session_id
