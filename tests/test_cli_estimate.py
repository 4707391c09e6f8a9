"""`ctxpack estimate` through click's CliRunner: stdout and stderr asserted apart."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, corpus_files, dumps, invoke

SPEC_VECTOR = [
    {"role": "user", "content": "你好abc123"},
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}, {"type": "tool_result", "content": "结果42"}],
    },
]


def test_prints_one_integer() -> None:
    result = invoke("estimate", stdin=dumps(SPEC_VECTOR))
    assert (result.exit_code, result.stdout, result.stderr) == (0, "9\n", "")


# What a filter run on every agent turn must not pay for before it starts (issue 11.5): pathlib
# (with urllib.parse and ipaddress), the provider settings, and the modules of other commands
# (serve's server above all).
NOT_AT_START_UP = (
    "pathlib",
    "compactor_core.providers.registry",
    "compactor_core.providers.catalog",
    "cli.agents",
    "cli.restore",
    "cli.run",
    "cli.serve",
    "compactor_core.serve",
    "uvicorn",
)


def test_estimate_of_a_file_imports_nothing_it_does_not_need(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(dumps(SPEC_VECTOR))
    code = (
        "import sys\n"
        f"sys.argv = ['ctxpack', 'estimate', {str(path)!r}]\n"
        "from cli.main import main\n"
        "try:\n"
        "    main()\n"
        "finally:\n"
        f"    print([name for name in {NOT_AT_START_UP!r} if name in sys.modules])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "9\n[]\n", "")


def test_file_argument_and_dash_for_stdin(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(dumps(SPEC_VECTOR))
    assert invoke("estimate", str(path)).stdout == "9\n"
    assert invoke("estimate", "-", stdin=dumps(SPEC_VECTOR)).stdout == "9\n"


@pytest.mark.parametrize(
    ("flag", "limit", "status"),
    [("--threshold", "8", 0), ("--threshold", "9", 1), ("--over", "8", 0), ("--over", "100", 1)],
)
def test_threshold_exit_status_like_grep(flag: str, limit: str, status: int) -> None:
    result = invoke("estimate", flag, limit, stdin=dumps(SPEC_VECTOR))
    assert result.exit_code == status
    assert result.stdout == "9\n"
    assert result.stderr == ""


@pytest.mark.parametrize(("limit", "status"), [("8", 0), ("9", 1)])
def test_quiet_prints_nothing(limit: str, status: int) -> None:
    result = invoke("estimate", "-q", "--threshold", limit, stdin=dumps(SPEC_VECTOR))
    assert (result.exit_code, result.stdout, result.stderr) == (status, "", "")


def test_compat_bareagent_ignores_tool_calls_and_dict_inputs() -> None:
    messages = [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "name": "bash", "input": {"command": "ls -la"}}],
            "tool_calls": [{"id": "c", "function": {"name": "x", "arguments": "{}"}}],
        }
    ]
    default = int(invoke("estimate", stdin=dumps(messages)).stdout)
    bareagent = int(invoke("estimate", "--compat", "bareagent", stdin=dumps(messages)).stdout)
    assert bareagent == 1  # "bash"
    assert default > bareagent


def test_envelope_system_counts() -> None:
    envelope = {"model": "m", "system": "你好你好", "messages": SPEC_VECTOR}
    assert invoke("estimate", stdin=dumps(envelope)).stdout == "15\n"  # 8.5 + 6
    result = invoke("estimate", "--compat", "bareagent", stdin=dumps(envelope))
    assert result.stdout == "9\n"


def test_jsonl_input() -> None:
    data = b"".join(dumps(message) + b"\n" for message in SPEC_VECTOR)
    assert invoke("estimate", stdin=data).stdout == "9\n"


def test_json_breakdown() -> None:
    messages = [
        *SPEC_VECTOR,
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "bash"}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t", "content": "abcd"}],
        },
    ]
    result = invoke("estimate", "--json", stdin=dumps(messages))
    assert result.exit_code == 0 and result.stderr == ""
    assert result.stdout.count("\n") == 1
    report = json.loads(result.stdout)
    assert report["tokens"] == 11
    assert report["exact"] == 10.5
    assert report["by_role"] == {"user": 5.5, "assistant": 5.0}
    assert report["by_tool"]["bash"] == {
        "calls": 1,
        "call_tokens": 1.0,
        "results": 1,
        "result_tokens": 1.0,
    }
    assert report["tool_result_turns"] == 2


def test_json_with_threshold_keeps_the_exit_status() -> None:
    result = invoke("estimate", "--json", "--threshold", "100", stdin=dumps(SPEC_VECTOR))
    assert result.exit_code == 1
    assert json.loads(result.stdout)["tokens"] == 9


def test_several_files(tmp_path: Path) -> None:
    small, large = tmp_path / "small.json", tmp_path / "large.json"
    small.write_bytes(dumps(SPEC_VECTOR))
    large.write_bytes(dumps([{"role": "user", "content": "x" * 400}]))
    result = invoke("estimate", str(small), str(large))
    assert result.stdout == f"9\t{small}\n100\t{large}\n"
    assert invoke("estimate", "--threshold", "50", str(small), str(large)).exit_code == 0
    assert invoke("estimate", "--threshold", "100", str(small), str(large)).exit_code == 1
    lines = invoke("estimate", "--json", str(small), str(large)).stdout.splitlines()
    assert [json.loads(line)["file"] for line in lines] == [str(small), str(large)]


def test_corpus_bareagent_never_over_default() -> None:
    for path in corpus_files():
        default = int(invoke("estimate", str(path)).stdout)
        bareagent = int(invoke("estimate", "--compat", "bareagent", str(path)).stdout)
        assert 0 < bareagent <= default, path.name


def test_bad_input_one_line_exit_65() -> None:
    result = invoke("estimate", stdin=b'[{"role":"user"},{"role":5}]')
    assert result.exit_code == 65
    assert result.stdout == ""
    assert result.stderr == 'ctxpack: <stdin>: messages[1]: "role" must be a string, got a number\n'


def test_missing_file_exit_66(tmp_path: Path) -> None:
    result = invoke("estimate", str(tmp_path / "nope.json"))
    assert result.exit_code == 66
    assert result.stdout == ""
    assert result.stderr == f"ctxpack: {tmp_path / 'nope.json'}: no such file\n"


def test_bad_threshold_is_a_usage_error() -> None:
    result = invoke("estimate", "--threshold", "many", stdin=dumps(SPEC_VECTOR))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "--threshold" in result.stderr
