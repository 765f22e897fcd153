"""`python -I -m sitscheck.probes.accept PHASE --seconds S [--engine E] [--inject FAULT]`

One acceptance workload on the one GPU this process sees (the parent sets CUDA_VISIBLE_DEVICES
to its UUID). Prints JSON lines (`child`); SIGTERM/SIGINT stop it between two kernels, and it
frees what it allocated. An alarm past the deadline ends a process stuck inside the driver,
and the parent kills its process group in any case.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys

from ..bandwidth.cuda import CudaError, Driver
from .child import Channel
from .compute import run_compute, run_soak
from .gemm import open_gemm, torch_available
from .kernels import Kernels
from .memtest import run_memtest

PHASES = ("memtest", "compute", "soak")
INJECTIONS = ("memtest-word", "compute-bitflip", "hang")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m sitscheck.probes.accept")
    parser.add_argument("phase", choices=PHASES)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--engine", choices=("auto", "torch", "ptx"), default="auto")
    parser.add_argument("--size", type=int, default=8192, help="the GEMM's n (m = n = k)")
    parser.add_argument("--fraction", type=float, default=0.92, help="memtest: of free memory")
    parser.add_argument("--expect-digest", default=None, help="soak: the compute phase's digest")
    parser.add_argument("--inject", choices=INJECTIONS, default=None, help="test-only faults")
    args = parser.parse_args(argv)
    channel = Channel()
    signal.alarm(math.ceil(args.seconds) + 30)
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    try:
        result = _run(channel, args)
    except (CudaError, OSError, RuntimeError, ValueError) as exc:
        channel.send("error", reason=str(exc))
        os._exit(1)
    if channel.stopped_by:
        result["stopped_by"] = channel.stopped_by
    channel.send("result", **result)
    os._exit(0)  # no CUDA/PyTorch teardown: the process is disposable


def _run(channel: Channel, args: argparse.Namespace) -> dict[str, object]:
    driver = Driver.load()
    driver.init()
    kernels = Kernels(driver, 0)
    if args.inject == "hang":
        channel.send("ready", engine="ptx")
        channel.doing(f"{args.phase}: a kernel that never returns (test-only --inject hang)")
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGALRM})
        signal.pause()
    if args.phase == "memtest":
        return run_memtest(channel, driver, kernels, args.seconds, args.fraction, args.inject)
    engine = args.engine
    if engine == "auto":
        engine = "torch" if torch_available() is None else "ptx"
    elif engine == "torch" and (why := torch_available()) is not None:
        raise RuntimeError(f"--engine torch: {why}")
    gemm = open_gemm(engine, driver, kernels, args.size)
    try:
        if args.phase == "compute":
            record = run_compute(channel, gemm, args.seconds, args.inject)
        else:
            expect = int(args.expect_digest, 16) if args.expect_digest else None
            record = run_soak(channel, gemm, args.seconds, expect)
    finally:
        gemm.close()
    return {"engine": gemm.engine, **record}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
