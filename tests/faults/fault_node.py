"""A fake live GPU node for fault injection, built from a bundle recorded on a real 2×H200 node.

The node is what `LiveSources` sees on a real machine, with every host boundary replaced:

- `bin/`: a private PATH (`CommandRunner(path=bin)`): `nvidia-smi` prints the recorded outputs
  by its arguments, `dmesg` prints the recorded kernel log, `journalctl` the same in journal
  form; each can be swapped for a hanging, crashing, missing or garbling one;
- NVML: `tests/fakes/fake_pynvml.FakePynvml` replaying the recorded `nvml.json` (or another
  recording: `NvmlFaults.recording`), answering the calls the installed checks declare
  (`NvmlRead`) from it too, with its fault hooks (`block`, `block_gpu`, `lose_gpu`,
  `fail_init`), or no NVML at all;
- `/dev/kmsg`: absent (ENOENT), or unreadable (EPERM, as without CAP_SYSLOG);
- `/sys`: a copy of the bundle's `sysfs/` (so a test may delete files from it);
- the driver marker (`/proc/driver/nvidia/version`): a file in the node's folder.

`NodeSpec` says all of that as JSON, so the same node runs in-process (`install(spec, patch)`:
`app.execute` builds these sources) or as a real `sitscheck` process (`python fault_node.py
SPEC.json run ...`), which the signal tests need.
"""

from __future__ import annotations

import errno
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from msgspec import structs
from sitscheck.config import run_config

TESTS = Path(__file__).resolve().parent.parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from fakes.commands import HANG, write_command  # noqa: E402
from fakes.procs import wait_until  # noqa: E402

BUNDLE = TESTS / "bundles" / "h200x2-idle-v0"
FAKE_NODE_SPEC = "SITSCHECK_FAKE_NODE"

# What each `nvidia-smi` invocation prints: the recorded file of the same name.
SMI_FILES = {
    "-L": "nvidia-smi-L.txt",
    "-q": "nvidia-smi-q.txt",
    "topo": "nvidia-smi-topo-m.txt",
    "dmon": "nvidia-smi-dmon.txt",
    "--query-gpu=*": "nvidia-smi-query-gpu.csv",
}

Patch = Callable[[Any, str, Any], None]
FAKES: list[Any] = []  # every fake NVML installed, so a test's teardown can release its blocks
Opener = Callable[..., int]


@dataclass
class NvmlFaults:
    """NVML as the node has it: `mode` ok | absent (pynvml unusable); the fake's fault hooks."""

    mode: str = "ok"
    recording: str = ""  # the nvml.json the fake replays; "" for the node's bundle's
    fail_init: str | None = None  # an NVML_ERROR_* name
    init_words: str | None = None  # what the failed init says (pynvml's string); else the name
    block: list[tuple[str, int | None]] = field(default_factory=list)
    block_gpu: list[tuple[int, int]] = field(default_factory=list)  # (gpu, from_call)
    lose_gpu: list[tuple[int, int]] = field(default_factory=list)  # (gpu, from_call)


@dataclass
class NodeSpec:
    root: str
    bin: str
    sys_root: str
    marker: str
    kmsg: str = "absent"  # absent | eperm
    log_files: list[str] = field(default_factory=list)
    nvml: NvmlFaults = field(default_factory=NvmlFaults)
    state_dir: str = ""
    progress: str = ""  # a file each check's name is appended to when its collect returns
    # (and RULES_LOADED once the rules are compiled)
    hold_rules: str = ""  # before the rules run: touch HOLD.reached, wait for HOLD.go
    # phase -> module: the declared workload of that phase runs this module instead (a
    # stand-in such as tests/accept/fake_workloads, for `run --load` and `--bandwidth`)
    workload_modules: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> NodeSpec:
        data = json.loads(text)
        nvml = data.pop("nvml")
        faults = NvmlFaults(
            mode=nvml["mode"],
            recording=nvml.get("recording", ""),
            fail_init=nvml["fail_init"],
            init_words=nvml.get("init_words"),
            block=[(f, g) for f, g in nvml["block"]],
            block_gpu=[(g, n) for g, n in nvml["block_gpu"]],
            lose_gpu=[(g, n) for g, n in nvml["lose_gpu"]],
        )
        return cls(nvml=faults, **data)

    def write(self) -> Path:
        path = Path(self.root) / "node.json"
        path.write_text(self.to_json(), encoding="utf-8")
        return path


