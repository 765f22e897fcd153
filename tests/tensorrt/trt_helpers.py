"""Shared pieces of the tensorrt check's tests: bundles in tmp dirs, running the check, and a
fake `tensorrt` module (one source text, used in-process and as a package for child processes).
"""

from __future__ import annotations

import shutil
import time
import types
from pathlib import Path
from typing import Any

from sitscheck.checks.tensorrt.check import TensorrtCheck
from sitscheck.checks.tensorrt.probe import Spawn
from sitscheck.config import RunConfig
from sitscheck.contract import CheckContext, CheckOutput
from sitscheck.sources.replay import ReplaySources

TESTS = Path(__file__).resolve().parent.parent
H200_BUNDLE = TESTS / "bundles" / "h200x2-idle-v0"
H200_GPUS = [
    (0, "0000:00:06.0", "NVIDIA H200"),
    (1, "0000:00:07.0", "NVIDIA H200"),
]

# The seed's worked example (quick-check.md), verbatim.
SEED_EXAMPLE = (
    "[INFO] Builder completed with 128 layers, fused 42 conv-bn-relu patterns.\n"
    "[WARNING] Layer conv3x3_2: fallback to cuBLASLt due to unsupported dilation=2 on SM_86.\n"
    "[INFO] Engine built for GPU 0 (A100-PCIE-40GB), maxWorkspaceSize=268435456\n"
)
SEED_FALLBACK = "Layer conv3x3_2: fallback to cuBLASLt due to unsupported dilation=2 on SM_86."

# A trtexec build on an H200 that passed: nothing to find.
H200_BUILD = (
    "&&&& RUNNING TensorRT.trtexec [TensorRT v100800] # trtexec --onnx=model.onnx --fp16\n"
    "[08/29/2024-10:12:01] [I] === Device Information ===\n"
    "[08/29/2024-10:12:01] [I] Selected Device: NVIDIA H200\n"
    "[08/29/2024-10:12:01] [I] Compute Capability: 9.0\n"
    "[08/29/2024-10:12:09] [I] Engine built in 8.25 sec.\n"
    "&&&& PASSED TensorRT.trtexec [TensorRT v100800] # trtexec --onnx=model.onnx --fp16\n"
)

# A build that failed (corpus 014's shape, shortened).
FAILED_BUILD = (
    "[08/29/2024-10:12:01] [TRT] [E] 10: Could not find any implementation for node "
    "{ForeignNode[/layers.7/Reshape_4]}.\n"
    "[08/29/2024-10:12:01] [TRT] [E] Build serialized network failed.\n"
)


def make_bundle(root: Path, logs: dict[str, str | bytes]) -> Path:
    """The recorded 2xH200 bundle, copied, with `logs` written under its tensorrt/."""
    bundle = root / "bundle"
    shutil.copytree(H200_BUNDLE, bundle)
    for name, content in logs.items():
        target = bundle / "tensorrt" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return bundle


class LiveLikeSources(ReplaySources):
    """A bundle served as if it were the live node (the probe runs only live)."""

    @property
    def mode(self) -> str:
        return "live"


def collect(
    sources: ReplaySources,
    config: RunConfig | None = None,
    spawn: Spawn | None = None,
    deadline_s: float = 60.0,
) -> CheckOutput:
    ctx = CheckContext(sources, config or RunConfig(), time.monotonic() + deadline_s)
    return TensorrtCheck(spawn=spawn).collect(ctx)


def codes(output: CheckOutput) -> list[tuple[str, str, int | None]]:
    """(code, severity, GPU index) of every finding, in order."""
    return [
        (f.code, f.severity.value, f.device.index if f.device else None) for f in output.findings
    ]


# --------------------------------------------------------------------------- fake tensorrt

# Behaviour is picked by SITSCHECK_FAKE_TRT_MODE: ok (default), fail (no plan), raise,
# hang (logs, then sleeps). Every message goes through the ILogger the caller hands to Builder.
FAKE_TRT_SOURCE = """
import os
import time

__version__ = "10.8.0.43"
created = {}  # what the last build asked for, for the tests


class _Severity:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "Severity." + self.name


class ILogger:
    class Severity:
        INTERNAL_ERROR = _Severity("INTERNAL_ERROR")
        ERROR = _Severity("ERROR")
        WARNING = _Severity("WARNING")
        INFO = _Severity("INFO")
        VERBOSE = _Severity("VERBOSE")

    def __init__(self):
        self.initialised = True

    def log(self, severity, msg):
        raise NotImplementedError


class NetworkDefinitionCreationFlag:
    EXPLICIT_BATCH = 0


class ActivationType:
    RELU = "relu"


class MemoryPoolType:
    WORKSPACE = "workspace"


float32 = "float32"


class _Tensor:
    def __init__(self, name):
        self.name = name


class _Layer:
    def __init__(self, source):
        self.name = None
        self.source = source

    def get_output(self, index):
        return _Tensor(f"{self.name}_out{index}")


class _Network:
    def __init__(self, flags):
        self.flags = flags
        self.layers = []
        self.outputs = []

    def add_input(self, name, dtype, shape):
        return _Tensor(name)

    def add_activation(self, source, kind):
        layer = _Layer(source)
        self.layers.append((kind, layer))
        return layer

    def mark_output(self, tensor):
        self.outputs.append(tensor)


class _Config:
    def __init__(self):
        self.pools = {}

    def set_memory_pool_limit(self, pool, size):
        self.pools[pool] = size


class _Plan:
    nbytes = 4242


class Builder:
    def __init__(self, logger):
        assert getattr(logger, "initialised", False), "ILogger.__init__ was not called"
        self.logger = logger

    def create_network(self, flags):
        created["flags"] = flags
        return _Network(flags)

    def create_builder_config(self):
        return _Config()

    def build_serialized_network(self, network, config):
        log, sev = self.logger.log, ILogger.Severity
        mode = os.environ.get("SITSCHECK_FAKE_TRT_MODE", "ok")
        log(sev.INFO, "[MemUsageChange] Init CUDA: CPU +2, GPU +0, now: CPU 24, GPU 537 (MiB)")
        log(sev.VERBOSE, "verbose chatter the probe leaves out")
        if mode == "hang":
            time.sleep(60)
        if mode == "raise":
            raise RuntimeError("CUDA initialization failure with error: 999")
        (kind, layer), = network.layers
        assert kind == ActivationType.RELU and network.outputs and config.pools
        log(sev.WARNING, "Layer " + layer.name + ": fallback to cuBLASLt due to unsupported"
            " dilation=2 on SM_90.")
        log(sev.WARNING, "Some tactics do not have sufficient workspace memory to run.\\n"
            "Increasing workspace size will enable more tactics, please check verbose output.")
        if mode == "fail":
            log(sev.ERROR, "10: Could not find any implementation for node probe_relu.")
            return None
        return _Plan()
"""


def fake_tensorrt() -> types.ModuleType:
    """The fake as a module object (for `sys.modules["tensorrt"]`)."""
    module = types.ModuleType("tensorrt")
    exec(compile(FAKE_TRT_SOURCE, "<fake tensorrt>", "exec"), module.__dict__)
    return module


def write_fake_package(folder: Path) -> Path:
    """The fake as an importable package under `folder` (put `folder` on PYTHONPATH)."""
    package = folder / "tensorrt"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(FAKE_TRT_SOURCE, encoding="utf-8")
    return folder


def fact_subset(fact: dict[str, Any], keys: set[str]) -> dict[str, Any]:
    return {key: fact[key] for key in keys}
