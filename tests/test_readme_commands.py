"""Every command the README shows, run as a user runs it, its shown output compared (issue 32.6).

Each command of the README's ``sh`` and ``console`` blocks is here: run through bash and the real
executable in a home of its own (``~`` is a temporary folder holding the bundled examples and the
corpus's Claude Code session), or listed in NOT_RUN with the reason it cannot run offline in a test.
What a command is shown to print is compared: ``# -> X`` is its whole stdout, a ``#   …`` line
under it the first line of its stderr, a ``console`` block everything after ``$ command``. Output
that varies is normalised explicitly (normalised()); a command added to the README without an
entry here fails the first test."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import CORPUS, CTXPACK, REPO
from test_readme_tour import tour as tour_commands

BLOCK = re.compile(r"```(sh|console)\n(.*?)```", re.S)
SESSION_ID = "1284c080-f9cd-45f8-9942-ff58f5c517e5"
SHORT_ID = "1284c080-…"  # the README's elision of the id
LISTED_ID = "my-session-57f47dee"  # a snapshot's id as restore --list shows it: path-dependent
SESSION = f"~/.claude/projects/-home-me-app/{SHORT_ID}.jsonl"
REAL_SESSION = CORPUS / "originals" / "cc_entire_1284c080__full.jsonl"


@dataclass
class Shown:
    """One command of the README and what it is shown to print (None: no output shown)."""

    command: str
    stdout: str | None = None
    stderr: str | None = None


def shown_commands() -> dict[str, Shown]:
    """The README's commands, each with the output shown for it."""
    commands: dict[str, Shown] = {}
    for kind, body in BLOCK.findall((REPO / "README.md").read_text()):
        read = _console if kind == "console" else _shell
        commands.update((shown.command, shown) for shown in read(body))
    return commands


def _shell(body: str) -> list[Shown]:
    shown: list[Shown] = []
    for line in body.replace("\\\n", "").splitlines():
        if line.startswith("#   ") and shown:
            shown[-1].stderr = line[4:]
        elif line.strip() and not line.lstrip().startswith("#"):
            shown.append(_with_comment(line))
    return shown


def _with_comment(line: str) -> Shown:
    command, *comment = re.split(r"\s+#\s+", line, maxsplit=1)
    command = re.sub(r"\s+", " ", command.strip())
    if comment and comment[0].startswith("-> "):
        return Shown(command, stdout=comment[0][3:].strip())
    return Shown(command)


def _console(body: str) -> list[Shown]:
    first, *output = body.splitlines()
    assert first.startswith("$ "), "README.md: a console block starts with its command"
    return [Shown(first[2:], stdout="\n".join(output))]


# --- the commands that cannot run here, and why -------------------------------------------------

