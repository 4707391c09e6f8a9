"""From a command's options to what the core is given: flag > environment > config file > default.

Every command that compacts (``micro``, ``full``, ``auto``, ``serve``) resolves its options here,
through one ``Resolver``, so that one flag means one thing everywhere: its compaction settings,
the counter, the provider.

One table (``SETTINGS``) says, for each setting, its environment variables and its config-file
key; ``Resolver`` reads the config file once, the first time a setting needs it, and answers
every question of one command from it. ``ctxpack --help`` lists the same table.

The config file is TOML, at ``$CTXPACK_CONFIG`` or ``$XDG_CONFIG_HOME/ctxpack/config.toml``
(``~/.config/ctxpack/config.toml``). Top-level keys apply to every provider; a table named after
a provider (``[openai]``, ``[anthropic]``, ``[command]``) overrides the provider's settings for
it. API keys come only from the environment: a config file may name the variable that holds one
(``api_key_env``), never hold the key itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from compactor_core import defaults
from compactor_core.errors import ConfigError

from .config import config_files, user_path, working_folder

if TYPE_CHECKING:
    from compactor_core.compaction.estimate import Counter
    from compactor_core.providers.catalog import ProviderSettings
    from compactor_core.recall.store import OriginalsStore
    from compactor_core.settings import Settings

LANGS = ("auto", "zh", "en")


class Setting:  # a plain class, not a dataclass: the table is built at every start
    """One setting: how --help names it, its environment variables (the first one set wins),
    its key in the config file (None: not there), its default, whether a provider's own table
    in the file may override it, and how a value from outside is checked and converted."""

    __slots__ = ("convert", "default", "file_key", "flag", "provider_table", "variables")

    def __init__(
        self,
        flag: str,
        variables: tuple[str, ...],
        file_key: str | None = None,
        default: Any = None,
        provider_table: bool = False,
        convert: Callable[[Any], Any] | None = None,
    ) -> None:
        self.flag = flag
        self.variables = variables
        self.file_key = file_key
        self.default = default
        self.provider_table = provider_table
        self.convert = convert


def _number(kind: Callable[[str], Any]) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        try:
            converted = kind(value)
        except (TypeError, ValueError):
            raise ValueError("must be a number") from None
        if converted < 0:
            raise ValueError("must not be negative")
        return converted

    return convert


def _one_of(choices: tuple[str, ...]) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return value

    return convert


def _name(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a name")
    return value


SETTINGS: dict[str, Setting] = {
    "provider": Setting(
        "--provider",
        ("CTXPACK_PROVIDER",),
        "provider",
        "extractive",
        convert=_one_of(defaults.PROVIDER_NAMES),
    ),
    "model": Setting("--model", ("CTXPACK_MODEL",), "model", None, True),
    "base_url": Setting(
        "--base-url (then OPENAI_BASE_URL or ANTHROPIC_BASE_URL)",
        ("CTXPACK_BASE_URL",),
        "base_url",
        None,
        True,
    ),
    "timeout": Setting(
        "--timeout", ("CTXPACK_TIMEOUT",), "timeout", defaults.TIMEOUT, True, _number(float)
    ),
    "retries": Setting(
        "--retries", ("CTXPACK_RETRIES",), "retries", defaults.RETRIES, True, _number(int)
    ),
    "command": Setting("--command", ("CTXPACK_COMMAND",), "command", None, True),
    "lang": Setting(
        "--lang: auto, zh or en", ("CTXPACK_LANG",), "lang", "auto", False, _one_of(LANGS)
    ),
    "tokenizer": Setting(
        "--tokenizer", ("CTXPACK_TOKENIZER",), "tokenizer", "heuristic", False, _name
    ),
    "snapshot_dir": Setting(
        "--snapshot-dir (old name: --transcript-dir)",
        ("CTXPACK_SNAPSHOT_DIR", "CTXPACK_TRANSCRIPT_DIR"),
    ),
    "session_id": Setting("--session-id", ("CTXPACK_SESSION_ID",), None, defaults.SESSION_ID),
}
# Keys the config file may hold besides the settings above.
_OTHER_FILE_KEYS = {"api_key_env"}
_PROVIDER_KEYS = {s.file_key for s in SETTINGS.values() if s.provider_table} | _OTHER_FILE_KEYS


def environment_help() -> list[tuple[str, str]]:
    """(variable, what it sets) for ``ctxpack --help``, in the table's order."""
    rows = [
        (variable, setting.flag) for setting in SETTINGS.values() for variable in setting.variables
    ]
    return [
        *rows,
        ("CTXPACK_CONFIG", "the config file [default: ~/.config/ctxpack/config.toml]"),
        ("XDG_STATE_HOME", f"snapshots: $XDG_STATE_HOME/ctxpack [{defaults.USER_SNAPSHOT_DIR}]"),
        ("CTXPACK_TRACEBACK", "1: an internal error prints its traceback"),
        ("OPENAI_API_KEY", "API keys: only ever from the environment"),
        ("ANTHROPIC_API_KEY", ""),
    ]


