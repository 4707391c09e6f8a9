"""The core is a library: no click, no process streams, no environment, no terminal checks."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

from helpers import REPO

CORE = REPO / "compactor_core"
FORBIDDEN = re.compile(r"sys\.std(in|out|err)|os\.environ|isatty|getenv|\bprint\(|import click")


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )


def test_importing_every_core_module_imports_no_click() -> None:
    result = run_python(
        """
        import pkgutil, importlib, sys
        import compactor_core
        names = [m.name for m in pkgutil.walk_packages(compactor_core.__path__, "compactor_core.")]
        for name in names:
            importlib.import_module(name)
        assert len(names) >= 8, names
        print("click" in sys.modules, len(names))
        """
    )
    assert result.returncode == 0, result.stderr
    imported_click, count = result.stdout.split()
    assert imported_click == "False"
    assert int(count) >= 8


def test_core_source_never_touches_streams_environment_or_terminal() -> None:
    offences = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in sorted(CORE.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if FORBIDDEN.search(line)
    ]
    assert offences == [], "the core must take these as parameters:\n" + "\n".join(offences)


def test_foundation_runs_with_streams_and_environment_locked_away() -> None:
    # Everything the foundation does, with any use of the process's streams or environment
    # turned into an error: the result goes out through a raw file descriptor.
    result = run_python(
        """
        import os, sys, tempfile
        from pathlib import Path
        from compactor_core.disk import atomic, replace as files
        from compactor_core.compaction import estimate, micro
        from compactor_core.conversation import formats
        from compactor_core.snapshots import local_store as snapshot_store

        class Locked:
            def __getattr__(self, name):
                raise AssertionError(f"the core touched a process stream: .{name}")

        class LockedEnviron(dict):
            def _refuse(self, *args, **kwargs):
                raise AssertionError("the core read os.environ")
            __getitem__ = get = __contains__ = __iter__ = keys = items = copy = _refuse

        out = os.dup(1)
        directory = Path(tempfile.mkdtemp())  # tempfile reads TMPDIR: before the lock
        sys.stdin = sys.stdout = sys.stderr = Locked()
        os.environ = LockedEnviron()
        os.getenv = lambda *args: (_ for _ in ()).throw(AssertionError("getenv"))

        data = (b'[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"bash",'
                b'"input":{"c":"ls"}}]},{"role":"user","content":[{"type":"tool_result",'
                b'"tool_use_id":"a","content":"x"}]}]')
        conversation = formats.parse(data, "in.json")
        tokens = estimate.estimate(conversation.messages)
        estimate.breakdown(conversation.messages)
        micro.micro_compact(conversation.messages)
        store = snapshot_store.SnapshotStore(directory / "snaps")
        store.save_result("s", conversation)
        store.select("s")[0].read()
        out_file = directory / "out.json"
        atomic.atomic_write(out_file, formats.dump(conversation))
        with open(out_file, "rb") as opened:  # a rewrite in place, its original kept
            read = files.FileState.of(os.fstat(opened.fileno()))
            how = files.Replacement("out.json", store, writer=lambda device, inode: None)
            files.replace(out_file, opened.fileno(), read, [b"[]"], how)
        os.write(out, f"ok {tokens}".encode())
        """
    )
    assert result.stdout == "ok 6", result.stderr