AGENT = "starts a real agent, which needs its login (tests/test_agents_* run the agents offline)"
API_KEY = "needs a real API key or a model server at a fixed address (tests use a local one)"
INSTALLS = "installs into the user's environment (make install and make test do it for the tests)"
SERVE = "serve on the fixed port 8765 or 8766, beside the tests' own (test_serve_* use free ones)"
NOT_RUN: dict[str, str] = {
    "make test": "runs the whole suite, this test among it",
    "make lint": "CI's own lint step, over the whole tree",
    "make bench": "the benchmarks: minutes, and measured, not checked",
    "make format": "rewrites the tree's files",
    "pipx install '.[serve]'": INSTALLS,
    "pipx install .": INSTALLS,
    "pip install .": INSTALLS,
    "make install": INSTALLS,
    'export PATH="$PWD/.venv/bin:$PATH"': "changes the user's shell, not ctxpack",
    "ctxpack run claude": AGENT,
    "ctxpack run codex": AGENT,
    "ctxpack run --threshold 30000 codex exec 'fix the tests'": AGENT,
    "ctxpack run --provider anthropic claude --resume": AGENT,
    "ctxpack run --upstream https://my.gateway claude": AGENT,
    f"claude --resume {SESSION_ID}": AGENT,
    "ANTHROPIC_BASE_URL=http://127.0.0.1:8765 claude": AGENT,
    "OPENAI_BASE_URL=http://127.0.0.1:8766/v1 codex": AGENT,
    "ANTHROPIC_API_KEY=... ctxpack full --provider anthropic session.json "
    "-o compacted.json": API_KEY,
    "ctxpack full --provider openai --base-url http://localhost:11434/v1 --model llama3.2 "
    "session.json": API_KEY,
    "ctxpack full --provider command --command 'llm -m gpt-4o-mini --no-log' session.json": API_KEY,
    "OLLAMA_CONTEXT_LENGTH=32768 ollama serve": API_KEY,
    "ctxpack auto --provider openai --base-url http://localhost:11434/v1 --model llama3.2 "
    "--max-prompt-tokens 24000 session.json": API_KEY,
    "ctxpack full --provider command --command 'ollama run llama3.2' --timeout 300 "
    "session.json": API_KEY,
    "ctxpack serve --upstream https://api.anthropic.com": SERVE,
    "ctxpack serve --upstream https://api.openai.com --port 8766": SERVE,
    "curl -s http://127.0.0.1:8765/ctxpack/stats": SERVE,
    "ctxpack serve --upstream https://api.anthropic.com --install": "installs a systemd user unit "
    "and asks systemctl (test_cli_service writes the unit into a temporary home)",
    "ctxpack auto -r s3://bucket/sessions/ -O s3://bucket/compacted/ "
    "--scheduler tcp://sched:8786": (
        "needs an S3 bucket and a Dask scheduler (test_batch runs the engines on local folders)"
    ),
    "ctxpack micro -r s3://bucket/sessions/ -O s3://bucket/compacted/ --engine dask -j 4": (
        "needs an S3 bucket (test_batch runs the Dask engine on local folders)"
    ),
    "ctxpack estimate -r s3://bucket/sessions/ --summary --json": "needs an S3 bucket",
    f"ctxpack rescue --dry-run {SESSION}": "its session has a "
    "5.5 MB image the repository does not carry (test_cli_rescue repairs damaged sessions)",
    f"ctxpack rescue {SESSION}": "as rescue --dry-run",
}


# --- the commands run here, and what is checked beyond their shown output -----------------------

Check = Callable[[subprocess.CompletedProcess[str], Path], None]


def succeeds(done: subprocess.CompletedProcess[str], home: Path) -> None:
    assert done.returncode == 0, done.stderr


def envelope(done: subprocess.CompletedProcess[str], home: Path) -> None:
    succeeds(done, home)
    assert set(json.loads(done.stdout)) >= {"model", "system", "messages"}


def summarized(done: subprocess.CompletedProcess[str], home: Path) -> None:
    succeeds(done, home)
    after_the_system = json.loads(done.stdout)[1]
    assert after_the_system["content"].startswith("[Context Compressed]\n")
    assert "tokens 2892 -> " in done.stderr


def where_tokens_go(done: subprocess.CompletedProcess[str], home: Path) -> None:
    succeeds(done, home)
    assert set(json.loads(done.stdout)) >= {"tokens", "by_role", "by_tool"}


def under_the_limit(done: subprocess.CompletedProcess[str], home: Path) -> None:
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")  # 2892 is not over 50000


def markers_written(done: subprocess.CompletedProcess[str], home: Path) -> None:
    succeeds(done, home)
    assert "[truncated: bash result, 3769 chars]" in (home / "smaller.json").read_text()


def bash_completion(done: subprocess.CompletedProcess[str], home: Path) -> None:
    succeeds(done, home)
    assert "_ctxpack_completion ctxpack" in done.stdout  # what `complete -p` says afterwards


def script_for(shell: str) -> Check:
    def check(done: subprocess.CompletedProcess[str], home: Path) -> None:
        succeeds(done, home)
        assert f"_CTXPACK_COMPLETE={shell}_complete" in done.stdout

    return check


def session_shrunk(done: subprocess.CompletedProcess[str], home: Path) -> None:
    succeeds(done, home)
    assert home_session(home).stat().st_size < REAL_SESSION.stat().st_size


def put_back(done: subprocess.CompletedProcess[str], home: Path) -> None:
    succeeds(done, home)
    assert home_session(home).read_bytes() == REAL_SESSION.read_bytes()


