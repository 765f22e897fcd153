"""``--trt-probe``: prove that TensorRT can build an engine on each of this node's GPUs.

Each GPU gets its own child process (``sitscheck.checks.tensorrt.probe`` in an isolated
interpreter, ``child_python``) that sees only that GPU (``CUDA_VISIBLE_DEVICES`` = its UUID,
else its index in PCI bus order, as NVML numbers GPUs). The child builds a one-input,
one-ReLU network through the TensorRT Python API with a ``trt.ILogger`` subclass that prints
each message in trtexec's form (``[date] [W] [TRT] text``; continuation lines unprefixed) and
ends with ``&&&& PASSED`` or ``&&&& FAILED``, so its output is a TensorRT log that
``scan_trt_log`` reads like any other. The children run concurrently under one deadline; one
that overruns is killed with its process group and its partial log kept.

``tensorrt`` is imported only in the child (and by ``build_engine`` when called in-process);
without the ``tensorrt`` extra the probe does not run and says why.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from msgspec import Struct
from sitscheck.gpu.identity import GpuRef
from sitscheck.sources import child_python
from sitscheck.sources.command import CommandResult
from sitscheck.threads import CannotStart, start_daemon

from .parse import TrtLog, scan_trt_log

__all__ = [
    "EXIT_BUILT",
    "EXIT_FAILED",
    "EXIT_NO_TENSORRT",
    "NOT_INSTALLED",
    "GpuProbe",
    "ProbeOutcome",
    "Spawn",
    "build_engine",
    "format_message",
    "main",
    "make_logger",
    "run_probe",
    "tensorrt_missing",
]

NOT_INSTALLED = "tensorrt is not installed (pip install sitscheck[tensorrt])"
EXIT_BUILT = 0
EXIT_FAILED = 1
EXIT_NO_TENSORRT = 3
PASSED_LINE = "&&&& PASSED sitscheck.trt_probe"
FAILED_LINE = "&&&& FAILED sitscheck.trt_probe"
CHILD_MODULE = "sitscheck.checks.tensorrt.probe"
OUTPUT_CAP = 4 * 1024 * 1024
WORKSPACE_BYTES = 1 << 26
_LETTERS = {"INTERNAL_ERROR": "F", "ERROR": "E", "WARNING": "W", "INFO": "I", "VERBOSE": "V"}

Emit = Callable[[str], None]
Spawn = Callable[[str, Mapping[str, str], float], CommandResult]
"""Runs the child: (its module, extra environment, timeout in seconds) -> its result."""


# --------------------------------------------------------------------------- the child side


def tensorrt_missing() -> str | None:
    """None when ``import tensorrt`` can work here; otherwise why not. Does not import it."""
    if "tensorrt" in sys.modules:
        return None if sys.modules["tensorrt"] is not None else NOT_INSTALLED
    try:
        spec = importlib.util.find_spec("tensorrt")
    except (ImportError, ValueError):
        spec = None
    return None if spec is not None else NOT_INSTALLED


def format_message(letter: str, text: str, stamp: str) -> list[str]:
    """One logger message as trtexec prints it: the first line tagged, the rest as they are."""
    lines = text.splitlines() or [""]
    return [f"[{stamp}] [{letter}] [TRT] {lines[0]}", *lines[1:]]


def _stamp() -> str:
    return time.strftime("%m/%d/%Y-%H:%M:%S")


def _letter(severity: Any) -> str:
    name = getattr(severity, "name", None) or str(severity).rsplit(".", 1)[-1]
    return _LETTERS.get(str(name).upper(), "I")


def make_logger(trt: Any, emit: Emit, *, verbose: bool = False) -> Any:
    """A ``trt.ILogger`` that hands every message (VERBOSE only when asked) to ``emit`` as
    trtexec-style lines."""

    class _Logger(trt.ILogger):  # type: ignore[misc]
        def __init__(self) -> None:
            trt.ILogger.__init__(self)

        def log(self, severity: Any, msg: str) -> None:
            letter = _letter(severity)
            if letter == "V" and not verbose:
                return
            for line in format_message(letter, str(msg), _stamp()):
                emit(line)

    return _Logger()


def _say(emit: Emit, letter: str, text: str) -> None:
    for line in format_message(letter, text, _stamp()):
        emit(line)


def build_engine(trt: Any, emit: Emit) -> bool:
    """Build a one-ReLU network on the current CUDA device; True when a plan came out.

    Every TensorRT message goes through ``emit``; so do this function's own notes.
    """
    version = str(getattr(trt, "__version__", "") or "")
    if version:
        _say(emit, "I", f"TensorRT version: {version}")
    logger = make_logger(trt, emit)
    builder = trt.Builder(logger)
    flags = 0
    major = version.split(".", 1)[0]
    if major.isdigit() and int(major) < 10:  # TRT 10 is always explicit batch (flag deprecated)
        flags = 1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)
    network = builder.create_network(flags)
    source = network.add_input("probe_input", trt.float32, (1, 64))
    relu = network.add_activation(source, trt.ActivationType.RELU)
    relu.name = "probe_relu"
    network.mark_output(relu.get_output(0))
    config = builder.create_builder_config()
    if hasattr(config, "set_memory_pool_limit"):
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, WORKSPACE_BYTES)
    plan = builder.build_serialized_network(network, config)
    size = int(getattr(plan, "nbytes", 0) or 0) if plan is not None else 0
    if size <= 0:
        _say(emit, "E", "Build serialized network failed.")
        return False
    _say(emit, "I", f"Engine built: {size} bytes")
    return True


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """The child: build on the one GPU this process sees, print the log, exit 0 when built."""
    del argv  # the GPU is chosen by the parent through CUDA_VISIBLE_DEVICES
    stream = out if out is not None else sys.stdout

    def emit(line: str) -> None:
        stream.write(line + "\n")
        stream.flush()  # a child killed at the deadline still leaves its log so far

    try:
        trt = importlib.import_module("tensorrt")
    except Exception as exc:  # a broken install raises more than ImportError
        print(f"tensorrt could not be imported: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_NO_TENSORRT
    try:
        built = build_engine(trt, emit)
    except Exception as exc:
        _say(emit, "E", f"TensorRT probe failed: {type(exc).__name__}: {exc}")
        built = False
    emit(PASSED_LINE if built else FAILED_LINE)
    return EXIT_BUILT if built else EXIT_FAILED


# --------------------------------------------------------------------------- the parent side


class GpuProbe(Struct, frozen=True):
    """One GPU's probe build. ``status``: built, failed, timed_out or not_run."""

    index: int
    pci_bus_id: str | None
    name: str | None
    status: str
    reason: str | None
    duration_s: float
    log: TrtLog

    def to_fact(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "pci_bus_id": self.pci_bus_id,
            "name": self.name,
            "status": self.status,
            "reason": self.reason,
            "duration_s": round(self.duration_s, 3),
            "log": self.log.to_fact(),
        }