# ---- building the node ---------------------------------------------------------------------


def smi_script(bundle: Path, special: dict[str, str] | None = None) -> str:
    """A `/bin/sh` body printing the recorded output for each way sitscheck calls nvidia-smi;
    `special` maps one of the `SMI_FILES` patterns to another body (a hang, a crash...)."""
    lines = ['case "$1" in']
    for pattern, name in SMI_FILES.items():
        body = (special or {}).get(pattern, f"exec cat {shlex.quote(str(bundle / name))}")
        lines.append(f"  {pattern}) {body} ;;")
    lines.append('  *) echo "fake nvidia-smi: unknown arguments: $*" >&2; exit 2 ;;')
    lines.append("esac")
    return "\n".join(lines)


def hang_body(pidfile: Path, setsid_child: bool = False) -> str:
    """A command body that never ends and ignores SIGTERM (D state, as far as signals go);
    with `setsid_child`, its child sleeps in a session of its own (out of its group)."""
    flags = "--ignore-term --setsid-child" if setsid_child else "--ignore-term"
    return (
        f"exec {shlex.quote(sys.executable)} -I {shlex.quote(str(HANG))} {flags} "
        f'--pidfile {shlex.quote(str(pidfile))} "$@"'
    )


def write_smi(spec: NodeSpec, special: dict[str, str] | None = None, bundle: Path = BUNDLE) -> None:
    write_command(Path(spec.bin), "nvidia-smi", smi_script(bundle, special))


def make_node(tmp_path: Path, bundle: Path = BUNDLE) -> NodeSpec:
    """A healthy node: every command, NVML and sysfs answer as recorded."""
    root = tmp_path / "node"
    bin_dir = root / "bin"
    write_command(bin_dir, "nvidia-smi", smi_script(bundle))
    write_command(bin_dir, "dmesg", f"exec cat {shlex.quote(str(bundle / 'dmesg.txt'))}")
    write_command(bin_dir, "journalctl", f"exec cat {shlex.quote(str(bundle / 'dmesg.txt'))}")
    sys_root = root / "sys"
    shutil.copytree(bundle / "sysfs", sys_root)
    marker = root / "proc-driver-nvidia-version"
    marker.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04\n")
    state = root / "state"
    return NodeSpec(
        root=str(root),
        bin=str(bin_dir),
        sys_root=str(sys_root),
        marker=str(marker),
        log_files=[str(root / "no-kern.log")],
        state_dir=str(state),
    )


def hang_command(spec: NodeSpec, pidfile: Path, name: str = "nvidia-smi") -> None:
    """`name` hangs in "D state": it and its child ignore SIGTERM; only SIGKILL ends them."""
    write_command(Path(spec.bin), name, hang_body(pidfile))


def remove_command(spec: NodeSpec, name: str) -> None:
    (Path(spec.bin) / name).unlink()


# ---- installing it -------------------------------------------------------------------------