def folder_shrunk(done: subprocess.CompletedProcess[str], home: Path) -> None:
    succeeds(done, home)
    saved = home / "agent-sessions" / "my-session.jsonl"
    assert saved.stat().st_size < REAL_SESSION.stat().st_size
    last = done.stderr.splitlines()[-1]
    assert last == "ctxpack: 2 files, 1 changed, 0 failed, tokens 42742 -> 14377"  # stale first


def listed(done: subprocess.CompletedProcess[str], home: Path) -> None:
    succeeds(done, home)
    assert "\tmy-session-" in done.stdout


def original_back(done: subprocess.CompletedProcess[str], home: Path) -> None:
    succeeds(done, home)
    assert (home / "back.json").read_bytes() == REAL_SESSION.read_bytes()


def receipt(done: subprocess.CompletedProcess[str], home: Path) -> None:
    succeeds(done, home)
    assert "vs every-turn" in done.stdout and "BareAgent's" in done.stdout


def picture(done: subprocess.CompletedProcess[str], home: Path) -> None:
    succeeds(done, home)
    assert (home / "bill.png").read_bytes().startswith(b"\x89PNG")


def rows_named(done: subprocess.CompletedProcess[str], home: Path) -> None:
    succeeds(done, home)
    assert '"untouched"' in done.stdout and '"every-turn"' in done.stdout


def diff_shown(done: subprocess.CompletedProcess[str], home: Path) -> None:
    succeeds(done, home)
    assert "ctxpack" in done.stdout + done.stderr
    assert not (home / ".codex" / "config.toml").exists()  # a dry run writes nothing


def codex_at_serve(done: subprocess.CompletedProcess[str], home: Path) -> None:
    succeeds(done, home)
    config = (home / ".codex" / "config.toml").read_text()
    assert 'base_url = "http://127.0.0.1:8766/v1"' in config
    assert "supports_websockets = false" in config


def claude_at_serve(done: subprocess.CompletedProcess[str], home: Path) -> None:
    succeeds(done, home)
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings == {"theme": "dark", "env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8765"}}


def undone(done: subprocess.CompletedProcess[str], home: Path) -> None:
    succeeds(done, home)
    assert (home / ".claude" / "settings.json").read_text() == '{"theme": "dark"}\n'


# Each command run here: (the commands run before it in the same home, its check).
CHECKS: dict[str, tuple[tuple[str, ...], Check]] = {
    "make run": ((), summarized),
    'eval "$(_CTXPACK_COMPLETE=bash_source ctxpack)"': ((), bash_completion),
    'eval "$(_CTXPACK_COMPLETE=zsh_source ctxpack)"': ((), script_for("zsh")),
    "_CTXPACK_COMPLETE=fish_source ctxpack | source": ((), script_for("fish")),
    "ctxpack estimate session.json": ((), succeeds),
    "ctxpack estimate --json session.json": ((), where_tokens_go),
    "if ctxpack estimate -q --over 50000 session.json; then ...; fi": ((), under_the_limit),
    "ctxpack micro session.json > smaller.json": ((), markers_written),
    "cat request.json | ctxpack auto | curl -d @- ...": ((), envelope),
    "ctxpack auto --in-place -r ~/agent-sessions -j 4": ((), folder_shrunk),
    "ctxpack restore --list": (("ctxpack auto --in-place -r ~/agent-sessions -j 4",), listed),
    f"ctxpack restore --session-id {LISTED_ID} > back.json": (
        ("ctxpack auto --in-place -r ~/agent-sessions -j 4",),
        original_back,
    ),
    "ctxpack sessions --over 100000": ((), succeeds),
    f"ctxpack check {SESSION}": ((), succeeds),
    f"ctxpack micro --in-place --stats {SESSION}": ((), session_shrunk),
    f"ctxpack restore {SESSION}": ((f"ctxpack micro --in-place --stats {SESSION}",), put_back),
    "ctxpack micro --in-place -r ~/.claude/projects -j 2": ((), session_shrunk),
    "ctxpack setup codex --address http://127.0.0.1:8766": ((), codex_at_serve),
    "ctxpack setup claude": ((), claude_at_serve),
    "ctxpack setup codex --dry-run": ((), diff_shown),
    "ctxpack setup claude --undo": (("ctxpack setup claude --yes",), undone),
    "ctxpack replay session.json": ((), receipt),
    f"ctxpack replay --threshold 20000 {SESSION.rsplit('/', 1)[0]}/*.jsonl": ((), receipt),
    "ctxpack replay --pricing openai --json session.json | jq '.rows[] | [.use, .name, "
    ".vs_untouched]'": ((), rows_named),
    "ctxpack replay --plot bill.png session.json": ((), picture),
    "ctxpack report tests/corpus/originals/*.jsonl": ((), succeeds),
}

