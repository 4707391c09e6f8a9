"""`--tokenizer`, CTXPACK_TOKENIZER and the config file: the exact counts and what needs a
process of its own (a missing extra, what the heuristic path imports) through the real executable,
the rest in process (click's CliRunner), where each vocabulary is loaded once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, corpus_files, dumps, invoke, run
from tokenizer_reference import reference_total

from compactor_core.compaction.estimate import counted_texts, estimate
from compactor_core.conversation.formats import parse

INSTALL = "pip install 'ctxpack[tokenizers]'"
PROSE = "我们需要先检查配置文件，然后重新运行测试，确认问题已经解决。"


def exact(name: str, path: Path) -> int:
    conversation = parse(path.read_bytes(), str(path))
    return reference_total(name, counted_texts(conversation.messages, conversation.system))


def chinese_session(path: Path, turns: int = 12) -> Path:
    """A session of Chinese prose: the heuristic counts it well above what o200k counts."""
    messages = [
        {"role": "user" if index % 2 == 0 else "assistant", "content": PROSE * 8}
        for index in range(turns)
    ]
    messages.append({"role": "user", "content": "继续"})
    path.write_bytes(dumps(messages))
    return path


@pytest.mark.parametrize("name", ["o200k", "cl100k", "qwen3"])
def test_estimate_prints_the_exact_count(name: str) -> None:
    path = corpus_files()[0]
    result = run("estimate", "--tokenizer", name, path)
    assert (result.returncode, result.stderr) == (0, b"")
    assert int(result.stdout) == exact(name, path)


def test_json_says_who_counted_and_shows_the_heuristic_beside_it() -> None:
    path = corpus_files()[1]
    report = json.loads(invoke("estimate", "--json", "--tokenizer", "o200k", path).stdout)
    heuristic = int(invoke("estimate", path).stdout)
    assert report["tokenizer"] == "o200k"
    assert report["tokens"] == report["exact"] == exact("o200k", path)
    assert report["heuristic"] == {
        "tokens": heuristic,
        "ratio": round(heuristic / report["tokens"], 3),
    }
    plain = json.loads(invoke("estimate", "--json", path).stdout)
    assert plain["tokenizer"] == "heuristic" and "heuristic" not in plain


def test_threshold_compares_the_exact_count(tmp_path: Path) -> None:
    path = chinese_session(tmp_path / "zh.json")
    tokens = int(invoke("estimate", "--tokenizer", "o200k", path).stdout)
    assert int(invoke("estimate", path).stdout) > tokens  # the heuristic says more
    quiet = ("estimate", "-q", "--tokenizer", "o200k", "--over")
    assert invoke(*quiet, tokens - 1, path).exit_code == 0
    assert invoke(*quiet, tokens, path).exit_code == 1


def test_flag_beats_environment_beats_config_file(tmp_path: Path) -> None:
    path = corpus_files()[0]
    config = tmp_path / "config.toml"
    config.write_text('tokenizer = "qwen3"\n', encoding="utf-8")
    counts = {name: f"{exact(name, path)}\n" for name in ("o200k", "cl100k", "qwen3")}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CTXPACK_CONFIG", str(config))
        assert invoke("estimate", path).stdout == counts["qwen3"]
        patch.setenv("CTXPACK_TOKENIZER", "cl100k")
        assert invoke("estimate", path).stdout == counts["cl100k"]
        assert invoke("estimate", "--tokenizer", "o200k", path).stdout == counts["o200k"]
        heuristic = invoke("estimate", "--tokenizer", "heuristic", path).stdout
    assert int(heuristic) == estimate(parse(path.read_bytes()).messages)


BAD_SETTINGS = [
    (["--tokenizer", "gpt2"], "unknown tokenizer 'gpt2': choose one of heuristic, o200k"),
    (["env:gpt-4o"], "unknown tokenizer 'gpt-4o': choose one of heuristic, o200k"),
    (["config:tokenizer = 5"], "config.toml: tokenizer must be a name, got 5"),
]
# A provider's table is read by the commands that summarize; a tokenizer does not belong there.
IN_A_TABLE = (
    ["config:[extractive]\ntokenizer = 'o200k'"],
    "config.toml: [extractive] unknown setting 'tokenizer'",
)


@pytest.mark.parametrize(
    ("command", "setting", "message"),
    [
        *((command, *case) for command in ("estimate", "auto", "full") for case in BAD_SETTINGS),
        *((command, *IN_A_TABLE) for command in ("auto", "full")),
    ],
)
def test_a_bad_name_is_one_line_and_exit_78(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, setting: list[str], message: str
) -> None:
    flags = setting
    if setting[0].startswith("env:"):
        monkeypatch.setenv("CTXPACK_TOKENIZER", setting[0].removeprefix("env:"))
        flags = []
    elif setting[0].startswith("config:"):
        config = tmp_path / "config.toml"
        config.write_text(setting[0].removeprefix("config:") + "\n", encoding="utf-8")
        monkeypatch.setenv("CTXPACK_CONFIG", str(config))
        flags = []
    source = tmp_path / "in.json"
    source.write_bytes(dumps([{"role": "user", "content": "hi"}]))
    result = invoke(command, *flags, source)
    assert (result.exit_code, result.stdout) == (78, "")
    assert message in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_without_the_extra_one_line_names_what_to_install(tmp_path: Path) -> None:
    # tiktoken made unimportable for this process only, as in an install without the extra
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "tiktoken.py").write_text("raise ImportError('No module named tiktoken')\n")
    source = tmp_path / "in.json"
    source.write_bytes(dumps([{"role": "user", "content": "hi"}]))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(shadow))
        for command in ("estimate", "auto", "full"):
            result = run(command, "--tokenizer", "o200k", source)
            assert (result.returncode, result.stdout) == (78, b"")
            assert result.stderr.decode() == (
                f"ctxpack: tokenizer 'o200k' needs tiktoken, which is not installed: {INSTALL}\n"
            )
        assert run("estimate", source).returncode == 0  # the heuristic needs nothing


def test_the_heuristic_path_imports_no_tokenizer(tmp_path: Path) -> None:
    source = tmp_path / "in.json"
    source.write_bytes(dumps([{"role": "user", "content": "hi"}]))
    code = (
        "import sys\n"
        "import cli.main\n"
        "before = sorted(m for m in sys.modules if m.startswith(('tiktoken', 'tokenizers')))\n"
        "try:\n"
        f"    cli.main.cli(['estimate', {str(source)!r}], prog_name='ctxpack')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('tiktoken', 'tokenizers', 'importlib.metadata')\n"
        "after = sorted(m for m in sys.modules if m.startswith(heavy))\n"
        "print(before, after, file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert result.stdout == "1\n"
    assert result.stderr == "[] []\n"


def test_auto_threshold_counts_with_the_tokenizer(tmp_path: Path) -> None:
    path = chinese_session(tmp_path / "zh.json")
    exact_tokens = int(invoke("estimate", "--tokenizer", "o200k", path).stdout)
    threshold = (exact_tokens + int(invoke("estimate", path).stdout)) // 2
    by_heuristic = invoke("auto", "--threshold", threshold, "--no-transcript", path)
    by_tokens = invoke(
        "auto", "--threshold", threshold, "--tokenizer", "o200k", "--stats", "--no-transcript", path
    )
    assert by_heuristic.exit_code == by_tokens.exit_code == 0
    assert len(json.loads(by_heuristic.stdout)) < 13  # over by the heuristic: summarized
    assert json.loads(by_tokens.stdout) == json.loads(path.read_bytes())  # not over: as it was
    assert f"tokens {exact_tokens} -> {exact_tokens}" in by_tokens.stderr


# --- agents' session files -----------------------------------------------------------------------


def claude_session(tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_bytes((REPO / "tests" / "fixtures" / "claude_code" / "session.jsonl").read_bytes())
    return path


def test_a_session_file_is_counted_by_its_view(tmp_path: Path) -> None:
    from compactor_core.ends.sources import LocalFile
    from compactor_core.session_files.index import index_session, load_view
    from compactor_core.session_files.registry import detect

    path = claude_session(tmp_path)
    with LocalFile(path, "s").open() as handle:
        session = index_session(handle, detect(handle, "auto", "s"), "s")
        view = load_view(handle, session)
    tokens = reference_total("o200k", counted_texts(view))
    assert int(invoke("estimate", "--tokenizer", "o200k", path).stdout) == tokens
    report = json.loads(invoke("estimate", "--json", "--tokenizer", "o200k", path).stdout)
    assert (report["tokens"], report["format"]) == (tokens, "claude-code")
    assert report["heuristic"]["tokens"] == session.tokens != tokens


def test_auto_on_a_session_file_decides_by_the_tokenizer(tmp_path: Path) -> None:
    path = claude_session(tmp_path)
    exact_tokens = int(invoke("estimate", "--tokenizer", "o200k", path).stdout)
    heuristic = int(invoke("estimate", path).stdout)
    threshold = (exact_tokens + heuristic) // 2  # over by one count, not by the other
    common = ("auto", "--keep-recent", "99", "--threshold", threshold, "--no-transcript")
    # a session file streams to the real standard output: a real process
    results = {name: run(*common, "--tokenizer", name, path) for name in ("heuristic", "o200k")}
    assert {result.returncode for result in results.values()} == {0}
    summarized = {name: result.stdout != path.read_bytes() for name, result in results.items()}
    assert summarized == {"heuristic": heuristic > threshold, "o200k": exact_tokens > threshold}
    assert summarized["heuristic"] != summarized["o200k"]


def test_the_original_of_a_session_file_is_listed_with_the_tokenizer_s_count(
    tmp_path: Path,
) -> None:
    path = claude_session(tmp_path)
    exact_tokens = int(invoke("estimate", "--tokenizer", "o200k", path).stdout)
    snapshots = tmp_path / "snaps"
    options = (
        "--keep-recent",
        "0",
        "--threshold",
        "1000000",
        "--force",
        "--transcript-dir",
        snapshots,
    )
    done = invoke("auto", "-i", "--tokenizer", "o200k", *options, path)  # micro compaction only
    assert done.exit_code == 0, done.stderr
    listed = json.loads(invoke("restore", "--list", "--json", "--transcript-dir", snapshots).stdout)
    assert [item["tokens"] for item in listed if item["kind"] == "original"] == [exact_tokens]
