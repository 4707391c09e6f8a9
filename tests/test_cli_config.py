"""One configuration (issue 34.3): every option of every command from the user's file, the
project's ``.ctxpack.toml`` (found upward) and the environment — flag > CTXPACK_<COMMAND>_<OPTION>
> CTXPACK_<OPTION> > project file > user file > default — shown by ``ctxpack config``, through the
real executable."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import REPO, lazy_modules_loaded, run

USER = "user.toml"

# (user file, project file, environment) -> what `ctxpack config auto` says of threshold
PRECEDENCE = [
    ("", "", {}, "threshold = 50000  # default"),
    ("threshold = 20000\n", "", {}, "threshold = 20000  # {user}"),
    (
        "threshold = 20000\n[auto]\nthreshold = 25000\n",
        "",
        {},
        "threshold = 25000  # {user} [auto]",
    ),
    ("[auto]\nthreshold = 25000\n", "threshold = 30000\n", {}, "threshold = 30000  # {project}"),
    ("", "threshold = 1\n[auto]\nthreshold = 31000\n", {}, "threshold = 31000  # {project} [auto]"),
    (
        "threshold = 20000\n",
        "threshold = 30000\n",
        {"CTXPACK_THRESHOLD": "40000"},
        'threshold = "40000"  # CTXPACK_THRESHOLD',
    ),
    (
        "",
        "threshold = 30000\n",
        {"CTXPACK_THRESHOLD": "40000", "CTXPACK_AUTO_THRESHOLD": "45000"},
        'threshold = "45000"  # CTXPACK_AUTO_THRESHOLD',
    ),
]


def project(tmp_path: Path, user: str, text: str) -> tuple[Path, dict[str, str]]:
    """A project with ``text`` as its .ctxpack.toml, worked in from a folder below it."""
    (tmp_path / USER).write_text(user)
    root = tmp_path / "project"
    (root / "src" / "deep").mkdir(parents=True)
    if text:
        (root / ".ctxpack.toml").write_text(text)
    clean = {name: value for name, value in os.environ.items() if not name.startswith("CTXPACK_")}
    return root / "src" / "deep", {**clean, "CTXPACK_CONFIG": str(tmp_path / USER)}


@pytest.mark.parametrize(("user", "text", "variables", "expected"), PRECEDENCE)
def test_the_settings_in_force_and_where_each_comes_from(
    tmp_path: Path, user: str, text: str, variables: dict[str, str], expected: str
) -> None:
    cwd, env = project(tmp_path, user, text)
    done = run("config", "auto", cwd=cwd, env={**env, **variables})
    assert done.returncode == 0, done.stderr
    where = {"user": tmp_path / USER, "project": tmp_path / "project" / ".ctxpack.toml"}
    assert expected.format(**where) in done.stdout.decode().splitlines()


def markers(out: bytes) -> int:
    return out.count(b"[truncated:")


def test_the_options_take_effect_flag_over_variable_over_file(tmp_path: Path) -> None:
    cwd, env = project(tmp_path, "keep_recent = 0\n", "")
    source = REPO / "examples" / "session.json"
    every = markers(run("micro", source, cwd=cwd, env=env).stdout)
    default = markers(
        run("micro", source, cwd=cwd, env={**env, "CTXPACK_CONFIG": "/dev/null"}).stdout
    )
    assert every > default > 0  # the file's keep_recent = 0 truncates the newest turns too
    variable = markers(
        run("micro", source, cwd=cwd, env={**env, "CTXPACK_MICRO_KEEP_RECENT": "3"}).stdout
    )
    assert variable == default
    flag = markers(
        run(
            "micro", "--keep-recent", "0", source, cwd=cwd, env={**env, "CTXPACK_KEEP_RECENT": "3"}
        ).stdout
    )
    assert flag == every


def test_a_projects_protection_list_keeps_a_tools_results(tmp_path: Path) -> None:
    protected = 'exclude_tools = ["bash", "read_file", "edit_file"]\n'
    cwd, env = project(tmp_path, "", protected + "[micro]\nkeep-recent = 0\n")
    done = run("micro", REPO / "examples" / "session.json", cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    assert markers(done.stdout) == 0
    assert all(isinstance(message, dict) for message in json.loads(done.stdout))


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("treshold = 1\n", "{project}: unknown setting 'treshold'"),
        (
            "[micro]\nthreshold = 1\n",
            "{project}: [micro] threshold: unknown setting (no such option)",
        ),
        (
            '[auto]\nthreshold = "lots"\n',
            "{project}: [auto] threshold: 'lots' is not a valid integer range.",
        ),
        (
            "[nothing]\nx = 1\n",
            "{project}: unknown table [nothing] (a command's name, or a provider's)",
        ),
        (
            'api_key = "sk"\n',
            "{project}: 'api_key' is not allowed: keep API keys in the environment "
            "(name the variable with api_key_env)",
        ),
        (
            'provider = "nope"\n',
            "{project}: provider must be one of extractive, openai, anthropic, command, got 'nope'",
        ),
        (
            '[tools.grep]\nkind = "nope"\n',
            "{project}: [tools].grep.kind must be one of read, write, patch, list, run, search, "
            "none",
        ),
    ],
)
def test_a_bad_setting_is_one_line_naming_the_file_and_the_key(
    tmp_path: Path, text: str, said: str
) -> None:
    cwd, env = project(tmp_path, "", text)
    command = "micro" if "[micro]" in text else "auto"
    done = run(command, REPO / "examples" / "session.json", cwd=cwd, env=env)
    assert done.returncode == 78
    where = tmp_path / "project" / ".ctxpack.toml"
    assert done.stderr.decode() == f"ctxpack: {said.format(project=where)}\n"


def test_a_top_level_key_of_another_command_loads_no_command_it_need_not(tmp_path: Path) -> None:
    # The README's example on a micro run: threshold is auto's, and auto is loaded with micro, so
    # no other command's module (and the core it imports) is loaded to find it.
    cwd, env = project(tmp_path, "threshold = 20000\nmin_gain = 4000\n", "")
    example = REPO / "examples" / "session.json"
    done = lazy_modules_loaded("micro", str(example), cwd=cwd, env=env)
    assert (done.returncode, done.stderr) == (0, b"[]\n")
    # a key only a lazily loaded command takes is still known
    (tmp_path / USER).write_text("port = 9000\n")
    assert run("micro", example, cwd=cwd, env=env).returncode == 0