def install(spec: NodeSpec, patch: Patch) -> Any:
    """Point sitscheck's live sources at the node; returns the fake NVML (None when absent).

    `patch(obj, name, value)` is `monkeypatch.setattr` in a test, plain `setattr` in a process.
    """
    import sitscheck.app as app
    import sitscheck.sources.kernel_log as kernel_log
    import sitscheck.sources.live as live
    from fakes.fake_pynvml import ERROR_CODES, FakePynvml, load_recording
    from sitscheck.sources.command import CommandRunner
    from sitscheck.sources.live import LiveOptions, LiveSources
    from sitscheck.sources.nvml import Nvml, NvmlUnavailable

    fake: FakePynvml | None = None
    if spec.nvml.mode == "ok":
        recording = load_recording(spec.nvml.recording or BUNDLE / "nvml.json")
        fake = FakePynvml(recording, declared=_declared_calls())
        if spec.nvml.fail_init:
            fake.fail_init(ERROR_CODES[spec.nvml.fail_init], spec.nvml.init_words)
        for function, gpu in spec.nvml.block:
            fake.block(function, gpu)
        for gpu, start in spec.nvml.block_gpu:
            fake.block_gpu(gpu, from_call=start)
        for gpu, start in spec.nvml.lose_gpu:
            fake.lose_gpu(gpu, from_call=start)
        FAKES.append(fake)
    chosen = fake

    def load(cls: type[Nvml], deadline_s: float = 5.0) -> Nvml:
        if chosen is None:
            raise NvmlUnavailable(
                "pynvml cannot be imported: libnvidia-ml.so.1: cannot open shared object file",
                no_driver=False,
            )
        return cls(chosen, deadline_s)

    patch(Nvml, "load", classmethod(load))

    class NodeSources(LiveSources):
        """The live sources on the node (a LiveSources, as `accept --collect` checks)."""

        def __init__(self, options: LiveOptions, **declared: Any) -> None:
            node_options = structs.replace(
                options, driver_markers=(spec.marker,), sys_root=spec.sys_root
            )
            declared["workloads"] = [
                structs.replace(w, module=spec.workload_modules.get(w.phase, w.module))
                for w in declared.get("workloads", ())
            ]
            super().__init__(node_options, CommandRunner(path=spec.bin), **declared)

    patch(live, "LiveSources", NodeSources)  # what `app.live_sources` builds
    if spec.progress:
        selected = app.selected_checks
        patch(app, "selected_checks", lambda config: record_progress(selected(config), spec))
        patch(app, "load_rules", noted(app.load_rules, Path(spec.progress), RULES_LOADED))
    if spec.hold_rules:
        patch(app, "evaluate_rules", held(app.evaluate_rules, Path(spec.hold_rules)))
    patch(kernel_log, "KMSG", str(Path(spec.root) / "no-such-kmsg"))
    patch(kernel_log, "LOG_FILES", tuple(spec.log_files))
    if spec.kmsg == "eperm":

        def unreadable(path: str | None = None) -> Iterator[str]:
            raise PermissionError(errno.EPERM, "Operation not permitted")

        patch(kernel_log, "read_kmsg", unreadable)
    return fake


def _declared_calls() -> dict[str, str]:
    """The NVML calls the installed checks declare, each with the record key it is read into."""
    from sitscheck.contract.evidence import gather
    from sitscheck.contract.registry import discover

    return {read.function: read.key for read in gather(discover()).nvml_reads.values()}


# Short deadlines: each fault costs seconds, not the production defaults' tens of seconds.
FAST: dict[str, Any] = {
    "check_timeout_s": 4.0,
    "run_timeout_s": 6.0,
    "command_timeout_s": 1.0,
    "nvml_deadline_s": 0.5,
    "sample_seconds": 0.4,
}


def run_live(spec: NodeSpec, patch: Patch, **overrides: Any) -> tuple[Any, float]:
    """One live run (`app.execute`, rules included) on the node: (report, seconds it took)."""
    from sitscheck.app import RunRequest, execute

    install(spec, patch)
    config = run_config({**FAST, **overrides})
    began = time.monotonic()
    report = execute(RunRequest(config))
    return report, time.monotonic() - began


def wait_for(condition: Callable[[], object], within_s: float, what: str) -> None:
    wait_until(condition, what, within_s)


@dataclass
class Signalled:
    """A real process sent a signal once it was ready: how it ended, and how long after."""

    code: int
    stdout: str
    stderr: str
    took: float  # seconds from the signal to its exit


def signal_when_ready(
    argv: list[str],
    ready: Callable[[subprocess.Popen[str]], object],
    signum: int,
    what: str,
    then: Callable[[], object] | None = None,
    env: dict[str, str] | None = None,
) -> Signalled:
    """Start `argv` (with `env`, else this process's environment), wait (up to 30 s) until
    `ready(process)`, send `signum`, run `then`, and wait (up to 15 s) for the process to end;
    it is killed if it does not."""
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        wait_for(lambda: ready(process), 30.0, what)
        process.send_signal(signum)
        sent = time.monotonic()
        if then is not None:
            then()
        stdout, stderr = process.communicate(timeout=15)
        return Signalled(process.returncode, stdout, stderr, time.monotonic() - sent)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