ASKS = {"ctxpack setup claude", "ctxpack setup codex --address http://127.0.0.1:8766"}
IN_THE_REPOSITORY = {"make run", "ctxpack report tests/corpus/originals/*.jsonl"}
TOUR = set(tour_commands())


def test_every_command_the_readme_shows_is_run_or_said_why_not() -> None:
    shown = set(shown_commands())
    accounted = set(CHECKS) | set(NOT_RUN) | TOUR
    assert shown - accounted == set(), "a README command with no check here"
    assert accounted - shown == set(), "a check here for a command the README no longer shows"


@pytest.mark.parametrize("command", sorted(CHECKS))
def test_the_command_prints_what_the_readme_shows(command: str, tmp_path: Path) -> None:
    home = a_home(tmp_path)
    before, check = CHECKS[command]
    for earlier in before:
        succeeds(bash(earlier, home), home)
    done = bash(command, home)
    check(done, home)
    shown = shown_commands()[command]
    if shown.stdout is not None:
        assert normalised(done.stdout, home).rstrip("\n") == shown.stdout
    if shown.stderr is not None:
        assert normalised(done.stderr, home).splitlines()[0] == shown.stderr


def a_home(tmp_path: Path) -> Path:
    """The user's home of the README: its files, and a Claude Code session an hour old."""
    home = Path(os.environ["HOME"])
    for name in ("session.json", "request.json"):
        shutil.copy(REPO / "examples" / name, home / name)
    project = home / ".claude" / "projects" / "-home-me-app"
    saved = home / "agent-sessions"
    for folder in (project, saved):
        folder.mkdir(parents=True)
    shutil.copy(REPO / "examples" / "session.json", saved / "session.json")
    for copy in (project / f"{SESSION_ID}.jsonl", saved / "my-session.jsonl"):
        shutil.copy(REAL_SESSION, copy)
        os.utime(copy, (copy.stat().st_atime - 3600, copy.stat().st_mtime - 3600))
    settings = home / ".claude" / "settings.json"
    settings.write_text('{"theme": "dark"}\n')
    return home


def home_session(home: Path) -> Path:
    return home / ".claude" / "projects" / "-home-me-app" / f"{SESSION_ID}.jsonl"


def bash(command: str, home: Path) -> subprocess.CompletedProcess[str]:
    """The command through bash, as the user types it, with this tree's ctxpack on the PATH."""
    env = {**os.environ, "PATH": f"{CTXPACK.parent}{os.pathsep}{os.environ['PATH']}"}
    line = command.replace(SHORT_ID, SESSION_ID).replace(" | curl -d @- ...", "")
    line = line.replace("then ...;", "then echo over;")  # the README's script goes on there
    if command == "make run":  # installed already: this venv's ctxpack
        stamp = home / "installed"
        stamp.touch()
        line = f"make --silent run BIN={CTXPACK.parent} INSTALLED={stamp}"  # no recipe echo
    if LISTED_ID in line:
        listed_id = bash("ctxpack restore --list", home).stdout.split("\t")[1]
        line = line.replace(LISTED_ID, listed_id)
    if command.startswith("eval "):
        line += " && complete -p ctxpack" if "bash_source" in command else ""
        line = line.removeprefix('eval "$(').removesuffix(')"') if "zsh" in command else line
    line = line.replace(" | source", "")  # fish's; the script it would read is checked instead
    if command in ASKS:  # at a terminal, where the user answers yes to each change it shows
        line = f"printf 'y\\ny\\n' | script -qec {shlex.quote(line)} /dev/null"
    cwd = REPO if command in IN_THE_REPOSITORY else home
    return subprocess.run(
        ["bash", "-c", line], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


def normalised(output: str, home: Path) -> str:
    """What varies from run to run as the README writes it: the session's folder and id."""
    session = str(home_session(home))
    return output.replace(session, f"…/{SHORT_ID}.jsonl").replace(SESSION_ID, SHORT_ID)
