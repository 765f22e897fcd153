"""NVML sampling of all GPUs in parallel vs one GPU (needs a live NVIDIA driver).

`python -m benchmarks.nvml_parallel [WINDOW_S]`: collects the snapshot (inventory + a
WINDOW_S sampling window) of 1 GPU, then of all GPUs, and prints the wall time of each and
the overshoot beyond the window: an N-GPU node must take no longer than a 1-GPU node, beyond
a few ms per GPU.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from sitscheck.sources.gpu_snapshot import collect_snapshot
from sitscheck.sources.nvml import Nvml


class _OnlyFirst:
    """The pynvml module, reporting one GPU."""

    def __init__(self, lib: Any) -> None:
        self._lib = lib

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lib, name)

    def nvmlDeviceGetCount(self) -> int:
        return 1


def timed(lib: Any, window: float) -> tuple[float, int]:
    nvml = Nvml(lib)
    nvml.init()
    started = time.perf_counter()
    snapshot = collect_snapshot(nvml, window)
    elapsed = time.perf_counter() - started
    nvml.shutdown()
    print(f"  {len(snapshot['gpus'])} GPU(s): phases {snapshot.get('phases')}")
    return elapsed, len(snapshot["gpus"])


def main(argv: list[str]) -> int:
    import pynvml

    window = float(argv[0]) if argv else 3.0
    one, _ = timed(_OnlyFirst(pynvml), window)
    full, count = timed(pynvml, window)
    per_gpu_ms = (full - one) * 1000 / max(count - 1, 1)
    print(
        f"window {window:.1f} s: 1 GPU {one:.3f} s (overshoot {one - window:.3f} s); "
        f"{count} GPUs {full:.3f} s (overshoot {full - window:.3f} s); "
        f"extra per added GPU {per_gpu_ms:.1f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
