"""A stand-in for a rank of the multi-GPU phase (`sitscheck.probes.nccl`) in the phase's tests:
it reads its options and checks its rendezvous folder with the real rank's own code, says
what it was given (CUDA_VISIBLE_DEVICES, the NCCL, NVSHMEM and symmetric-memory variables, the
folder's mode, its options) and does what SITSCHECK_TEST_RANK_<rank> says (a SITSCHECK_
variable reaches every child): `ok` (the default: a healthy 8x H200's figure), `wrong`
(3 wrong sums), `no-nccl`, `fail`; with `--inject hang` it hangs. With
SITSCHECK_TEST_RANK_MARKS=DIR, a rank writes DIR/rank<R>.said once its last line is flushed
(a hung rank's `doing`, a healthy one's result): a test waits on the file, never on time."""

from __future__ import annotations

import os
import stat
import sys
import time

from sitscheck.probes.accept.child import Channel
from sitscheck.probes.nccl.__main__ import arguments, check_rendezvous

PASSED = ("NCCL_", "NVSHMEM_", "TORCH_SYMM_MEM_")
SECONDS_PER_OP = 0.0633  # 16 GiB at 271 GB/s algbw: 475 GB/s busbw over 8 ranks


def main() -> None:
    args = arguments(sys.argv[1:])
    check_rendezvous(args.rendezvous)
    channel = Channel()  # SIGTERM sets its flag: a hung rank lives on until SIGKILL
    how = os.environ.get(f"SITSCHECK_TEST_RANK_{args.rank}", "ok")
    channel.send("ready", engine="torch")
    channel.doing(f"nccl: all-reduce (pid {os.getpid()})")
    if args.inject == "hang":
        said(args.rank)
        while True:
            time.sleep(0.1)
    if how == "fail":
        channel.send("error", reason="NCCL error: unhandled cuda error (a test's)")
        os._exit(1)
    if how == "no-nccl":
        channel.send("result", rank=args.rank, nccl=None,
                     nccl_reason="PyTorch is not installed (a test's)")  # fmt: skip
        os._exit(0)
    folder = os.path.dirname(args.rendezvous)
    seen = {
        "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "passed": {k: v for k, v in os.environ.items() if k.startswith(PASSED)},
        "secret": "OTEL_EXPORTER_OTLP_HEADERS" in os.environ,
        "folder": folder,
        "folder_mode": stat.S_IMODE(os.stat(folder).st_mode),
        "args": sys.argv[1:],
    }
    alg = args.bytes / SECONDS_PER_OP / 1e9
    nccl = {"op": "all_reduce", "bytes": args.bytes, "dtype": "float32", "ranks": args.world,
            "iterations": 20, "seconds_per_op": SECONDS_PER_OP, "alg_gbs": round(alg, 1),
            "bus_gbs": round(alg * 2 * (args.world - 1) / args.world, 1),
            "nvls_disabled": os.environ.get("NCCL_NVLS_ENABLE") == "0",
            "nccl_version": "2.28.9"}  # fmt: skip
    channel.send("result", rank=args.rank, seconds_per_op=SECONDS_PER_OP,
                 wrong_elements=3 if how == "wrong" else 0,
                 expected_sum=args.world * (args.world + 1) / 2, nccl=nccl, nccl_reason=None,
                 seen=seen)  # fmt: skip
    said(args.rank)
    os._exit(0)


def said(rank: int) -> None:
    marks = os.environ.get("SITSCHECK_TEST_RANK_MARKS")
    if marks:
        with open(os.path.join(marks, f"rank{rank}.said"), "w"):
            pass


if __name__ == "__main__":
    main()