class Resolver:
    """Answers one command's settings: its flags, then the environment, then the config file."""

    def __init__(self, flags: Mapping[str, Any], environ: Mapping[str, str]) -> None:
        self.flags = flags
        self.environ = environ
        self._config: dict[str, Any] | None = None
        self._file_of: dict[tuple[str, ...], str] = {}  # a key (a table's key) -> its file

    @property
    def config_path(self) -> str:
        """The user's config file."""
        return user_path(self.environ)

    def file_of(self, *key: str) -> str:
        """The config file that set ``key`` (a table, or a key in a table) last: the one an
        error in its value names."""
        _ = self.config  # the files read, and where each key comes from
        return self._file_of.get(key, self.config_path)

    @property
    def state_folder(self) -> str:
        """Where ctxpack keeps state: ``$XDG_STATE_HOME/ctxpack``, or ``~/.local/state/ctxpack``."""
        home = self.environ.get("XDG_STATE_HOME") or os.path.join(
            os.path.expanduser("~"), ".local", "state"
        )
        return os.path.join(home, "ctxpack")

    @property
    def config(self) -> dict[str, Any]:
        """The config files, read (and checked) once: the project's over the user's."""
        if self._config is None:
            self._config = {}
            for file in config_files(self.environ, working_folder()):
                _check(file.data, file.path)
                for key, value in file.data.items():
                    inner = self._config.get(key)
                    both = isinstance(value, dict) and isinstance(inner, dict)
                    self._config[key] = {**inner, **value} if both else value
                    self._file_of[(key,)] = file.path
                    for table_key in value if isinstance(value, dict) else ():
                        self._file_of[(key, table_key)] = file.path
        return self._config

    def get(self, name: str, provider: str | None = None) -> Any:
        """The value of setting ``name``: its flag or its variables, else the config file (a
        provider's own table first), else its default."""
        given = self.given(name)
        return self.in_file(name, provider) if given is None else given

    def given(self, name: str) -> Any:
        """The value of setting ``name`` set outside the config file: its flag, else the first
        of its variables set; None: neither."""
        setting = SETTINGS[name]
        if self.flags.get(name) is not None:  # click has checked it
            return self.flags[name]
        for variable in setting.variables:
            if self.environ.get(variable):
                return self._converted(setting, self.environ[variable], variable)
        return None

    def in_file(self, name: str, provider: str | None = None) -> Any:
        """The config file's value of setting ``name`` (a provider's own table first), else its
        default."""
        setting = SETTINGS[name]
        value, key = self._from_file(setting, provider)
        if value is None:
            return setting.default
        return self._converted(setting, value, f"{self.file_of(*key)}: {setting.file_key}")

    def _from_file(self, setting: Setting, provider: str | None) -> tuple[Any, tuple[str, ...]]:
        """The file's value of ``setting`` (None: none) and where it is: a key, or a
        provider's table and key."""
        if setting.file_key is None:
            return None, ()
        table = self.config.get(provider) if provider and setting.provider_table else None
        if isinstance(table, dict) and setting.file_key in table:
            return table[setting.file_key], (str(provider), setting.file_key)
        value = self.config.get(setting.file_key)
        return (None if isinstance(value, dict) else value), (setting.file_key,)

    def _converted(self, setting: Setting, value: Any, where: str) -> Any:
        if setting.convert is None:
            return value
        try:
            return setting.convert(value)
        except ValueError as error:
            raise ConfigError(f"{where} {error}, got {value!r}") from None

    # --- what the commands ask ---

    def snapshot_dir(self, bareagent: bool = False) -> str:
        """Where snapshots go: the flag or its variables, else the user's state folder (the
        seed's ``.transcripts`` in the working folder with ``--compat bareagent``)."""
        from compactor_core.snapshots.locations import snapshot_location

        state_home, home = self.environ.get("XDG_STATE_HOME"), self.environ.get("HOME")
        return snapshot_location(self.get("snapshot_dir"), bareagent, state_home, home)

    def provider(self) -> ProviderSettings:
        """The provider asked for, with each of its settings. Its key comes only from the
        environment: the variable the config file names (``api_key_env``), else the provider's
        own (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``); its base URL from ``--base-url`` or
        ``CTXPACK_BASE_URL``, else the provider's own variable (``OPENAI_BASE_URL``,
        ``ANTHROPIC_BASE_URL``), else the config file."""
        from compactor_core.providers.catalog import SPECS, ProviderSettings

        name = self.get("provider")
        spec = SPECS[name]
        own = self.config.get(name) if isinstance(self.config.get(name), dict) else {}
        command = self.get("command", name)
        if name == "command" and not command:
            raise ConfigError(
                "provider 'command' needs a command: use --command or CTXPACK_COMMAND"
            )
        key_env = own.get("api_key_env") or self.config.get("api_key_env")
        key_variable = key_env or spec.key_variable
        base_url = self.given("base_url")
        if base_url is None:
            own_url = self.environ.get(spec.base_url_variable) if spec.base_url_variable else None
            base_url = own_url or self.in_file("base_url", name)
        return ProviderSettings(
            name=name,
            model=self.get("model", name),
            base_url=base_url,
            api_key=self.environ.get(key_variable) if key_variable else None,
            key_variable=key_variable,
            timeout=self.get("timeout", name),
            retries=self.get("retries", name),
            command=command,
            # a command provider's program runs in this environment, as a shell would run it
            environment=dict(self.environ) if name == "command" else None,
            # a key the config file names must be there, whatever the base URL
            key_required=True if key_env and spec.is_network else None,
        )


