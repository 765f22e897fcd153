"""Least privilege in the code itself: no shell anywhere, no eval, every process started in one
place, and commands resolved once, to absolute paths."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.commands import printing_command, write_command
from sitscheck.app import installed_evidence
from sitscheck.sources import command as command_module
from sitscheck.sources.command import CommandRunner
from sitscheck.sources.live import LiveOptions, LiveSources

REPO = Path(__file__).resolve().parents[2]
TREE = ("healthcheck", "checks", "rules", "tests", "tools", "benchmarks", "packaging")
PACKAGE = ("healthcheck", "checks")
# Where the package may start a process: the command runner, and `child_python`, the one way
# of starting a Python child (the --load, --bandwidth and TensorRT probes), isolated.
SPAWNERS = {
    "healthcheck/sources/command.py",
    "healthcheck/sources/child_python.py",
}
INTERPRETER = "healthcheck/sources/child_python.py"
SPAWN_CALLS = {
    "subprocess.Popen",
    "subprocess.run",
    "subprocess.call",
    "subprocess.check_call",
    "subprocess.check_output",
    "subprocess.getoutput",
    "subprocess.getstatusoutput",
    "os.system",
    "os.popen",
    "os.spawnl",
    "os.spawnv",
    "os.spawnvp",
    "os.execv",
    "os.execvp",
    "os.execvpe",
    "os.posix_spawn",
    "os.posix_spawnp",
    "pty.spawn",
    "asyncio.create_subprocess_shell",
    "asyncio.create_subprocess_exec",
}
SHELL_CALLS = {"os.system", "os.popen", "subprocess.getoutput", "subprocess.getstatusoutput"}
SHELL_CALLS |= {"asyncio.create_subprocess_shell"}


def python_files(folders: tuple[str, ...]) -> Iterator[Path]:
    for folder in folders:
        yield from sorted((REPO / folder).rglob("*.py"))


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    return "?"


def calls(path: Path) -> Iterator[ast.Call]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    yield from (node for node in ast.walk(tree) if isinstance(node, ast.Call))


def where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(REPO)}:{getattr(node, 'lineno', '?')}"


def test_no_shell_anywhere_in_the_tree() -> None:
    """No `shell=<anything but False>` and no shell-running helper, in the package, the tests,
    the tools and the benchmarks alike (an AST walk, so strings and comments do not count)."""
    found = []
    for path in python_files(TREE):
        for call in calls(path):
            name = dotted(call.func)
            if name in SHELL_CALLS:
                found.append(f"{where(path, call)} {name}()")
            for keyword in call.keywords:
                if keyword.arg == "shell" and not (
                    isinstance(keyword.value, ast.Constant) and keyword.value.value is False
                ):
                    found.append(f"{where(path, call)} {name}(shell=...)")
    assert found == []


def test_the_package_never_evaluates_code() -> None:
    """Rule conditions are CEL, compiled; nothing reaches eval/exec/compile."""
    found = [
        where(path, call)
        for path in python_files(PACKAGE)
        for call in calls(path)
        if dotted(call.func) in ("eval", "exec", "compile", "builtins.eval", "builtins.exec")
    ]
    assert found == []


def test_processes_are_started_in_one_place() -> None:
    found = sorted(
        f"{where(path, call)} {dotted(call.func)}"
        for path in python_files(PACKAGE)
        for call in calls(path)
        if dotted(call.func) in SPAWN_CALLS and str(path.relative_to(REPO)) not in SPAWNERS
    )
    assert found == []


def test_every_child_interpreter_is_started_by_child_python() -> None:
    """`sys.executable` (this interpreter started again) is named in one module of the package,
    which starts it isolated; every worker and probe goes through it."""
    found = sorted(
        where(path, node)
        for path in python_files(PACKAGE)
        if str(path.relative_to(REPO)) != INTERPRETER
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and dotted(node) == "sys.executable"
    )
    assert found == []
    source = (REPO / INTERPRETER).read_text(encoding="utf-8")
    assert "[sys.executable, ISOLATED, " in source and 'ISOLATED = "-I"' in source


# Where the package may start a thread: `threads.start_daemon`, which turns a thread the system
# refuses (`ulimit -v`) into a reason (issue 29, item 9). The probes are child processes of
# their own: a thread refused there ends that child, which its parent names.
THREAD_STARTERS = {"healthcheck/threads.py"}
THREAD_CALLS = {
    "threading.Thread",
    "Thread",
    "threading.Timer",
    "Timer",
    "ThreadPoolExecutor",
    "concurrent.futures.ThreadPoolExecutor",
    "futures.ThreadPoolExecutor",
    "_thread.start_new_thread",
}


def test_threads_are_started_in_one_place() -> None:
    found = sorted(
        f"{where(path, call)} {dotted(call.func)}"
        for path in python_files(PACKAGE)
        for call in calls(path)
        if dotted(call.func) in THREAD_CALLS
        and str(path.relative_to(REPO)) not in THREAD_STARTERS
        and not str(path.relative_to(REPO)).startswith("healthcheck/probes/")
    )
    assert found == []


# ---- commands resolved once, to absolute paths -------------------------------------------------


@pytest.fixture
def spies(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    seen: dict[str, list[Any]] = {"which": [], "popen": []}
    real_which, real_popen = shutil.which, subprocess.Popen

    def which(name: str, *args: Any, **kwargs: Any) -> str | None:
        seen["which"].append(name)
        return real_which(name, *args, **kwargs)

    def popen(argv: Any, *args: Any, **kwargs: Any) -> Any:
        seen["popen"].append(list(argv))
        return real_popen(argv, *args, **kwargs)

    monkeypatch.setattr(command_module.shutil, "which", which)
    monkeypatch.setattr(command_module.subprocess, "Popen", popen)
    return seen


def test_a_command_is_resolved_once_and_run_by_absolute_path(
    tmp_path: Path, spies: dict[str, list[Any]]
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    printing_command(first, "tool", "first\n")
    runner = CommandRunner(path=f"{second}{os.pathsep}{first}")
    assert runner.run(["tool"], 5).stdout == "first\n"
    printing_command(second, "tool", "planted later, earlier on the path\n")
    assert runner.run(["tool", "-x"], 5).stdout == "first\n"  # the name is not looked up again
    assert spies["which"] == ["tool"]
    assert [argv[0] for argv in spies["popen"]] == [str(first / "tool")] * 2


def test_a_live_run_resolves_each_command_once(tmp_path: Path, spies: dict[str, list[Any]]) -> None:
    bin_dir = tmp_path / "bin"
    write_command(bin_dir, "nvidia-smi", "echo GPU 0: NVIDIA H200 (UUID: GPU-1)")
    printing_command(bin_dir, "dmesg", "[    1.0] kernel: hello\n")
    marker = tmp_path / "nvidiactl"
    marker.touch()
    options = LiveOptions(driver_markers=(str(marker),), sys_root=str(tmp_path))
    sources = LiveSources(options, CommandRunner(path=str(bin_dir)), installed=installed_evidence)
    try:
        for name in ("nvidia-smi-L.txt", "nvidia-smi-topo-m.txt", "nvidia-smi-q.txt"):
            sources.artifact(name)
        for _ in range(2):
            sources.kernel_log()
    finally:
        sources.close()
    assert sorted(set(spies["which"])) == sorted(spies["which"])  # once per name
    assert spies["popen"] and all(os.path.isabs(argv[0]) for argv in spies["popen"])
