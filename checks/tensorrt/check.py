"""The `tensorrt` check: TensorRT build logs (and the optional probe) → facts and findings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sitscheck.contract import EvidenceSpec, LazyCheck, LogFilesSpec, MetricSpec, ProfileKey
from sitscheck.contract.declarations import resolve
from sitscheck.status import Layer

if TYPE_CHECKING:
    from .probe import Spawn


# build logs named by --trt-log / config `trt_logs`, recorded under tensorrt/ of a bundle
TRT_LOGS = LogFilesSpec("tensorrt", "trt_logs")


class TensorrtCheck(LazyCheck):
    name = "tensorrt"
    summary = (
        "TensorRT build logs: engine built for another GPU, fallbacks, precision downgrades, "
        "failed builds; --trt-probe builds on each GPU"
    )
    layer = Layer.RUNTIME
    needs_gpu = False
    metrics = (
        MetricSpec("sitscheck.trt.logs", "{log}", "TensorRT logs read"),
        MetricSpec("sitscheck.trt.fallbacks", "{fallback}", "fallbacks to a slower path"),
        MetricSpec(
            "sitscheck.trt.precision_fallbacks", "{layer}", "layers kept at a higher precision"
        ),
        MetricSpec("sitscheck.trt.errors", "{error}", "error messages in TensorRT logs"),
    )

    codes = "sitscheck.checks.tensorrt.codes:CODES"
    facts = "sitscheck.checks.tensorrt.facts:Facts"
    profile_keys = (
        ProfileKey("sm", "string", "SM architecture engines for this GPU are built for (sm_90)"),
    )
    evidence = EvidenceSpec(
        summary=(
            "TensorRT build logs (bundle tensorrt/*.log, --trt-log): layers, fusions, fallbacks, "
            "precision fallbacks, errors, the GPU the engine was built for; the optional probe "
            "build"
        ),
        logs=(TRT_LOGS,),
    )
    impl = "sitscheck.checks.tensorrt.impl:TensorrtImpl"

    def __init__(self, spawn: Spawn | None = None) -> None:
        self._spawn = spawn  # how the probe starts its per-GPU builds (tests inject one)

    def _target(self) -> Any:
        """The work (`impl`, found by name as every lazy check's is: the declaration imports
        none of it, and the work reads the declaration's `TRT_LOGS`), given the probe's spawn."""
        return resolve(self.impl)(self._spawn)