@dataclass
class Invoked:
    code: int
    stdout: str
    stderr: str
    elapsed: float

    def report(self) -> dict[str, Any]:
        assert self.stdout.lstrip().startswith("{"), self.stdout + self.stderr
        data: dict[str, Any] = json.loads(self.stdout)
        return data


def invoke(*args: str, env: dict[str, str] | None = None) -> Invoked:
    """`sitscheck ARGS` in this process (typer's runner): exit code, stdout, stderr, seconds."""
    from sitscheck.cli import app
    from typer.testing import CliRunner

    began = time.monotonic()
    done = CliRunner().invoke(app, list(args), env=env)
    elapsed = time.monotonic() - began
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    return Invoked(done.exit_code, done.stdout, done.stderr, elapsed)


def refuse_writes(patch: Patch, state: Path, error: int, new_only: bool) -> None:
    """`os.open` for writing under `state` fails with `error` (for new files only, if asked)."""
    real_open: Opener = os.open

    def guarded(path: str | os.PathLike[str], flags: int, *args: int, **kwargs: int) -> int:
        writing = flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
        inside = Path(os.fspath(path)).resolve().is_relative_to(state.resolve())
        if writing and inside and (not new_only or flags & os.O_EXCL):
            raise OSError(error, os.strerror(error), os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    patch(os, "open", guarded)


class _Recorded:
    """A check that notes in the progress file when its collect has returned."""

    def __init__(self, check: Any, progress: Path) -> None:
        self._check = check
        self._progress = progress
        for name in ("name", "summary", "layer", "needs_gpu", "metrics"):
            setattr(self, name, getattr(check, name))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._check, name)  # its other declarations (evidence, codes, ...)

    def applicable(self, sources: Any, config: Any) -> str | None:
        reason: str | None = self._check.applicable(sources, config)
        return reason

    def collect(self, ctx: Any) -> Any:
        return noted(self._check.collect, self._progress, self._check.name)(ctx)


RULES_LOADED = "(rules)"


def noted(work: Callable[..., Any], progress: Path, name: str) -> Callable[..., Any]:
    """`work`, which appends `name` to the progress file once it has returned."""

    def work_then_note(*args: Any, **kwargs: Any) -> Any:
        value = work(*args, **kwargs)
        with progress.open("a", encoding="utf-8") as handle:
            handle.write(f"{name}\n")
        return value

    return work_then_note


def held(work: Callable[..., Any], hold: Path) -> Callable[..., Any]:
    """`work`, which first says it was reached (HOLD.reached) and waits for HOLD.go: a test
    acts at that exact point of the run (a signal once every check has finished)."""

    def wait_then_work(*args: Any, **kwargs: Any) -> Any:
        hold.with_suffix(".reached").touch()
        go = hold.with_suffix(".go")
        while not go.exists():
            time.sleep(0.01)
        return work(*args, **kwargs)

    return wait_then_work


def record_progress(checks: list[Any], spec: NodeSpec) -> list[Any]:
    from sitscheck.contract.registry import BrokenCheck

    progress = Path(spec.progress)
    return [c if isinstance(c, BrokenCheck) else _Recorded(c, progress) for c in checks]


def finished(spec: NodeSpec) -> set[str]:
    """The checks whose collect has returned so far (with `spec.progress` set)."""
    path = Path(spec.progress)
    return set(path.read_text(encoding="utf-8").split()) if path.exists() else set()


def main(argv: list[str]) -> int:
    """`python fault_node.py SPEC.json ARGS...`: `sitscheck ARGS...` on the fake node, started
    as the `sitscheck` entry point starts (signals held, a subreaper) before anything else."""
    from sitscheck.interrupt import own_process

    own_process()
    spec = NodeSpec.from_json(Path(argv[0]).read_text(encoding="utf-8"))
    install(spec, setattr)
    from sitscheck.cli import main as cli_main

    sys.argv = ["sitscheck", *argv[1:]]
    cli_main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
