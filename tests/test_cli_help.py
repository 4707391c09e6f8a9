"""--help (issue 10.3): examples everywhere, the exit table once, defaults and variables shown,
a short usage for a bare ``ctxpack``, and shell completion through click."""

from __future__ import annotations

import importlib
import os
import re
import shlex
import subprocess

import click
import pytest
from click.testing import CliRunner
from helpers import CTXPACK, REPO, lazy_modules_loaded, run

from cli.exit_codes import TABLE, ExitStatus
from cli.main import cli
from cli.options import EXIT_POINTER

ROW = re.compile(r"^\s+(\d+)\s+(\S.*)$")
COMMANDS = cli.list_commands(click.Context(cli))  # restore, check, sessions load lazily
# Options with no default worth showing: an output target, free text, or nothing when unset.
NO_DEFAULT = {"output", "backup", "instructions", "command", "output_dir", "threshold"}
NO_DEFAULT |= {"exclude_tools", "scheduler"}  # none excluded; no cluster unless named
NO_DEFAULT_IN = {
    ("sessions", "over"),
    ("serve", "upstream"),
    ("replay", "plot"),
    ("report", "plot"),
}
NO_DEFAULT_IN |= {("restore", name) for name in ("session_id", "at", "keep", "older_than")}
VARIABLES = (
    "CTXPACK_LANG",
    "CTXPACK_PROVIDER",
    "CTXPACK_MODEL",
    "CTXPACK_BASE_URL",
    "CTXPACK_TIMEOUT",
    "CTXPACK_RETRIES",
    "CTXPACK_COMMAND",
    "CTXPACK_TRANSCRIPT_DIR",
    "CTXPACK_SESSION_ID",
    "CTXPACK_CONFIG",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
)


def help_text(*command: str) -> str:
    result = CliRunner().invoke(cli, [*command, "--help"], terminal_width=100)
    assert result.exit_code == 0 and result.stderr == ""
    return result.stdout


def table_rows(text: str) -> dict[int, str]:
    after = text.split("Exit status:", 1)[1]
    return {int(m[1]): m[2].strip() for m in map(ROW.match, after.splitlines()) if m}


