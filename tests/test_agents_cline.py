"""Cline's sessions, one JSON document each, through every command (SPEC §8, issue 25).

The fixture was written by the real Cline (tests/fixtures/more_agents/regenerate.py): its
``<id>.messages.json`` and the ``<id>.json`` beside it. It is detected from its content, checked,
shrunk in place by ``micro`` (only tool results become markers; the rest of the document byte for
byte, in Cline's own layout), compacted by ``full`` (Cline's compaction summary as the history)
and restored byte for byte; bad documents are refused in one line and never changed; a session
Cline's ``<id>.json`` says a live Cline has is left alone. Cline resuming these documents is
test_agents_resume_cline.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import TESTS, estimated_tokens, invoke

from compactor_core.compaction.micro import is_marker
from compactor_core.session_files import registry

FIXTURES = TESTS / "fixtures" / "more_agents"
DOCUMENT = FIXTURES / "cline.messages.json"
SESSION = json.loads((FIXTURES / "cline.json").read_bytes())["session_id"]
OLD = time.time() - 3600
IN_PLACE = ("--in-place", "--min-idle", "0")


def placed(root: Path, data: bytes | None = None, manifest: dict[str, Any] | None = None) -> Path:
    """The session where Cline keeps it: ``<home>/data/sessions/<id>/<id>.messages.json``."""
    folder = root / "data" / "sessions" / SESSION
    folder.mkdir(parents=True)
    path = folder / f"{SESSION}.messages.json"
    path.write_bytes(DOCUMENT.read_bytes() if data is None else data)
    meta = manifest or json.loads((FIXTURES / "cline.json").read_bytes())
    (folder / f"{SESSION}.json").write_text(json.dumps({**meta, "messages_path": str(path)}))
    os.utime(path, (OLD, OLD))
    return path


def messages(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_bytes())["messages"]


def clines_layout(data: bytes) -> bytes:
    """The document as Cline writes it: ``JSON.stringify(document, null, 2)`` and a newline."""
    return (json.dumps(json.loads(data), indent=2, ensure_ascii=False) + "\n").encode()


def test_a_real_session_is_detected_from_its_content_and_healthy() -> None:
    with open(DOCUMENT, "rb") as handle:
        assert registry.detect_stored(handle, "auto", "x.json").name == "cline"
    checked = invoke("check", "--json", DOCUMENT)
    assert checked.exit_code == 0, checked.stdout
    report = json.loads(checked.stdout)
    assert report["format"] == "cline" and report["problems"] == []
    assert report["records"] == len(messages(DOCUMENT))
    assert report["tokens"] == estimated_tokens(DOCUMENT, "--format", "cline") > 0
    assert clines_layout(DOCUMENT.read_bytes()) == DOCUMENT.read_bytes()


def test_micro_shrinks_only_tool_results_in_clines_layout_and_restore_gives_it_back(
    tmp_path: Path,
) -> None:
    path = placed(tmp_path)
    original = path.read_bytes()
    before = estimated_tokens(path)
    done = invoke("micro", *IN_PLACE, path)
    assert done.exit_code == 0, done.stderr
    after = path.read_bytes()
    assert estimated_tokens(path) < before
    assert clines_layout(after) == after  # written as Cline writes it
    old, new = messages(DOCUMENT), messages(path)
    assert len(old) == len(new)
    changed = [(a, b) for a, b in zip(old, new, strict=True) if a != b]
    assert len(changed) == 6  # three results a turn, the newest three turns whole
    for was, now in changed:
        assert {key: value for key, value in now.items() if key != "content"} == {
            key: value for key, value in was.items() if key != "content"
        }
        assert [block["type"] for block in now["content"]] == ["tool_result"]
        assert is_marker(now["content"][0]["content"])
    again = invoke("micro", *IN_PLACE, path)  # idempotent: nothing left to shrink
    assert again.exit_code == 0 and path.read_bytes() == after
    assert invoke("check", path).exit_code == 0
    restored = invoke("restore", path)
    assert restored.exit_code == 0, restored.stderr
    assert path.read_bytes() == original


def test_full_writes_clines_compaction_as_the_history_and_restore_gives_it_back(
    tmp_path: Path,
) -> None:
    path = placed(tmp_path)
    original = path.read_bytes()
    done = invoke("full", *IN_PLACE, path)
    assert done.exit_code == 0, done.stderr
    after = json.loads(path.read_bytes())
    summary = after["messages"][0]
    assert summary["role"] == "user" and summary["metadata"]["kind"] == "compaction_summary"
    assert summary["content"][0]["text"] == "Context summary:\n\n" + summary["metadata"]["summary"]
    assert {key: value for key, value in after.items() if key != "messages"} == {
        key: value for key, value in json.loads(original).items() if key != "messages"
    }
    assert clines_layout(path.read_bytes()) == path.read_bytes()
    assert estimated_tokens(path) < estimated_tokens(DOCUMENT) / 2
    assert invoke("check", path).exit_code == 0
    assert invoke("restore", path).exit_code == 0 and path.read_bytes() == original


@pytest.mark.parametrize("command", ["micro", "full", "auto"])
def test_a_dry_run_changes_nothing(command: str, tmp_path: Path) -> None:
    path = placed(tmp_path)
    status = path.stat()
    done = invoke(command, *IN_PLACE, "--dry-run", path)
    assert done.exit_code == 0, done.stderr
    assert path.read_bytes() == DOCUMENT.read_bytes()
    assert path.stat().st_mtime_ns == status.st_mtime_ns


def test_a_session_a_live_cline_has_is_left_alone(tmp_path: Path) -> None:
    # a process that is a Cline by its command line, as <id>.json names it
    cline = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "cline"])
    try:
        manifest = json.loads((FIXTURES / "cline.json").read_bytes())
        path = placed(tmp_path, manifest={**manifest, "status": "running", "pid": cline.pid})
        done = invoke("micro", *IN_PLACE, path)
        assert done.exit_code == 75
        assert f"Cline process {cline.pid} has it, status running" in done.stderr
        assert path.read_bytes() == DOCUMENT.read_bytes()
        assert invoke("micro", *IN_PLACE, "--force", path).exit_code == 0
    finally:
        cline.kill()
        cline.wait()
    # a status that says running, of a process that is gone: Cline was killed
    other = placed(tmp_path / "gone", manifest={**manifest, "status": "running", "pid": cline.pid})
    assert invoke("micro", *IN_PLACE, other).exit_code == 0


def test_a_folder_of_sessions_is_its_documents_not_the_files_beside_them(tmp_path: Path) -> None:
    path = placed(tmp_path)
    beside = path.with_name(f"{SESSION}.json")
    status = beside.read_bytes()
    done = invoke("micro", *IN_PLACE, "--stats", "-r", tmp_path)
    assert done.exit_code == 0, done.stderr
    assert "ctxpack: 1 files, 1 changed, 0 failed" in done.stderr
    assert f"{path}: 6 tool results truncated" in done.stderr and str(beside) not in done.stderr
    assert beside.read_bytes() == status
    named = invoke("micro", *IN_PLACE, beside)  # named, it is an input: not a conversation
    assert named.exit_code == 65


def test_sessions_finds_them_under_clines_home(tmp_path: Path) -> None:
    path = placed(tmp_path / "cline-home")
    env = {"HOME": str(tmp_path / "nobody"), "PATH": os.environ.get("PATH", "")}
    listed = invoke(
        "sessions",
        "--json",
        "--agent",
        "cline",
        env={**env, "CLINE_DIR": str(tmp_path / "cline-home")},
    )
    assert listed.exit_code == 0, listed.stderr
    [row] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (row["agent"], row["id"], row["path"]) == ("cline", SESSION, str(path))
    assert row["tokens"] == estimated_tokens(DOCUMENT) and row["in_use"] is False


# --- bad input -----------------------------------------------------------------------------------


def test_a_torn_document_is_reported_and_never_changed(tmp_path: Path) -> None:
    data = DOCUMENT.read_bytes()
    path = placed(tmp_path, data[: len(data) // 2])
    checked = invoke("check", "--json", path)
    assert checked.exit_code == 1
    [problem] = json.loads(checked.stdout)["problems"]
    assert problem["kind"] == "invalid"
    done = invoke("micro", *IN_PLACE, "--format", "cline", path)
    assert done.exit_code == 65
    assert done.stderr.count("\n") == 1 and "the document ends early (torn?)" in done.stderr
    assert f"{path}: line " in done.stderr
    assert path.read_bytes() == data[: len(data) // 2]


def test_a_document_that_is_not_json_is_refused_in_one_line(tmp_path: Path) -> None:
    path = placed(tmp_path, b'{\n  "version": 1,\n  "sessionId": "x",\n  oops\n}\n')
    done = invoke("full", *IN_PLACE, "--format", "cline", path)
    assert done.exit_code == 65
    assert done.stderr.startswith(f"ctxpack: {path}: line 4, column 3: ")
    assert done.stderr.count("\n") == 1


def test_a_message_of_an_unknown_kind_is_kept_as_it_is(tmp_path: Path) -> None:
    text = DOCUMENT.read_text()
    unknown = '{\n      "id": "f1",\n      "role": "from-the-future",\n      "data": [1, 2]\n    },'
    first = text.index('    {\n      "id"')
    path = placed(tmp_path, (text[:first] + "    " + unknown + "\n" + text[first:]).encode())
    assert invoke("check", path).exit_code == 0
    done = invoke("micro", *IN_PLACE, path)
    assert done.exit_code == 0, done.stderr
    assert path.read_text().count(unknown) == 1
    assert messages(path)[0] == {"id": "f1", "role": "from-the-future", "data": [1, 2]}


def test_an_empty_document_is_nothing_to_do(tmp_path: Path) -> None:
    path = placed(tmp_path, b"")
    assert invoke("micro", *IN_PLACE, "--format", "cline", path).exit_code == 0
    assert path.read_bytes() == b""
    assert estimated_tokens(path, "--format", "cline") == 0
