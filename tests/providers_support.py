"""Running the real ``ctxpack`` for the provider tests, and what SPEC §3 step 8 demands of it."""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers import dumps, invoke, run

from compactor_core.conversation.prompts import PROMPTS, SUMMARY_PREFIX

SECRET = "sk-test-SECRET123"
# Read at import: the suite's isolation fixture clears every CTXPACK_* variable before each test.
REPORT = os.environ.get("CTXPACK_TEST_REPORT")

# A small agent session: a system prompt, a request, tool calls and results (Anthropic blocks),
# some talk, and the pending request the summary must not swallow.
CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a coding agent working in /srv/app."},
    {
        "role": "user",
        "content": "登录测试 tests/test_login.py 失败了，请修复 src/auth.py，但不要修改数据库结构。"
        " Keep the public API of auth.login() unchanged.",
    },
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "I will run the failing test first."},
            {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "pytest -x"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": "FAILED tests/test_login.py::test_expired_token - AssertionError: "
                "expected 401, got 200\n1 failed, 41 passed in 2.31s",
            }
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "The token expiry check is inverted; fixing it."},
            {
                "type": "tool_use",
                "id": "t2",
                "name": "edit",
                "input": {"path": "src/auth.py", "old": "exp < now", "new": "exp > now"},
            },
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "ok: 1 line changed"}],
    },
    {"role": "assistant", "content": "修复完成：过期判断写反了。全部 42 个测试通过。"},
    {"role": "user", "content": "很好。现在请更新 CHANGELOG.md。"},
]
SUMMARY = "目标：修复登录测试。已修改 src/auth.py（过期判断写反）。不要改数据库结构。"


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    transcripts: Path

    @property
    def output(self) -> Any:
        return json.loads(self.stdout)

    def warnings(self) -> list[str]:
        return self.stderr.splitlines()


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """No inherited keys, CTXPACK_* settings, proxies or user config: only what the test says."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "LANG": "C.UTF-8",
        "PYTHONPYCACHEPREFIX": os.environ["PYTHONPYCACHEPREFIX"],  # set by conftest
    }
    env.update(extra)
    return env


def run_ctxpack(
    tmp_path: Path,
    args: list[str],
    conversation: Any = CONVERSATION,
    env: dict[str, str] | None = None,
    timeout: float = 60,
    in_process: bool = False,
) -> Run:
    """``ctxpack ARGS`` in a real process (or, ``in_process``, through click's CliRunner in this
    one, in ``tmp_path`` too), the conversation on stdin, snapshots in tmp_path."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    transcripts = tmp_path / "transcripts"
    args = [*args, "--transcript-dir", str(transcripts)]
    stdin = dumps(conversation)
    env = env if env is not None else clean_env(tmp_path, OPENAI_API_KEY=SECRET)
    started = time.monotonic()
    if in_process:
        with contextlib.chdir(tmp_path):
            result = invoke(*args, stdin=stdin, env=env)
        status, stdout, stderr = result.exit_code, result.stdout, result.stderr
    else:
        process = run(*args, stdin=stdin, cwd=tmp_path, timeout=timeout, env=env)
        status, stdout, stderr = (
            process.returncode,
            process.stdout.decode(),
            process.stderr.decode(),
        )
    return Run(status, stdout, stderr, time.monotonic() - started, transcripts)


def snapshots(run: Run) -> list[list[Any]]:
    """The messages of each snapshot, oldest first (names sort by time): an original keeps the
    input's bytes (a JSON array here), a result is JSONL."""
    if not run.transcripts.exists():
        return []
    files = sorted(path for path in run.transcripts.iterdir() if path.suffix in (".json", ".jsonl"))
    return [
        json.loads(path.read_bytes())
        if path.suffix == ".json"
        else [json.loads(line) for line in path.read_text("utf-8").splitlines()]
        for path in files
    ]


def assert_no_secret(run: Run, secret: str = SECRET) -> None:
    assert secret not in run.stdout
    assert secret not in run.stderr
    if run.transcripts.exists():
        for path in run.transcripts.rglob("*"):
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), path


def assert_best_effort(run: Run, cause: str, status: int, conversation: Any = CONVERSATION) -> None:
    """SPEC §3 step 8: the input unchanged, one warning naming the cause, the snapshot kept."""
    assert run.returncode == status, run.stderr
    assert run.output == conversation
    lines = run.warnings()
    assert len(lines) == 1, lines
    assert "summary failed" in lines[0] and cause in lines[0], lines[0]
    assert snapshots(run) == [conversation]
    assert_no_secret(run)


def assert_compacted(run: Run, summary: str, conversation: Any = CONVERSATION) -> None:
    """SPEC §3 step 7: system messages, the summary, the acknowledgement, the pending turn."""
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    assert run.output == [
        conversation[0],
        {"role": "user", "content": SUMMARY_PREFIX + summary},
        {"role": "assistant", "content": PROMPTS["zh"].acknowledgement},
        conversation[-1],
    ]
    assert len(snapshots(run)) == 2  # the input, then the result
    assert_no_secret(run)


def report(case: str, seconds: float, **more: Any) -> None:
    """Append one measurement to $CTXPACK_TEST_REPORT (JSON lines), if it is set."""
    if REPORT:
        with open(REPORT, "a", encoding="utf-8") as file:
            file.write(json.dumps({"case": case, "seconds": round(seconds, 3), **more}) + "\n")
