"""The command provider with real programs: small Python scripts as the command."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import CTXPACK
from providers_support import CONVERSATION, assert_compacted, clean_env, run_ctxpack

from compactor_core.conversation.prompts import PROMPTS
from compactor_core.errors import ConfigError, ProviderError, RetryableProviderError
from compactor_core.providers.base import SummaryRequest
from compactor_core.providers.command import SYSTEM_PROMPT_VARIABLE, CommandSummarizer
from compactor_core.providers.registry import ProviderSettings

REQUEST = SummaryRequest("系统提示 system", "用户提示 user\n", 100, [])


def script(tmp_path: Path, name: str, code: str) -> str:
    """A command line running ``code`` as a script file with this Python."""
    path = tmp_path / name
    path.write_text(code, encoding="utf-8")
    return shlex.join([sys.executable, str(path)])


def summarizer(command: str, timeout: float = 10) -> CommandSummarizer:
    environment = {"PATH": os.environ.get("PATH", ""), "KEPT": "yes"}
    return CommandSummarizer(
        ProviderSettings("command", command=command, timeout=timeout, environment=environment)
    )


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent to reap it counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def wait_for(path: Path, seconds: float = 10) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().endswith("\n"):
            return path.read_text()
        time.sleep(0.02)
    raise AssertionError(f"{path} was never written")


# --- what the program gets and gives -------------------------------------------------------------


def test_prompts_go_in_through_stdin_and_the_environment(tmp_path: Path) -> None:
    code = (
        "import json, os, sys\n"
        "data = sys.stdin.buffer.read().decode('utf-8')\n"
        "json.dump({'stdin': data, 'system': os.environ.get('CTXPACK_SYSTEM_PROMPT'),\n"
        "           'kept': os.environ.get('KEPT'), 'argv': sys.argv[1:]}, sys.stdout)\n"
    )
    command = script(tmp_path, "echo.py", code) + " --flag 'two words'"
    received = json.loads(summarizer(command).summarize(REQUEST))
    assert received == {
        "stdin": REQUEST.user,
        "system": REQUEST.system,
        "kept": "yes",  # the environment in the settings reaches the program
        "argv": ["--flag", "two words"],
    }


def test_output_is_used_exactly_as_it_comes(tmp_path: Path) -> None:
    text = "  摘要 summary\r\n\n- item  \n\n\n"
    command = script(
        tmp_path, "exact.py", f"import sys; sys.stdout.buffer.write({text.encode()!r})"
    )
    assert summarizer(command).summarize(REQUEST) == text


def test_no_shell_ever(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    words = [
        sys.executable,
        "-c",
        "import json, sys; print(json.dumps(sys.argv[1:]))",
        ";",
        f"touch {marker}",
        f"$(touch {marker})",
        "`id`",
        "*",
        "a|b",
    ]
    output = summarizer(shlex.join(words)).summarize(REQUEST)
    assert json.loads(output) == words[3:]
    assert not marker.exists()


def test_a_large_prompt_does_not_deadlock(tmp_path: Path) -> None:
    """Megabytes in and out at once: stdin is written while stdout and stderr are read."""
    code = (
        "import sys\n"
        "sys.stderr.write('x' * 200_000)\n"
        "data = sys.stdin.read()\n"
        "sys.stdout.write(str(len(data)) + ' ' + 'y' * 300_000)\n"
    )
    request = SummaryRequest("s", "字" * 1_000_000, 100, [])
    output = summarizer(script(tmp_path, "big.py", code)).summarize(request)
    assert output.startswith("1000000 ") and len(output) == 300_008


def test_a_program_that_never_reads_its_stdin(tmp_path: Path) -> None:
    request = SummaryRequest("s", "z" * 2_000_000, 100, [])
    command = shlex.join([sys.executable, "-c", "print('summary')"])
    assert summarizer(command).summarize(request) == "summary\n"


# --- failures ------------------------------------------------------------------------------------


def test_a_non_zero_exit_names_the_status_and_the_last_stderr_line(tmp_path: Path) -> None:
    code = "import sys\nsys.stderr.write('warming up\\nError: model not found: gpt-x\\n\\n')\n"
    code += "print('partial')\nsys.exit(3)\n"
    with pytest.raises(ProviderError) as raised:
        summarizer(script(tmp_path, "fail.py", code)).summarize(REQUEST)
    assert not isinstance(raised.value, RetryableProviderError)
    assert str(raised.value) == (
        "command (python" + sys.executable.rpartition("python")[2] + "): "
        "exited with status 3: Error: model not found: gpt-x"
    )


def test_a_long_stderr_line_is_clipped(tmp_path: Path) -> None:
    code = "import sys; sys.stderr.write('E' * 5000); sys.exit(1)"
    with pytest.raises(ProviderError) as raised:
        summarizer(shlex.join([sys.executable, "-c", code])).summarize(REQUEST)
    assert len(str(raised.value)) < 260 and str(raised.value).endswith("E…")


def test_a_program_killed_by_a_signal(tmp_path: Path) -> None:
    code = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    with pytest.raises(ProviderError, match="killed by SIGTERM"):
        summarizer(shlex.join([sys.executable, "-c", code])).summarize(REQUEST)


@pytest.mark.parametrize("output", [b"", b"\n", b"  \n\t\n"])
def test_empty_output_is_a_failure(output: bytes) -> None:
    code = f"import sys; sys.stdout.buffer.write({output!r}); sys.stderr.write('no key set')"
    with pytest.raises(ProviderError, match=r"the output is empty: no key set$"):
        summarizer(shlex.join([sys.executable, "-c", code])).summarize(REQUEST)


def test_output_that_is_not_utf8_is_a_failure() -> None:
    code = "import sys; sys.stdout.buffer.write(b'ok \\xff\\xfe')"
    with pytest.raises(ProviderError, match=r"the output is not UTF-8 \(byte 3\)"):
        summarizer(shlex.join([sys.executable, "-c", code])).summarize(REQUEST)


def test_a_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    code = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pids)!r}, 'w').write(f'{{child.pid}}\\n')\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    with pytest.raises(RetryableProviderError, match=r"no summary within 1 s \(killed\)"):
        summarizer(script(tmp_path, "stall.py", code), timeout=1).summarize(REQUEST)
    assert time.monotonic() - started < 8
    grandchild = int(pids.read_text())
    deadline = time.monotonic() + 5
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(grandchild)


def test_a_grandchild_holding_stdout_cannot_hang_us(tmp_path: Path) -> None:
    """The program exits but leaves a child with its stdout open: the timeout still ends it."""
    code = (
        "import subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print('summary')\n"
    )
    started = time.monotonic()
    with pytest.raises(RetryableProviderError):
        summarizer(script(tmp_path, "daemon.py", code), timeout=1).summarize(REQUEST)
    assert time.monotonic() - started < 8


@pytest.mark.parametrize(
    "command, message",
    [
        ("no-such-program-xyz --flag", "program 'no-such-program-xyz' not found on PATH"),
        ("/nonexistent/bin/llm", "program '/nonexistent/bin/llm' not found (or not executable)"),
        ("llm 'unbalanced", "cannot be split: No closing quotation"),
        ("   ", "needs a command"),
    ],
)
def test_a_bad_command_is_a_configuration_error(command: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        summarizer(command)


def test_a_file_that_is_not_executable(tmp_path: Path) -> None:
    program = tmp_path / "summarize"
    program.write_text("#!/bin/sh\necho hi\n")
    with pytest.raises(ConfigError, match="not found"):
        summarizer(str(program))


# --- through the real CLI ------------------------------------------------------------------------


def test_cli_command_provider_rebuilds_with_the_exact_text(tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    summary = "目标：修复登录测试。  \n\n"
    code = (
        "import json, os, sys\n"
        "data = sys.stdin.buffer.read().decode('utf-8')\n"
        f"json.dump({{'stdin': data, 'system': os.environ['{SYSTEM_PROMPT_VARIABLE}']}},\n"
        f"          open({str(seen)!r}, 'w'))\n"
        f"sys.stdout.buffer.write({summary.encode()!r})\n"
    )
    run = run_ctxpack(
        tmp_path,
        ["full", "--provider", "command", "--command", script(tmp_path, "s.py", code)],
        env=clean_env(tmp_path),
    )
    assert_compacted(run, summary)
    received = json.loads(seen.read_text())
    assert received["system"] == PROMPTS["zh"].system
    assert received["stdin"].startswith(PROMPTS["zh"].user_intro + "\n\n[user]\n")


def test_cli_command_from_the_environment_and_its_failure(tmp_path: Path) -> None:
    command = shlex.join([sys.executable, "-c", "import sys; sys.exit('quota exceeded')"])
    env = clean_env(tmp_path, CTXPACK_PROVIDER="command", CTXPACK_COMMAND=command)
    run = run_ctxpack(tmp_path, ["full", "--strict"], env=env)
    assert run.returncode == 69
    assert run.output == CONVERSATION
    assert run.warnings() == [
        "ctxpack: <stdin>: summary failed, input left as it was: command (python"
        + sys.executable.rpartition("python")[2]
        + "): exited with status 1: quota exceeded"
    ]


def test_cli_program_not_found_is_exit_78(tmp_path: Path) -> None:
    args = ["full", "--provider", "command", "--command", "no-such-summarizer -m x"]
    run = run_ctxpack(tmp_path, args, env=clean_env(tmp_path))
    assert run.returncode == 78
    assert run.stdout == ""
    assert run.stderr == (
        "ctxpack: provider 'command': program 'no-such-summarizer' not found on PATH "
        "(or not executable)\n"
    )
    assert not run.transcripts.exists()  # refused before any input was read


def test_cli_timeout_is_exit_75(tmp_path: Path) -> None:
    command = shlex.join([sys.executable, "-c", "import time; time.sleep(30)"])
    args = ["full", "--provider", "command", "--command", command, "--timeout", "0.5", "--strict"]
    run = run_ctxpack(tmp_path, args, env=clean_env(tmp_path))
    assert run.returncode == 75
    assert run.output == CONVERSATION
    assert "no summary within 0.5 s (killed)" in run.stderr
    assert run.seconds < 10


def test_cli_interrupted_kills_the_program_and_its_children(tmp_path: Path) -> None:
    """Ctrl-C reaches ctxpack, not the program (in a session of its own): ctxpack kills it."""
    pids = tmp_path / "pids"
    code = (
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}\\n')\n"
        "time.sleep(60)\n"
    )
    command = script(tmp_path, "slow.py", code)
    process = subprocess.Popen(
        [CTXPACK, "full", "--provider", "command", "--command", command, "--no-transcript"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(tmp_path),
        cwd=tmp_path,
    )
    process.stdin.write(json.dumps(CONVERSATION).encode())
    process.stdin.close()
    program, grandchild = map(int, wait_for(pids).split())
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=10) == 130
    assert process.stdout.read() == b""
    assert b"interrupted" in process.stderr.read()
    process.stdout.close()
    process.stderr.close()
    deadline = time.monotonic() + 5
    while (alive(program) or alive(grandchild)) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(program) and not alive(grandchild)
