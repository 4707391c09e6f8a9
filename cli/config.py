"""One configuration for every option of every command: flag > environment > project file > user
file > default, through click's own ``default_map`` and ``auto_envvar_prefix``.

- The files are TOML: the user's (``$CTXPACK_CONFIG``, else
  ``$XDG_CONFIG_HOME/ctxpack/config.toml``) and the project's, ``.ctxpack.toml`` in the working
  folder or the nearest folder above it, which wins over the user's. In each, a top-level key sets
  that option for every command that has it (``threshold = 20000``), and a table named after a
  command sets it for that command only (``[serve] port = 9000``), over the top-level key; an
  option is spelled as its flag without the dashes, ``-`` or ``_`` alike (``keep_recent``,
  ``exclude_tool`` or ``exclude_tools``).
- The environment: ``CTXPACK_<COMMAND>_<OPTION>`` for one command (click's ``auto_envvar_prefix``:
  ``CTXPACK_SERVE_UPSTREAM``), ``CTXPACK_<OPTION>`` for every command that has the option
  (``CTXPACK_THRESHOLD``), over both files.
- The provider's settings, ``lang`` and ``tokenizer`` keep their own rules (``resolve.py``: a
  provider's table such as ``[openai]`` over the top level; their variables, ``CTXPACK_PROVIDER``
  …), and the tool rules their ``[tools]`` table.
- A key no option of the command has, in its table, or a key no command knows at the top level,
  is refused with the file and the key; so is a value the option refuses.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

import click

from compactor_core import defaults
from compactor_core.errors import ConfigError

from . import io
from .options import epilog

PROJECT_FILE = ".ctxpack.toml"
ENV_PREFIX = "CTXPACK"
FORBIDDEN_KEYS = {"api_key", "key", "token", "secret"}
# Resolved by resolve.py's own rules (a provider's table over the top level), not by click's.
OWN_RULES = {
    "provider",
    "model",
    "base_url",
    "timeout",
    "retries",
    "command",
    "lang",
    "tokenizer",
    "snapshot_dir",
    "session_id",
    "api_key_env",
}
# the providers' tables, and the tool rules
OWN_TABLES = {*defaults.PROVIDER_NAMES, defaults.TOOLS_TABLE}


class ConfigFile(NamedTuple):  # not a dataclass, whose class takes longer to make at start
    path: str
    data: dict[str, Any]


def user_path(environ: Mapping[str, str]) -> str:
    if environ.get("CTXPACK_CONFIG"):
        return environ["CTXPACK_CONFIG"]
    home = environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(home, "ctxpack", "config.toml")


def working_folder() -> str:
    """The working folder; the root when it is gone (a folder removed under a shell in it)."""
    try:
        return os.getcwd()
    except OSError:
        return os.sep


def project_path(cwd: str) -> str | None:
    """``.ctxpack.toml`` in ``cwd`` or the nearest folder above it (os.path, not pathlib: this
    runs at every start)."""
    folder = os.path.abspath(cwd)
    while True:
        candidate = os.path.join(folder, PROJECT_FILE)
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def config_files(environ: Mapping[str, str], cwd: str) -> list[ConfigFile]:
    """The files in force, the weakest first: the user's, then the project's."""
    files = [ConfigFile(user_path(environ), load(user_path(environ), "CTXPACK_CONFIG" in environ))]
    project = project_path(cwd)
    if project is not None and project != files[0].path:
        files.append(ConfigFile(project, load(project, required=True)))
    return [file for file in files if file.data]


def load(path: str, required: bool) -> dict[str, Any]:
    try:
        with open(path, "rb") as file:
            data = file.read()
    except FileNotFoundError:
        if required:
            raise ConfigError(f"{path}: config file not found (CTXPACK_CONFIG)") from None
        return {}
    except OSError as error:
        raise ConfigError(f"{path}: cannot read config file: {error.strerror}") from None
    import tomllib

    try:
        config = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: bad config file: {error}") from None
    _refuse_secrets(config, path)
    return config


def _refuse_secrets(config: dict[str, Any], path: str) -> None:
    for key, value in config.items():
        inner = value.keys() if isinstance(value, dict) and key != defaults.TOOLS_TABLE else ()
        for name in (key, *inner):
            if name in FORBIDDEN_KEYS:
                raise ConfigError(
                    f"{path}: {name!r} is not allowed: keep API keys in the environment "
                    "(name the variable with api_key_env)"
                )


def option_name(key: str) -> str:
    """A key as click names the option: ``keep-recent`` → ``keep_recent``; a repeatable flag's
    singular (``exclude_tool``) as its plural parameter (``exclude_tools``)."""
    return PLURALS.get(key.replace("-", "_"), key.replace("-", "_"))


PLURALS = {"exclude_tool": "exclude_tools", "glob": "globs"}


# --- what click is given ----------------------------------------------------------------------


class Found(NamedTuple):
    """One value from outside the command line, and where it came from."""

    value: Any
    origin: str


def settings_for(
    command: str, files: list[ConfigFile], environ: Mapping[str, str]
) -> dict[str, Found]:
    """What the files and the shared variables set for ``command``, the strongest last."""
    found: dict[str, Found] = {}
    for file in files:
        for key, value in file.data.items():
            if not isinstance(value, dict) and option_name(key) not in OWN_RULES:
                found[option_name(key)] = Found(value, file.path)
        table = file.data.get(command)
        if isinstance(table, dict) and command not in OWN_TABLES:
            for key, value in table.items():
                found[option_name(key)] = Found(value, f"{file.path} [{command}]")
    for variable, value in environ.items():
        name = variable.removeprefix(f"{ENV_PREFIX}_").lower()
        if variable.startswith(f"{ENV_PREFIX}_") and name not in OWN_RULES and name != "config":
            found[name] = Found(value, variable)
    return found


class DefaultMap(dict):
    """The root's ``default_map``: each command's defaults, made when click asks for them; the
    files are read the first time (inside the command, so that a bad one is a one-line error)."""

    def __init__(self, environ: Mapping[str, str], cwd: str) -> None:
        super().__init__()
        self.environ = environ
        self.cwd = cwd
        self._files: list[ConfigFile] | None = None

    @property
    def files(self) -> list[ConfigFile]:
        if self._files is None:
            self._files = config_files(self.environ, self.cwd)
        return self._files

    def get(self, command: str, default: Any = None) -> dict[str, Any]:  # type: ignore[override]
        found = settings_for(command, self.files, self.environ)
        return {name: each.value for name, each in found.items()}


def check(
    command: click.Command,
    files: list[ConfigFile],
    commands: set[str],
    some_command_has: Callable[[str], bool],
) -> None:
    """Refuse what the files set that no option takes: a table no command or provider has; in
    the command's table, a key it has not; at the top level, a key no command has
    (``some_command_has`` is asked only then: it may load other commands); anywhere, a value its
    option refuses."""
    for problem in unknown_tables(files, commands):
        raise ConfigError(problem)
    params = {param.name: param for param in command.params if param.name}
    for file in files:
        table = file.data.get(command.name or "")
        if isinstance(table, dict) and command.name not in OWN_TABLES:
            for key, value in table.items():
                _check_value(
                    params, option_name(key), value, f"{file.path}: [{command.name}] {key}"
                )
        for key, value in file.data.items():
            name = option_name(key)
            if isinstance(value, dict) or name in OWN_RULES:
                continue
            if name in params:
                _check_value(params, name, value, f"{file.path}: {key}")
            elif not some_command_has(name):
                raise ConfigError(f"{file.path}: unknown setting {key!r}")


def _check_value(params: dict[str, click.Parameter], name: str, value: Any, where: str) -> None:
    param = params.get(name)
    if param is None:
        raise ConfigError(f"{where}: unknown setting (no such option)")
    try:
        param.type_cast_value(click.Context(click.Command("config")), value)
    except click.BadParameter as error:
        raise ConfigError(f"{where}: {error.message}") from None


def unknown_tables(files: list[ConfigFile], commands: set[str]) -> Iterator[str]:
    for file in files:
        for key, value in file.data.items():
            if isinstance(value, dict) and key not in commands | OWN_TABLES:
                yield f"{file.path}: unknown table [{key}] (a command's name, or a provider's)"


# --- ctxpack config ----------------------------------------------------------------------------


@click.command(
    "config",
    epilog=epilog(
        "ctxpack config                # every setting the files and the environment make",
        "ctxpack config auto           # each option of auto, its value and where it is from",
    ),
)
@click.argument("command_name", required=False, metavar="[COMMAND]")
@click.pass_context
def show(ctx: click.Context, command_name: str | None) -> None:
    """Print the settings in force and where each comes from: flag > CTXPACK_<COMMAND>_<OPTION>
    > CTXPACK_<OPTION> > ./.ctxpack.toml (or a folder above) > the user's config file > default.
    """
    root = ctx.find_root()
    defaults = root.default_map if isinstance(root.default_map, DefaultMap) else None
    files = defaults.files if defaults is not None else []
    if command_name is None:
        io.write_stdout("".join(f"{line}\n" for line in _everything(files, ctx)).encode())
        return
    group = root.command
    command = group.get_command(root, command_name) if isinstance(group, click.Group) else None
    if command is None:
        raise click.UsageError(f"no such command: {command_name}")
    lines = _of_command(command, files, os.environ)
    io.write_stdout("".join(f"{line}\n" for line in lines).encode())


def _everything(files: list[ConfigFile], ctx: click.Context) -> list[str]:
    lines = [f"# {file.path}" for file in files] or ["# no config file"]
    for file in files:
        for key, value in file.data.items():
            where = file.path
            if isinstance(value, dict):
                lines += [
                    f"{key}.{inner} = {_shown(item)}  # {where}" for inner, item in value.items()
                ]
            else:
                lines.append(f"{key} = {_shown(value)}  # {where}")
    lines += [
        f"{name} = {value}  # environment"
        for name, value in sorted(os.environ.items())
        if name.startswith(f"{ENV_PREFIX}_")
    ]
    return lines


def _of_command(
    command: click.Command, files: list[ConfigFile], environ: Mapping[str, str]
) -> list[str]:
    """Each option of the command: its value and where it comes from."""
    found = settings_for(command.name or "", files, environ)
    lines = []
    for param in command.params:
        if not isinstance(param, click.Option) or param.name is None or param.hidden:
            continue
        own = f"{ENV_PREFIX}_{(command.name or '').upper()}_{param.name.upper()}"
        if environ.get(own) is not None:
            value, origin = environ[own], own
        elif param.name in found:
            value, origin = found[param.name].value, found[param.name].origin
        else:
            value, origin = _default(param), "default"
        lines.append(f"{param.name} = {_shown(value)}  # {origin}")
    return lines


def _default(param: click.Option) -> Any:
    """The option's default as a user would write it (a flag's is false; none is none)."""
    default = param.default
    if default is None or type(default).__name__ == "Sentinel":  # click's "not given"
        return False if param.is_flag else None
    return default


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "(none)"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_shown(item) for item in value) + "]"
    return str(value)
