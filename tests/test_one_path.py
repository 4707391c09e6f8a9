"""Issue 19: one path for one input — what a user saw go wrong before, and what the one path
promises: any snapshot folder with any input, the cut-off told for every input, a library that
works without the CLI, a provider registered once for the CLI and its workers, and the light
start of a filter run on every agent turn."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, TESTS, invoke
from provider_seam import use_provider
from support_full import RecordingProvider, session_zh

from compactor_core import CompactionWarning, Settings, compact, compact_file, provider
from compactor_core.errors import InputError, SessionInUse, SummaryCutOff
from compactor_core.providers.catalog import ProviderSettings
from compactor_core.snapshots.local_store import SnapshotStore

CLAUDE_SESSION = TESTS / "fixtures" / "claude_code" / "session.jsonl"


def big_conversation() -> list[dict[str, Any]]:
    """The session three times over, each copy's calls under ids of their own (t1 becomes
    t1-2 …), as a real conversation never repeats a call id."""
    copies = [session_zh()]
    for copy in (2, 3):
        text = json.dumps(session_zh(), ensure_ascii=False)
        copies.append(json.loads(re.sub(r'"(t[0-9]+)"', rf'"\1-{copy}"', text)))
    return [message for each in copies for message in each]


# --- any snapshot folder, with any input ---------------------------------------------------------


def memory_objects(prefix: str) -> dict[str, bytes]:
    import fsspec

    fs = fsspec.filesystem("memory")
    return {path: fs.cat_file(path) for path in fs.find(prefix)}


@pytest.mark.parametrize("where", ["stdin", "file", "session file"])
def test_a_url_snapshot_folder_keeps_the_original_of_any_input(tmp_path: Path, where: str) -> None:
    prefix = f"memory://snaps-{where.replace(' ', '-')}"
    if where == "session file":
        path = tmp_path / "s.jsonl"
        path.write_bytes(CLAUDE_SESSION.read_bytes())
        done = invoke(
            "micro", "-i", "--force", "--keep-recent", "1", "--snapshot-dir", prefix, path
        )
        original = CLAUDE_SESSION.read_bytes()
    elif where == "file":
        path = tmp_path / "a.json"
        path.write_text(json.dumps(big_conversation(), ensure_ascii=False))
        original = path.read_bytes()
        done = invoke("micro", "-i", "--snapshot-dir", prefix, path)
    else:
        original = json.dumps(big_conversation(), ensure_ascii=False).encode()
        done = invoke("full", "--snapshot-dir", prefix, stdin=original)
    assert done.exit_code == 0, done.stderr
    kept = memory_objects(prefix.removeprefix("memory:/"))
    originals = [data for name, data in kept.items() if ".original." in name and "meta" not in name]
    assert originals == [original]
    assert len(kept) >= 2  # and its .meta


# --- a summary cut off is told, for every input --------------------------------------------------


class CutOff:
    name = "cut-off"

    def summarize(self, request: Any) -> str:
        raise SummaryCutOff("the summary stopped at max_tokens (5)", "Goal: half a summa")


@pytest.mark.parametrize("where", ["conversation", "session file"])
def test_a_cut_off_summary_is_kept_and_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    use_provider(monkeypatch, CutOff())
    if where == "session file":
        path = tmp_path / "s.jsonl"
        path.write_bytes(CLAUDE_SESSION.read_bytes())
    else:
        path = tmp_path / "a.json"
        path.write_text(json.dumps(big_conversation(), ensure_ascii=False))
    done = invoke("full", "--stats", path)
    assert done.exit_code == 0, done.stderr
    assert f"{path}: summary kept, but the summary stopped at max_tokens (5)" in done.stderr
    assert "(cut off at max_tokens)" in done.stderr
    assert "half a summa" in done.stdout
    strict = invoke("full", "--strict", path)
    assert strict.exit_code == 69 and "half a summa" not in strict.stdout


# --- the library without the CLI -----------------------------------------------------------------


def test_a_provider_s_defaults_come_from_its_declaration() -> None:
    hosted = ProviderSettings("anthropic", api_key="k")
    assert hosted.base_url == "https://api.anthropic.com"
    assert hosted.model == "claude-3-5-haiku-latest" and hosted.key_required
    local = ProviderSettings("openai", base_url="http://127.0.0.1:9/v1")
    assert local.model == "gpt-4o-mini" and not local.key_required
    local.check_key()  # a local server needs no key
    assert provider("anthropic", api_key="k").model == "claude-3-5-haiku-latest"
    with pytest.raises(Exception, match="no API key for provider 'openai': set OPENAI_API_KEY"):
        ProviderSettings("openai").check_key()


def test_compact_tells_a_failed_summary() -> None:
    messages = big_conversation()
    failing = RecordingProvider(reply="")  # an empty summary is a failure (SPEC §3.10)
    with pytest.warns(CompactionWarning, match="summary not used: recording: the summary is empty"):
        assert compact(messages, "full", provider=failing) == messages
    with pytest.raises(Exception, match="the summary is empty"):
        compact(messages, "full", provider=failing, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(compact(messages, "full")) < len(messages)  # a good summary: no warning


def test_compact_file_does_a_session_file_in_place(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(CLAUDE_SESSION.read_bytes())
    snapshots = tmp_path / "snaps"
    report = compact_file(path, "micro", Settings(keep_recent=1), snapshots=snapshots, force=True)
    assert report.changed and report.outcome.truncated > 0
    assert report.outcome.tokens_after < report.outcome.tokens_before
    [kept] = SnapshotStore(snapshots).snapshots()
    assert kept.read() == CLAUDE_SESSION.read_bytes()
    # just written, but by ctxpack itself (its snapshot says so): not in use (issue 21.8)
    again = compact_file(path, "micro", Settings(keep_recent=0), snapshots=snapshots)
    assert again.changed
    with path.open("ab") as agent:  # its agent writes a line: now it is in use
        agent.write(b'{"type":"user","uuid":"u-late","message":{"role":"user","content":"x"}}\n')
    with pytest.raises(SessionInUse, match="less than min_idle=60s"):
        compact_file(path, "micro", Settings(keep_recent=0), snapshots=snapshots)
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": 1}]')
    with pytest.raises(InputError, match=r"bad.json: messages\[0\]"):
        compact_file(bad, "micro")


# --- one provider seam, for the CLI and its workers -----------------------------------------------


def test_a_registered_provider_reaches_the_batch_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_provider(monkeypatch, RecordingProvider(reply="目标：SEAM。"))
    for number in range(4):
        (tmp_path / f"s{number}.json").write_text(json.dumps(big_conversation()))
    done = invoke("full", "-i", "-r", "-j", "2", "--no-snapshot", tmp_path)
    assert done.exit_code == 0, done.stderr
    for number in range(4):
        assert "SEAM" in (tmp_path / f"s{number}.json").read_text()


# --- a filter run on every turn loads only what it needs -----------------------------------------


def test_micro_of_a_piped_array_loads_no_session_machinery() -> None:
    code = (
        "import sys\n"
        "sys.argv = ['ctxpack', 'micro']\n"
        "from cli.main import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "core = sorted(m for m in sys.modules if m.startswith('compactor_core'))\n"
        "unwanted = ('session_files', 'engines', 'snapshots', 'storage', 'providers', 'full')\n"
        "print([m for m in core if any(part in m for part in unwanted)], file=sys.stderr)\n"
        "print('concurrent.futures.process' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(big_conversation()).encode(),
        capture_output=True,
        cwd=REPO,
        timeout=60,
    )
    # the conversation three times over: each old result is repeated later, so stale
    assert done.returncode == 0 and b"[superseded:" in done.stdout
    assert done.stderr.decode().splitlines() == ["[]", "False"]


def test_a_provider_is_loaded_only_once_a_summary_is_asked_of_it() -> None:
    """auto under its threshold with a network provider loads none of the providers' modules
    (nor needs the key it would need)."""
    code = (
        "import sys\n"
        "sys.argv = ['ctxpack', 'auto', '--policy', 'every-turn', '--provider', 'openai']\n"
        "from cli.main import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as end:\n"
        "    assert not end.code, end.code\n"
        "loaded = ('openai', 'http', 'extractive')\n"
        "print([m for m in loaded if 'compactor_core.providers.' + m in sys.modules])\n"
    )
    environment = {key: value for key, value in os.environ.items() if "API_KEY" not in key}
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps([{"role": "user", "content": "hi"}]).encode(),
        capture_output=True,
        cwd=REPO,
        env={**environment, "PYTHONPATH": str(REPO), "CTXPACK_CONFIG": os.devnull},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines()[-1] == "[]"
