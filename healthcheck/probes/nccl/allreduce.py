"""One rank's NCCL all-reduce: join the others, agree on the size, time it, check the sums.

Every collective here is made by every rank, in the same order and with the same sizes: what
the ranks must share (the message size, the number of timed all-reduces) is agreed by an
all-reduce that takes the smallest proposal, so no rank waits for a collective another never
makes.

- size: Azure NHC's 16 GiB (`all_reduce_perf -b 16G -e 16G`; the profiles' floors hold for
  it), or a quarter of the smallest free memory where that is less; float32, nccl-tests'
  default type. Where the warm-up, the timed all-reduces and the check would not fit in half
  the time left (estimated on PROBE_BYTES first), no figure is given, with the reason: a
  smaller message would read slower than the board is (a false alarm against the floors).
- time: WARMUP all-reduces, then MIN_ITERATIONS to MAX_ITERATIONS back to back, timed by the
  wall clock around them with the stream synchronised, as nccl-tests times them; the ranks'
  times are averaged (nccl-tests' default, `-a 1`).
- waiting: the ranks wait for each other (rendezvous, NCCL's communicator, each collective)
  past the phase's deadline, so the parent decides what stopped responding: a rank that never
  joins leaves the others waiting until they are all killed, never failing before it.
- check: each rank fills the buffer with rank + 1 and all-reduces it once more; every element
  must then read n(n+1)/2, a small integer and so exact in float32 (nccl-tests' `-c 1` checks
  its results too). A rank whose sums are wrong names its GPU.
"""

from __future__ import annotations

import inspect
import os
import signal
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from ..accept.child import Channel
from ..accept.gemm import torch_available
from . import STARTING

MIB = 1 << 20
GIB = 1 << 30
DEFAULT_BYTES = 16 * GIB
PROBE_BYTES = 64 * MIB
WAIT_GRACE_S = 60.0  # the ranks' timeouts run this far past their time: the parent kills first
FREE_SHARE = 4  # the buffer takes at most 1/FREE_SHARE of a GPU's free memory
ELEMENT_BYTES = 4  # float32
WARMUP = 2
MIN_ITERATIONS = 3
MAX_ITERATIONS = 20
TIMED_SHARE = 0.5  # of the time left: for the timed all-reduces (the rest: warm-up, check)


class Stopped(Exception):
    """SIGTERM or SIGINT came: the rank ends without a result (the parent says interrupted)."""


def nccl_unavailable(world: int) -> str | None:
    """None when this process can run NCCL's all-reduce over `world` GPUs, else why not."""
    why = torch_available()
    if why is not None:
        return f"{why} (NCCL's all-reduce runs through PyTorch's torch.distributed)"
    import torch

    count = torch.cuda.device_count()
    if count < world:
        return f"PyTorch sees {count} CUDA device(s) of the phase's {world}"
    try:
        import torch.distributed as dist
    except ImportError as exc:
        return f"PyTorch {torch.__version__} has no torch.distributed ({exc})"
    if not dist.is_available() or not dist.is_nccl_available():
        return f"PyTorch {torch.__version__} has no NCCL (torch.distributed's nccl backend)"
    return None


def nvls_disabled(environ: Mapping[str, str]) -> bool:
    """Whether NVLink SHARP was switched off (NCCL_NVLS_ENABLE=0). NCCL's all-reduce then runs
    over rings: about 370 GB/s bus bandwidth on 8 H100/H200 where NVLS reaches about 480."""
    try:
        return int(environ.get("NCCL_NVLS_ENABLE", "").strip()) == 0
    except ValueError:
        return False


def measure(
    channel: Channel,
    rank: int,
    world: int,
    rendezvous: str,
    seconds: float,
    nbytes: int,
    inject: str | None = None,
) -> dict[str, Any]:
    """This rank's result: its own time and check, and the ranks' shared figure (`nccl`), or
    `nccl` null with `nccl_reason` where NCCL cannot run here. `inject` "hang": the rank
    never joins (test-only: the others wait for it until the phase's deadline)."""
    deadline = time.monotonic() + seconds
    channel.doing(STARTING)
    why = nccl_unavailable(world)
    if why is not None:
        return {"rank": rank, "nccl": None, "nccl_reason": why}
    worker = _Rank(channel, rank, world)
    if inject == "hang":
        channel.send("ready", engine="torch")
        channel.doing("nccl: a rank that never joins (test-only --inject hang)")
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGALRM})
        signal.pause()
    return worker.run(rendezvous, seconds, nbytes, deadline)