def resolver(flags: Mapping[str, Any]) -> Resolver:
    """The resolver of one command's flags, over this process's environment."""
    return Resolver(flags, os.environ)


def counter(flag: str | None, settings: Resolver | None = None) -> Counter:
    """The counter the flag, CTXPACK_TOKENIZER or the config file names (heuristic: no import)."""
    name = (settings or resolver({"tokenizer": flag})).get("tokenizer")
    if name == "heuristic":
        from compactor_core.compaction.estimate import HEURISTIC

        return HEURISTIC
    from compactor_core.compaction.tokenizers import counter as tokenizer_counter

    return tokenizer_counter(name)


def settings(options: dict[str, Any], given: Resolver, summarizing: bool) -> Settings:
    """The core's compaction settings from the options given (micro has no summary options);
    an unknown tokenizer fails here, before any work."""
    from compactor_core.settings import Settings

    summary: dict[str, Any] = {"min_gain": options["min_gain"]} if "min_gain" in options else {}
    if summarizing:
        summary |= {
            name: options[name]
            for name in ("instructions", "max_tokens", "max_prompt_tokens", "threshold", "policy")
            if name in options
        }
        summary["lang"] = given.get("lang")
        summary["tokenizer"] = counter(options["tokenizer"], given).name
    return Settings(
        keep_recent=options["keep_recent"],
        exclude_tools=tuple(options["exclude_tools"]),
        min_chars=options["min_chars"],
        compat=options["compat"] == "bareagent",
        images=options.get("images", False),
        stale=not options.get("age_only", False),
        recall=options.get("recall", False),
        keep_cut_off=not options.get("strict", False),
        **summary,
    )


def _check(config: dict[str, Any], path: str) -> None:
    """Refuse what a provider's table holds that no provider setting knows (the rest of the
    file is checked against the command's options: ``config.check``)."""
    for key, value in config.items():
        if isinstance(value, dict) and key in defaults.PROVIDER_NAMES:
            for inner in value:
                if inner not in _PROVIDER_KEYS:
                    raise ConfigError(f"{path}: [{key}] unknown setting {inner!r}")


def originals_store() -> OriginalsStore:
    """The store of the originals recall gives back: ``originals`` in the user's state folder."""
    from compactor_core.recall.store import user_originals

    return user_originals(os.environ.get("XDG_STATE_HOME"), os.environ.get("HOME"))