class ProbeOutcome(Struct, frozen=True):
    """The probe as a whole: it ran (one entry per GPU), or why it did not."""

    ran: bool
    reason: str | None
    gpus: tuple[GpuProbe, ...] = ()

    def to_fact(self) -> dict[str, Any]:
        return {
            "status": "ran" if self.ran else "skipped",
            "reason": self.reason,
            "gpus": [gpu.to_fact() for gpu in self.gpus],
        }


def _default_spawn(module: str, env: Mapping[str, str], timeout: float) -> CommandResult:
    return child_python.run(module, (), timeout, env=env, output_cap=OUTPUT_CAP)


def child_env(gpu: GpuRef, uuid: str | None) -> dict[str, str]:
    """The environment that shows the child only ``gpu``."""
    return {
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "CUDA_VISIBLE_DEVICES": uuid or str(gpu.index),
    }


def _no_build(gpu: GpuRef, status: str, reason: str, duration_s: float = 0.0) -> GpuProbe:
    """A GPU's probe that built nothing and printed nothing: why, and after how long."""
    empty = scan_trt_log((), f"probe/gpu{gpu.index}")
    return GpuProbe(gpu.index, gpu.pci_bus_id, gpu.name, status, reason, duration_s, empty)


def _interpret(gpu: GpuRef, result: CommandResult, timeout: float) -> GpuProbe:
    log = scan_trt_log(result.stdout.splitlines(), f"probe/gpu{gpu.index}")
    status, reason = "failed", None
    if result.error is not None:
        status, reason = "not_run", f"the probe could not start: {result.error}"
    elif result.timed_out:
        status, reason = "timed_out", f"no engine within {timeout:.1f}s (killed)"
    elif result.returncode == EXIT_NO_TENSORRT:
        tail = (result.stderr.strip().splitlines() or [NOT_INSTALLED])[-1]
        status, reason = "not_run", tail[:300]
    elif result.returncode == EXIT_BUILT and PASSED_LINE in result.stdout:
        status = "built"
    else:
        errors = [e for e in log.errors if not e.startswith("&&&& FAILED")]
        first = (errors[0].splitlines() or [""])[0] if errors else None
        tail = (result.stderr.strip().splitlines() or [""])[-1]
        reason = (first or tail or f"exited {result.returncode}")[:300]
    return GpuProbe(gpu.index, gpu.pci_bus_id, gpu.name, status, reason, result.duration_s, log)


def run_probe(
    gpus: Sequence[GpuRef],
    timeout_s: float,
    *,
    uuids: Mapping[int, str] | None = None,
    spawn: Spawn | None = None,
) -> ProbeOutcome:
    """Build on every GPU at once, each child killed after ``timeout_s``."""
    missing = tensorrt_missing()
    if missing is not None:
        return ProbeOutcome(False, missing)
    if not gpus:
        return ProbeOutcome(False, "no GPU is known on this node to build on")
    run = spawn or _default_spawn
    results: dict[int, GpuProbe] = {}
    lock = threading.Lock()

    def one(gpu: GpuRef) -> None:
        env = child_env(gpu, (uuids or {}).get(gpu.index))
        outcome = _interpret(gpu, run(CHILD_MODULE, env, timeout_s), timeout_s)
        with lock:
            results[gpu.index] = outcome

    workers = []
    for gpu in gpus:
        try:
            workers.append(start_daemon(one, gpu, name=f"trt-probe-{gpu.index}"))
        except CannotStart as exc:  # that GPU's build is not run, and says why
            with lock:
                results[gpu.index] = _no_build(gpu, "not_run", f"the probe could not start: {exc}")
    deadline = time.monotonic() + timeout_s + 5.0  # the runner kills; this only bounds waiting
    for worker in workers:
        worker.join(timeout=max(deadline - time.monotonic(), 0.0))
    with lock:
        done = dict(results)
    unreaped = "the probe's process could not be reaped in time"
    probes = tuple(
        done.get(gpu.index) or _no_build(gpu, "timed_out", unreaped, timeout_s) for gpu in gpus
    )
    return ProbeOutcome(True, None, probes)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