class _Rank:
    def __init__(self, channel: Channel, rank: int, world: int) -> None:
        import torch
        import torch.distributed as dist

        self.torch, self.dist = torch, dist
        self.channel, self.rank, self.world = channel, rank, world
        self.device = torch.device("cuda", rank)
        torch.cuda.set_device(self.device)

    def run(self, rendezvous: str, seconds: float, wanted: int, deadline: float) -> dict[str, Any]:
        self.channel.send("ready", engine="torch")
        self.channel.doing(f"nccl: joining {self.world} ranks")
        self._join(rendezvous, seconds)
        self.channel.doing("nccl: first all-reduce (connecting the ranks)")
        nbytes, short = self._size(wanted, deadline)
        if short is not None:
            return {"rank": self.rank, "nccl": None, "nccl_reason": short}
        buffer = self.torch.zeros(
            nbytes // ELEMENT_BYTES, dtype=self.torch.float32, device=self.device
        )
        self.channel.doing(f"nccl: all-reduce warm-up, {nbytes} bytes")
        one = self._timed(buffer, WARMUP)
        fits = int(max(deadline - time.monotonic(), 0.0) * TIMED_SHARE / one)
        iterations = int(self._agreed_min(min(max(fits, MIN_ITERATIONS), MAX_ITERATIONS)))
        self.channel.doing(f"nccl: all-reduce, {iterations} timed of {nbytes} bytes")
        own = self._timed(buffer, iterations)
        per_op = self._mean(own)
        self.channel.doing("nccl: all-reduce, checking the sums")
        wrong, expected = self._wrong_elements(buffer)
        alg_gbs = nbytes / per_op / 1e9
        bus_gbs = alg_gbs * 2 * (self.world - 1) / self.world
        self.channel.send("figure", value=round(bus_gbs, 1), unit="GB/s")
        nccl = {
            "op": "all_reduce",
            "bytes": nbytes,
            "dtype": "float32",
            "ranks": self.world,
            "iterations": iterations,
            "seconds_per_op": round(per_op, 6),
            "alg_gbs": round(alg_gbs, 1),
            "bus_gbs": round(bus_gbs, 1),
            "nvls_disabled": nvls_disabled(os.environ),
            "nccl_version": self._nccl_version(),
        }
        return {
            "rank": self.rank,
            "seconds_per_op": round(own, 6),
            "wrong_elements": wrong,
            "expected_sum": expected,
            "nccl": nccl,
            "nccl_reason": None,
        }

    def _join(self, rendezvous: str, seconds: float) -> None:
        dist = self.dist
        store = dist.FileStore(rendezvous, self.world)
        options: dict[str, Any] = {"timeout": timedelta(seconds=seconds + WAIT_GRACE_S)}
        if "device_id" in inspect.signature(dist.init_process_group).parameters:
            options["device_id"] = self.device  # PyTorch 2.3 on: the communicator made now
        dist.init_process_group(
            "nccl", store=store, rank=self.rank, world_size=self.world, **options
        )

    def _size(self, wanted: int, deadline: float) -> tuple[int, str | None]:
        """The message every rank holds (the smallest of the ranks' proposals, in whole float32
        elements), or why there is no time to time it."""
        torch = self.torch
        free, _total = torch.cuda.mem_get_info(self.device)
        probe = torch.zeros(PROBE_BYTES // ELEMENT_BYTES, dtype=torch.float32, device=self.device)
        self._timed(probe, 1)  # the first all-reduce connects the ranks: not timed
        per_byte = self._timed(probe, WARMUP) / PROBE_BYTES
        del probe
        held = int(self._agreed_min(min(wanted, free // FREE_SHARE)))
        left = max(deadline - time.monotonic(), 0.0)
        ops = WARMUP + MIN_ITERATIONS + 1
        fits = self._agreed_min(left * TIMED_SHARE / ops / per_byte)  # bytes, every rank's
        if fits < held:
            need = held * per_byte * ops / TIMED_SHARE
            return 0, (
                f"too little time left to time a {held}-byte all-reduce: {left:.1f} s after "
                f"start-up, about {need:.1f} s needed (give `accept` a larger --budget)"
            )
        return held - held % ELEMENT_BYTES, None

    def _timed(self, buffer: Any, iterations: int) -> float:
        """Seconds per all-reduce of `buffer`, `iterations` back to back (the ranks lined up
        first by a one-element all-reduce)."""
        if self.channel.stop.is_set():
            raise Stopped
        self._agreed_min(0.0)
        self.torch.cuda.synchronize(self.device)
        began = time.perf_counter()
        for _ in range(iterations):
            self.dist.all_reduce(buffer)
        self.torch.cuda.synchronize(self.device)
        return (time.perf_counter() - began) / iterations

    def _agreed_min(self, value: float) -> float:
        return self._reduced(value, self.dist.ReduceOp.MIN)

    def _mean(self, value: float) -> float:
        return self._reduced(value, self.dist.ReduceOp.SUM) / self.world

    def _reduced(self, value: float, op: Any) -> float:
        tensor = self.torch.tensor([float(value)], dtype=self.torch.float64, device=self.device)
        self.dist.all_reduce(tensor, op=op)
        return float(tensor.item())

    def _wrong_elements(self, buffer: Any) -> tuple[int, float]:
        """How many elements of a checked all-reduce read other than n(n+1)/2, and that sum."""
        expected = self.world * (self.world + 1) / 2
        buffer.fill_(float(self.rank + 1))
        self.dist.all_reduce(buffer)
        wrong = self.torch.count_nonzero(buffer.ne_(expected))  # in place: no second buffer
        return int(wrong.item()), expected

    def _nccl_version(self) -> str | None:
        try:
            version = self.torch.cuda.nccl.version()
        except (AttributeError, RuntimeError):
            return None
        return ".".join(str(v) for v in version) if isinstance(version, tuple) else str(version)
