"""`python -m sitscheck.probes.bandwidth [bandwidth] [--seconds S] [--mib N] [--samples N]`:
measure, print one JSON record on stdout.

It is the bandwidth check's workload (`WorkloadSpec`), run as every workload is
(`workloads.children`: `bandwidth --seconds S --engine E`; `--deadline-s` is the older name of
`--seconds`, and the copies are the driver API's whatever the engine). Its one line is its
result in the workload protocol (`sitscheck.probes.accept.child`): the record with
`"event": "result"` first, which the parent takes off (the record a bundle keeps is as before).

The process is disposable: SIGTERM stops the measuring between two samples, releases what was
allocated and prints what was measured (exit 143); an alarm set past the deadline ends a
process stuck inside the driver (SIGALRM's default action), and the parent's timeout kills
its process group in any case.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
from types import FrameType

from .cuda import CudaError, Driver
from .measure import MIB, Plan, Stop, measure, new_record

EXIT_SIGTERM = 128 + signal.SIGTERM


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m sitscheck.probes.bandwidth")
    parser.add_argument("phase", nargs="?", choices=("bandwidth",), default="bandwidth")
    parser.add_argument("--seconds", "--deadline-s", dest="deadline_s", type=float, default=10.0)
    parser.add_argument("--engine", default="auto", help="ignored: the copies are PTX's")
    parser.add_argument("--mib", type=int, default=256, help="bytes per copy, MiB")
    parser.add_argument("--samples", type=int, default=5)
    args = parser.parse_args(argv)
    began = time.monotonic()
    signal.signal(signal.SIGTERM, _stop)
    signal.alarm(math.ceil(args.deadline_s) + 5)
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    plan = Plan(
        deadline=began + args.deadline_s, nbytes=args.mib * MIB, samples=max(args.samples, 1)
    )
    record = new_record(plan)
    record["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    code = 0
    try:
        measure(Driver.load(), plan, record)
    except Stop as stop:
        record["stopped"] = str(stop)
        code = EXIT_SIGTERM if str(stop) == "SIGTERM" else 0
    except (CudaError, OSError, RuntimeError) as exc:
        record["errors"].append(str(exc))
    record["elapsed_s"] = round(time.monotonic() - began, 3)
    sys.stdout.write(json.dumps({"event": "result", **record}) + "\n")
    sys.stdout.flush()
    os._exit(code)  # no interpreter teardown: worker threads and the driver need no goodbye


def _stop(signum: int, frame: FrameType | None) -> None:
    raise Stop("SIGTERM")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
