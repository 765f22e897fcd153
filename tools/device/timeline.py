"""Where a whole `sitscheck` run spends its wall time: every call of the named functions, on
whichever thread, as (start, end) since the interpreter started, printed as a timeline.

    python3 tools/device/timeline.py [--cprofile FILE] -- run -o json=/dev/null

Profiling only (issue 19's fixed cost): the functions are wrapped in place before the CLI
runs; `--cprofile` also profiles every thread (one cProfile per thread, merged into FILE;
on Python >= 3.12, which allows one profiler at a time, the main thread only).
"""

from __future__ import annotations

import functools
import importlib
import sys
import threading
import time
from typing import Any

# (module whose attribute is called, attribute path): where a name was imported with
# `from x import y`, the importing module's binding is the one called.
SPANS = [
    ("sitscheck.app", "execute"),
    ("sitscheck.app", "selected_checks"),
    ("sitscheck.app", "Background._run"),
    ("sitscheck.contract.runner", "run_checks"),
    ("sitscheck.contract.runner", "_run_check"),
    ("sitscheck.contract.check", "LazyCheck._target"),
    ("sitscheck.contract.check", "LazyCheck.collect"),
    ("sitscheck.sources.live", "collect_snapshot"),
    ("sitscheck.sources.live", "Nvml.load"),
    ("sitscheck.sources.nvml", "Nvml.init"),
    ("sitscheck.sources.live", "LiveSources.artifact"),
    ("sitscheck.sources.live", "LiveSources.kernel_log"),
    ("sitscheck.sources.command", "CommandRunner.run"),
    ("sitscheck.app", "load_rules"),
    ("sitscheck.engine.loader", "load_profiles"),
    ("sitscheck.engine.loader", "rule_files"),
    ("sitscheck.app", "open_window"),
    ("sitscheck.app", "evaluate_rules"),
    ("sitscheck.report.assemble", "build_report"),
    ("sitscheck.cli", "_execute_and_deliver"),
    ("sitscheck.interrupt", "sweep"),
]

T0 = time.perf_counter()
EVENTS: list[tuple[float, float, str, str]] = []


def _since_exec() -> float:
    """Seconds since the process started (its start time in /proc), else since this module."""
    try:
        import os

        with open("/proc/self/stat") as handle:
            start_ticks = int(handle.read().rpartition(")")[2].split()[19])
        with open("/proc/uptime") as handle:
            uptime = float(handle.read().split()[0])
        return uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def _wrap(module: str, attr: str) -> None:
    try:
        owner: Any = importlib.import_module(module)
        parts = attr.split(".")
        for part in parts[:-1]:
            owner = getattr(owner, part)
        original = getattr(owner, parts[-1])
    except (ImportError, AttributeError) as exc:
        print(f"timeline: no {module}:{attr} ({exc})", file=sys.stderr)
        return

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            label = attr
            if attr.endswith(("run_check", "collect", "_target")) and args:
                label += f"[{getattr(getattr(args[0], 'check', args[0]), 'name', '?')}]"
            if attr == "CommandRunner.run" and len(args) > 1:
                label += f"[{' '.join(map(str, args[1]))[:60]}]"
            if attr == "LiveSources.artifact" and len(args) > 1:
                label += f"[{args[1]}]"
            EVENTS.append((began, time.perf_counter(), threading.current_thread().name, label))

    setattr(owner, parts[-1], wrapper)


def _profile_threads(path: str) -> Any:
    import cProfile

    profiles: list[Any] = []
    main = cProfile.Profile()
    profiles.append(main)
    if sys.version_info >= (3, 12):  # one cProfile at a time in a process: the main thread's
        return main, profiles
    run = threading.Thread.run

    def profiled(self: threading.Thread) -> None:
        profile = cProfile.Profile()
        profiles.append(profile)
        profile.enable()
        try:
            run(self)
        finally:
            profile.disable()

    threading.Thread.run = profiled  # type: ignore[method-assign]
    return main, profiles


def main() -> int:
    args = sys.argv[1:]
    cprofile = None
    if args[:1] == ["--cprofile"]:
        cprofile, args = args[1], args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    before = _since_exec() - (time.perf_counter() - T0)
    profiler = _profile_threads(cprofile) if cprofile else None
    if profiler:
        profiler[0].enable()
    began = time.perf_counter()
    import sitscheck.app
    import sitscheck.cli  # noqa: F401

    imported = time.perf_counter()
    for module, attr in SPANS:
        _wrap(module, attr)
    sys.argv = ["sitscheck", *args]
    from sitscheck.__main__ import main as sitscheck_main

    code = 0
    try:
        sitscheck_main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    ended = time.perf_counter()
    if profiler and cprofile:
        import pstats

        profiler[0].disable()
        stats = pstats.Stats(profiler[1][0])
        for extra in profiler[1][1:]:
            stats.add(extra)
        stats.dump_stats(cprofile)
    out = sys.stderr
    print(f"interpreter start-up before this script: {before * 1000:.0f} ms", file=out)
    print(f"import sitscheck.cli + app: {(imported - began) * 1000:.0f} ms", file=out)
    print(f"exit {code}; whole (from this script): {(ended - T0) * 1000:.0f} ms", file=out)
    print(f"{'start ms':>9} {'end ms':>9} {'took':>7}  thread  call", file=out)
    for start, end, thread, label in sorted(EVENTS):
        print(
            f"{(start - T0) * 1000:9.1f} {(end - T0) * 1000:9.1f} {(end - start) * 1000:7.1f}"
            f"  {thread}  {label}",
            file=out,
        )
    return code


if __name__ == "__main__":
    sys.exit(main())