def readme_rows() -> dict[int, str]:
    """The table of the README, which is the spec's (the spec itself is not in the repository)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Exit status", 1)[1]
    rows = re.findall(r"^ *\| (\d+) \| (.+?) \|$", section, flags=re.M)
    return {int(code): meaning.replace("`", "").replace("\\|", "|") for code, meaning in rows}


def test_the_table_is_the_readmes() -> None:
    assert len(readme_rows()) == 13  # SPEC §6, 70 and 141 (issue 9), 77 (issues 21, 22)
    assert table_rows(TABLE) == readme_rows()


def test_every_status_has_a_row_and_every_row_a_status() -> None:
    assert set(table_rows(TABLE)) == {status.value for status in ExitStatus}


def test_the_table_is_in_ctxpack_help_unwrapped(golden) -> None:
    text = help_text()
    assert table_rows(text) == table_rows(TABLE)
    golden("help_exit_status.txt", "Exit status:" + text.split("Exit status:", 1)[1])


@pytest.mark.parametrize("command", COMMANDS)
def test_subcommands_point_to_the_table_instead_of_repeating_it(command: str) -> None:
    text = help_text(command)
    assert "Exit status:" not in text
    assert " ".join(EXIT_POINTER.split()) in " ".join(text.split())


def examples(text: str) -> list[str]:
    block = text.split("Examples:\n", 1)[1].split("\n\n", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip()]


def invocations(example: str) -> list[list[str]]:
    """The ctxpack command lines in a shell example (pipes, ;, redirections and comments cut)."""
    found = []
    for segment in re.split(r"[|;>]|&&", example.split(" # ", 1)[0]):
        words = shlex.split(segment)
        if "ctxpack" in words:
            found.append(words[words.index("ctxpack") + 1 :])
    return found


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_every_help_has_examples_that_parse(command: str) -> None:
    lines = examples(help_text(*([command] if command else [])))
    assert lines
    for line in lines:
        calls = invocations(line)
        assert not command or calls[0][0] == command, line  # an example of this command
        for words in calls:
            if words == ["CMD", "--help"]:
                continue
            context = cli.make_context("ctxpack", list(words), resilient_parsing=False)
            subcommand = cli.get_command(context, words[0])
            assert subcommand is not None, line
            subcommand.make_context(words[0], words[1:], parent=context)  # raises if bad


@pytest.mark.parametrize("command", COMMANDS)
def test_defaults_are_shown(command: str) -> None:
    sub = cli.get_command(click.Context(cli), command)
    assert sub is not None
    context = click.Context(sub, info_name=command)
    for param in sub.params:
        if not isinstance(param, click.Option) or param.is_flag or param.name is None:
            continue
        if param.name in NO_DEFAULT or (command, param.name) in NO_DEFAULT_IN:
            continue
        record = param.get_help_record(context)
        assert record is not None and "default" in record[1], (command, param.name)


def test_the_defaults_the_issue_found_missing() -> None:
    text = " ".join(help_text("auto").split())
    assert "[default: 2; env CTXPACK_RETRIES]" in text
    assert re.search(
        r"--min-chars INTEGER RANGE Leave tool results shorter than this alone\. "
        r"\[default: 0;",
        text,
    )
    assert "auto: the user's" in text and "env CTXPACK_LANG" in text


def test_every_variable_is_documented() -> None:
    text = help_text()
    assert [name for name in VARIABLES if name not in text] == []


def test_max_concurrency_only_where_a_model_may_be_called() -> None:
    with_it = {name for name in COMMANDS if "--max-concurrency" in help_text(name)}
    assert with_it == {"full", "auto", "serve", "run"}  # serve (run's too): in flight upstream


def test_bare_ctxpack_prints_the_short_usage_and_the_commands() -> None:
    result = run()
    assert result.returncode == 2
    assert result.stdout == b""
    err = result.stderr.decode()
    assert err.startswith("Usage: ctxpack [OPTIONS] COMMAND [ARGS]...\n")
    assert "ctxpack: Usage" not in err and "Exit status:" not in err
    commands = err.split("Commands:\n", 1)[1]
    assert [line.split()[0] for line in commands.splitlines() if line.startswith("  ")] == COMMANDS
    assert err.endswith("Try 'ctxpack --help' for options, examples and more.\n")


# --- shell completion: click's _CTXPACK_COMPLETE mechanism, as the README says ----------------


@pytest.mark.parametrize(
    ("shell", "marker"),
    [
        ("bash", "complete -o nosort -F _ctxpack_completion ctxpack"),
        ("zsh", "#compdef ctxpack"),
        ("fish", "complete --no-files --command ctxpack"),
    ],
)
def test_completion_scripts(shell: str, marker: str) -> None:
    result = subprocess.run(
        [str(CTXPACK)],
        env={**os.environ, "_CTXPACK_COMPLETE": f"{shell}_source"},
        capture_output=True,
        check=True,
    )
    assert marker in result.stdout.decode()


def complete_in_bash(*words: str) -> list[str]:
    """What bash offers after sourcing the README's eval line, for the last of ``words``."""
    script = (
        'eval "$(_CTXPACK_COMPLETE=bash_source ctxpack)"\n'
        f"COMP_WORDS=({' '.join(shlex.quote(word) for word in words)})\n"
        f"COMP_CWORD={len(words) - 1}\n"
        "_ctxpack_completion ctxpack\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    path = f"{CTXPACK.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    result = subprocess.run(
        ["bash", "--norc", "-c", script],
        env={**os.environ, "PATH": path},
        capture_output=True,
        check=True,
    )
    return result.stdout.decode().split()


def test_bash_completes_commands_options_and_choices() -> None:
    assert complete_in_bash("ctxpack", "mi") == ["micro"]
    assert complete_in_bash("ctxpack", "auto", "--la") == ["--lang"]
    assert complete_in_bash("ctxpack", "full", "--lang", "") == ["auto", "zh", "en"]
    assert "--max-concurrency" not in complete_in_bash("ctxpack", "micro", "--")


def test_help_lists_a_lazy_command_by_its_own_first_sentence_without_loading_it() -> None:
    # the sentence main.py keeps for --help is the one the command's help starts with
    for name, (place, sentence) in cli.lazy_commands.items():
        module, attribute = place.split(":")
        command = getattr(importlib.import_module(module), attribute)
        listed = click.Command(name, help=sentence).get_short_help_str(limit=10_000)
        assert listed == command.get_short_help_str(limit=10_000), name
    done = lazy_modules_loaded("--help")
    assert (done.returncode, done.stderr) == (0, b"[]\n")
    assert b"  rescue      Repair a session its agent will not open" in done.stdout
