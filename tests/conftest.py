"""Isolation, golden files and hypothesis settings for the whole suite."""

from __future__ import annotations

import os
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import GOLDEN
from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir

# Hypothesis keeps caches in ./.hypothesis; keep them out of the repository.
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "ctxpack-hypothesis")

settings.register_profile(
    "ctxpack",
    max_examples=100,
    deadline=None,
    database=None,  # each test runs in its own temporary directory: nothing to keep
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile("ctxpack")

_PRIVATE_PREFIXES = ("OPENAI_", "ANTHROPIC_", "CTXPACK_")

# The ctxpack processes the tests start cache their bytecode, as a user's do: this machine's
# shells set PYTHONDONTWRITEBYTECODE, and every process would compile the project again (about
# 7 s of the suite's CPU time). The cache is kept out of the repository.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "ctxpack-pycache")

# A shell starts a background job with SIGINT ignored, and an ignored signal stays ignored in
# every child: the tests that interrupt ctxpack would then see it carry on. A handler of our own
# is reset to the default in each child, so they see what a user's Ctrl-C does.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# The files that take longest, first: pytest-xdist hands each file whole to a free worker in this
# order (addopts in pyproject.toml), so no long file starts last and runs on alone at the end.
LONGEST_FIRST = (
    "test_distributed.py",  # a Dask cluster, moto's S3 server, workers killed mid-run
    "test_agents_resume_claude.py",  # the real Claude Code, resuming 3 sessions 5 times each
    "test_agents_resume_opencode.py",  # the real OpenCode: slow to start (≈15 s a run)
    "test_agents_resume_cline.py",
    "test_agents_resume_copilot.py",  # each: the real agent writes a session, resumes it 5 times
    "test_agents_resume_qwen.py",
    "test_agents_resume_gemini.py",
    "test_agents_resume_pi.py",
    "test_cli_batch.py",
    "test_live_agent.py",  # 85 races of a writer and ctxpack, real processes
    "test_unix.py",
    "test_agents_resume_codex.py",
    "test_serve.py",  # a ctxpack serve process per test, 50 streams at once, a 100 MB body
    "test_serve_agents.py",  # the real agents through ctxpack serve
    "test_cli_tokenizer.py",
    "test_cli_agents.py",
    "test_providers_model.py",  # a llama.cpp server
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest as found


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="Rewrite the files in tests/golden/ from the current output instead of comparing.",
    )


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test sees the user's keys or settings, or writes into the repository or the home dir.

    The working directory is an empty ``tmp_path/work``, HOME is ``tmp_path/home`` (its state
    folder the default snapshot store's), and snapshots go to ``tmp_path/transcripts``.
    """
    for name in list(os.environ):
        if name.startswith(_PRIVATE_PREFIXES):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("CTXPACK_TRANSCRIPT_DIR", str(tmp_path / "transcripts"))
    monkeypatch.chdir(work)
    return work


@pytest.fixture
def transcripts(tmp_path: Path) -> Path:
    """Where snapshots go by default in every test (CTXPACK_TRANSCRIPT_DIR)."""
    return tmp_path / "transcripts"


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Callable[[str, str], None]:
    """Compare text with ``tests/golden/NAME``; ``pytest --update-golden`` rewrites it instead."""
    update = request.config.getoption("--update-golden")

    def check(name: str, actual: str) -> None:
        path = GOLDEN / name
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(actual, encoding="utf-8")
            return
        assert path.exists(), f"{path} is missing: run pytest --update-golden and review it"
        assert actual == path.read_text(encoding="utf-8"), f"output differs from {path}"

    return check
