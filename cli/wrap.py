"""``ctxpack run [SERVE OPTIONS] AGENT [ARGS]...``: an agent with ``ctxpack serve`` in front of it.

Serve runs as a process of its own on a free port of 127.0.0.1 for as long as the agent runs,
in a session of its own (the terminal's Ctrl-C is the agent's alone), its log appended to
``run.log`` in the state folder. The agent runs in the foreground with the terminal, pointed at
serve as it is pointed at an API (``compactor_core.serve.pointing``). A signal sent to ctxpack
is passed on to the agent; one the terminal sent reached the agent already. When the agent
exits, serve is stopped, and ctxpack exits as the agent did (with its status, or by its
signal).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import click
import httpx

from compactor_core.serve.pointing import pointing

from . import io, options, resolve
from .serve import proxy_options
from .service import this_ctxpack

# The signals ctxpack passes on; SIGCHLD tells it the agent (or serve) has exited.
PASSED_ON = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1)
WATCHED = {*PASSED_ON, signal.SIGCHLD}
STOP_SERVE_SECONDS = 10
COMMAND_NOT_FOUND = 127  # as a shell says it


@click.command(
    cls=options.RawArgsCommand,
    context_settings={"allow_interspersed_args": False},
    epilog=options.epilog(
        "ctxpack run claude                             # Claude Code through ctxpack serve",
        "ctxpack run --threshold 30000 codex exec 'fix the tests'",
        "ctxpack run --provider anthropic claude --resume  # a model writes the summaries",
        "OPENAI_BASE_URL=https://my.gateway/v1 ctxpack run qwen  # serve forwards there",
    ),
)
@click.option(
    "--upstream",
    metavar="URL",
    help="Forward to URL [default: where the agent would have gone: its own base URL "
    "setting, else its provider's API].",
)
@proxy_options
@click.argument("agent")
@click.argument("agent_args", nargs=-1, type=click.UNPROCESSED, metavar="[ARGS]...")
def run(upstream: str | None, agent: str, agent_args: tuple[str, ...], **given: Any) -> None:
    """Run AGENT (claude, codex, qwen, copilot) with ctxpack serve in front of it.

    Serve listens on a free port of 127.0.0.1 while the agent runs, with the SERVE OPTIONS
    given; the agent is pointed at it the way it is pointed at an API (Claude Code:
    ANTHROPIC_BASE_URL; Codex: its provider, WebSockets off; Qwen Code: OPENAI_BASE_URL;
    Copilot CLI: COPILOT_PROVIDER_BASE_URL). Exits as the agent exits; serve is stopped then.
    Serve's log: run.log in the state folder (~/.local/state/ctxpack).
    """
    route = pointing(agent, os.environ, Path.home())
    raw = options.raw_args()
    serve_options = raw[: len(raw) - 1 - len(agent_args)]
    if serve_options[-1:] == ["--"]:
        serve_options.pop()
    state = Path(resolve.resolver(given).state_folder)
    serving = start_serve(upstream or route.upstream, _without_upstream(serve_options), state)
    environment = {**os.environ, **route.environment(serving.address)}
    command = [agent, *route.arguments(serving.address), *agent_args]
    try:
        status = run_agent(command, environment)
    finally:
        serving.stop()
    _exit_as(status)


class Serving:
    """``ctxpack serve --port 0`` as a child process, and the address it printed."""

    def __init__(self, process: subprocess.Popen[bytes], address: str, log: Path) -> None:
        self.process = process
        self.address = address
        self.log = log

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it is still there after ``STOP_SERVE_SECONDS``."""
        summary = _stats_line(self.address)
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(STOP_SERVE_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if summary:
            io.warn(f"serve: {summary} (log: {self.log})")


def start_serve(upstream: str, serve_options: list[str], state: Path) -> Serving:
    """Serve on a free port of 127.0.0.1, in a session of its own, its log in ``state``."""
    log_path = state / "run.log"
    with _log_file(log_path) as log:
        process = subprocess.Popen(
            [*this_ctxpack(), "serve", "--port", "0", "--upstream", upstream, *serve_options],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,  # the terminal's signals are for the agent alone
            preexec_fn=_die_with_parent,
        )
    assert process.stdout is not None
    address = process.stdout.readline().decode().strip()
    process.stdout.close()
    if not address:  # serve could not start: it said why in its log
        status = process.wait()
        io.warn(f"serve did not start: {_last_line(log_path)}")
        sys.exit(status or 1)
    return Serving(process, address, log_path)


def run_agent(command: list[str], environment: dict[str, str]) -> int:
    """The agent's exit status (negative: the signal that ended it), signals passed on."""
    signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)
    try:
        try:
            agent = subprocess.Popen(command, env=environment, preexec_fn=_unblock_signals)
        except FileNotFoundError:
            io.warn(f"{command[0]}: command not found")
            return COMMAND_NOT_FOUND
        except PermissionError:
            io.warn(f"{command[0]}: permission denied")
            return COMMAND_NOT_FOUND - 1
        return _wait_passing_signals(agent)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, WATCHED)


def _wait_passing_signals(agent: subprocess.Popen[bytes]) -> int:
    while agent.poll() is None:
        info = signal.sigwaitinfo(WATCHED)
        # si_pid 0: the kernel sent it (the terminal's Ctrl-C, to the agent too); else a process
        if info.si_signo != signal.SIGCHLD and info.si_pid != 0 and agent.poll() is None:
            agent.send_signal(info.si_signo)
    return agent.returncode


def _exit_as(status: int) -> None:
    """Exit with the agent's status; when a signal ended it, by that signal."""
    if status >= 0:
        sys.exit(status)
    signal.signal(-status, signal.SIG_DFL)
    os.kill(os.getpid(), -status)
    sys.exit(128 - status)  # a signal whose default is not to end the process


def _without_upstream(serve_options: list[str]) -> list[str]:
    """``run``'s own --upstream is given to serve as its --upstream, once."""
    kept: list[str] = []
    skip = False
    for argument in serve_options:
        if skip:
            skip = False
        elif argument == "--upstream":
            skip = True
        elif not argument.startswith("--upstream="):
            kept.append(argument)
    return kept


def _log_file(path: Path) -> IO[bytes]:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    return os.fdopen(descriptor, "ab")


def _last_line(path: Path) -> str:
    lines = path.read_text(errors="replace").splitlines()
    return lines[-1].removeprefix("ctxpack: ") if lines else "no reason given"


def _stats_line(address: str) -> str | None:
    """What serve did, from its /ctxpack/stats; None when it does not answer at once."""
    try:
        stats = httpx.get(f"{address}/ctxpack/stats", timeout=2).json()
    except (httpx.HTTPError, ValueError):
        return None
    return (
        f"{stats['model_requests']} model requests, tokens {stats['tokens_in']} -> "
        f"{stats['tokens_out']}"
    )


def _die_with_parent() -> None:
    """Serve gets SIGTERM if ctxpack itself is killed (Linux's parent-death signal)."""
    if sys.platform == "linux":
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _unblock_signals() -> None:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, WATCHED)
