"""Paths and helpers shared by the tests (importable: pytest puts tests/ on sys.path)."""

from __future__ import annotations

import json
import os
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from cli.main import cli

TESTS = Path(__file__).parent
REPO = TESTS.parent
GOLDEN = TESTS / "golden"
# Real transcripts by other agents, copied with their licences and provenance (corpus/README.md).
CORPUS = TESTS / "corpus"
CTXPACK = Path(sys.executable).parent / "ctxpack"


def corpus_files() -> list[Path]:
    """The real transcripts: every corpus/*.json except the manifest."""
    return sorted(path for path in CORPUS.glob("*.json") if path.name != "manifest.json")


def load_json(path: Path) -> Any:
    return json.loads(path.read_bytes())


def run(
    *args: Any,
    stdin: bytes | None = b"",
    cwd: Path | None = None,
    timeout: float = 60,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run the real ``ctxpack`` executable with the (isolated) environment of the test, or
    ``env`` instead of it."""
    return subprocess.run(
        [str(CTXPACK), *(str(arg) for arg in args)],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        timeout=timeout,
        env=dict(os.environ) if env is None else env,
    )


def invoke(
    *args: Any,
    stdin: bytes | None = None,
    messages: Any = None,
    env: dict[str, str] | None = None,
) -> Result:
    """Run ``ctxpack ARGS`` in this process through click's CliRunner (stdout and stderr apart);
    ``messages`` is sent as JSON on stdin. With ``env``, the environment is exactly that during
    the run, as for a process of its own. Exceptions propagate rather than become exit 1."""
    if messages is not None:
        stdin = dumps(messages)
    environment = None if env is None else {name: None for name in os.environ} | env
    arguments = [str(arg) for arg in args]
    return CliRunner().invoke(cli, arguments, input=stdin, env=environment, catch_exceptions=False)


def estimated_tokens(name: Path | str, *flags: str) -> int:
    """``ctxpack estimate FLAGS NAME``, through click: the token count it prints."""
    done = invoke("estimate", *flags, name)
    assert done.exit_code == 0, done.stderr
    return int(done.stdout)


def serve_in_background(server: socketserver.BaseServer) -> threading.Thread:
    """``server.serve_forever()`` in a daemon thread, looking for ``shutdown()`` every 20 ms
    rather than the default 0.5 s, which every test using a server would wait at its end."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02})
    thread.daemon = True
    thread.start()
    return thread


def wait_until_open(pid: int, path: Path, timeout: float = 20) -> None:
    """Until process ``pid`` holds ``path`` open (seen in /proc/PID/fd), not a fixed pause."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
        except OSError:  # gone, or a descriptor closed while listed
            links = []
        if str(path.resolve()) in links:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never opened {path}")


def fingerprint(path: Path) -> tuple[bytes, int, int]:
    """What must not change when a file is left alone: its bytes, mtime and mode."""
    status = path.stat()
    return path.read_bytes(), status.st_mtime_ns, status.st_mode


def dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()


def tool_names_of(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Call id -> tool name, worked out here independently of the core (SPEC terms)."""
    names: dict[str, str] = {}
    for message in messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            is_call = isinstance(block, dict) and block.get("type") == "tool_use"
            if is_call and isinstance(block.get("id"), str):
                name = block.get("name")
                names[block["id"]] = name if isinstance(name, str) else "unknown"
        for call in message.get("tool_calls") or ():
            if isinstance(call.get("id"), str):
                name = (call.get("function") or {}).get("name")
                names[call["id"]] = name if isinstance(name, str) else "unknown"
    return names


def name_of(names: dict[str, str], call_id: Any) -> str:
    return names.get(call_id, "unknown") if isinstance(call_id, str) else "unknown"


def assert_only_tool_results_changed(
    before: list[dict], after: list[dict], superseded: bool = False
) -> None:
    """Everything equal except tool-result contents, which are markers with the right figures;
    ``superseded``: or a stale-first marker naming the result's own tool."""
    names = tool_names_of(before)
    assert len(before) == len(after)
    for old, new in zip(before, after, strict=True):
        if old.get("role") == "tool":
            assert {k: v for k, v in old.items() if k != "content"} == {
                k: v for k, v in new.items() if k != "content"
            }
            assert_marker_or_same(
                old.get("content"),
                new.get("content"),
                name_of(names, old.get("tool_call_id")),
                superseded,
            )
            continue
        if not isinstance(old.get("content"), list):
            assert old == new
            continue
        assert {k: v for k, v in old.items() if k != "content"} == {
            k: v for k, v in new.items() if k != "content"
        }
        assert len(old["content"]) == len(new["content"])
        for old_block, new_block in zip(old["content"], new["content"], strict=True):
            if isinstance(old_block, dict) and old_block.get("type") == "tool_result":
                assert {k: v for k, v in old_block.items() if k != "content"} == {
                    k: v for k, v in new_block.items() if k != "content"
                }
                tool = name_of(names, old_block.get("tool_use_id"))
                new_content = new_block.get("content")
                assert_marker_or_same(old_block.get("content"), new_content, tool, superseded)
            else:
                assert old_block == new_block


def original_length(content: Any) -> int:
    """SPEC §2's N: code points of a string, 0 for null, else of its JSON text."""
    if isinstance(content, str):
        return len(content)
    return 0 if content is None else len(json.dumps(content, ensure_ascii=False))


def assert_marker_or_same(old: Any, new: Any, tool: str, superseded: bool = False) -> None:
    if new == old:
        return
    if superseded and isinstance(new, str) and new.startswith(f"[superseded: {tool} "):
        assert new.endswith("]") and "\n" not in new
        return
    assert new == f"[truncated: {tool} result, {original_length(old)} chars]"


def micro_in_place(
    messages: list[dict[str, Any]],
    keep_recent: int = 3,
    exclude_tools: Any = (),
    min_chars: int = 0,
    compat: bool = False,
    stale: bool = True,
) -> Any:
    """Micro compaction written back into ``messages`` (the list, not its dicts), for tests that
    look at the list afterwards; ``micro_compact`` itself returns a new list. ``stale=False``:
    by age alone, SPEC §2's markers exactly."""
    from compactor_core.compaction.micro import micro_compact
    from compactor_core.settings import Settings

    settings = Settings(keep_recent, tuple(exclude_tools), min_chars, compat=compat, stale=stale)
    messages[:], result = micro_compact(messages, settings)
    return result


def session_result(
    data: bytes,
    agent_format: Any,
    job: Any,
    provider: Any = None,
    around: Any = None,
) -> tuple[bytes, Any, Any]:
    """``job`` on a session file given as bytes, by the core's one pipeline: the new file, the
    outcome, and the index the decisions were made on."""
    import io

    from compactor_core.compaction.pipeline import decide
    from compactor_core.session_files.compact import SessionSubject, Surroundings
    from compactor_core.session_files.index import index_session
    from compactor_core.session_files.write import session_chunks

    handle = io.BytesIO(data)
    index = index_session(handle, agent_format, "<session>", rules=job.settings.touch_rules)
    subject = SessionSubject(handle, index, job.settings, around or Surroundings())
    outcome = decide(job, subject, provider)
    return b"".join(session_chunks(handle, index, subject.rewrite())), outcome, index


def still_running(processes: list[Any], timeout: float) -> list[Any]:
    """Those of ``processes`` (psutil's) still at work after ``timeout`` seconds; a zombie
    (dead, not yet reaped by whoever adopted it) does nothing and counts as gone."""
    import psutil

    deadline = time.monotonic() + timeout
    while True:
        alive = []
        for process in processes:
            try:
                if process.status() != psutil.STATUS_ZOMBIE:
                    alive.append(process)
            except psutil.NoSuchProcess:
                pass
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.01)


def jsonl(messages: Any) -> Any:
    """A conversation of these messages, one a line (what a snapshot store keeps as JSONL)."""
    from compactor_core.conversation.formats import Conversation

    return Conversation(list(messages), "jsonl")


# Run `ctxpack ARGS` and print, last on stderr, which lazily loaded commands' modules it imported.
_LAZY_LOADED = """\
import sys
from cli.main import cli, main
lazy = {place.split(":")[0] for place, _ in cli.lazy_commands.values()} - set(sys.modules)
sys.argv = ["ctxpack", *sys.argv[1:]]
try:
    main()
finally:
    print(sorted(lazy & set(sys.modules)), file=sys.stderr)
"""


def lazy_modules_loaded(
    *args: str, cwd: Path = REPO, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``ctxpack ARGS`` in a process whose stderr ends with the command modules it loaded, of
    those ``cli/main.py`` loads only when needed."""
    environment = {**(os.environ if env is None else env), "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", _LAZY_LOADED, *args],
        capture_output=True,
        cwd=cwd,
        env=environment,
        timeout=60,
    )
