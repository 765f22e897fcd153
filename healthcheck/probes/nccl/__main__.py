"""`python -I -m sitscheck.probes.nccl --rank R --world N --rendezvous FILE --seconds S
[--bytes B] [--inject hang]`: one rank of the multi-GPU phase's NCCL all-reduce.

It prints the JSON lines of `sitscheck.probes.accept.child`: ready, doing, figure, then its
result (`{"rank", "nccl": {...} | null, "nccl_reason": null | why, ...}`) or an error. A rank
that finds no NCCL to run (no PyTorch, no CUDA device, a PyTorch without NCCL) prints a result
whose `nccl` is null and says why: the NCCL part is then UNKNOWN, and nothing has failed. A
rank whose work failed prints an error (exit 1). FILE is where the ranks meet (a FileStore):
it must be in a folder of this user's alone (mode 0700), or the rank refuses it, for another
user could otherwise plant the file the ranks trust. SIGTERM/SIGINT end the rank between two
all-reduces without a result (exit 143); an alarm past the deadline ends one stuck inside NCCL,
and the parent kills its process group in any case.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import stat
import sys
from collections.abc import Callable

from ..accept.child import Channel
from .allreduce import DEFAULT_BYTES, Stopped, measure

ALARM_GRACE_S = 30
EXIT_STOPPED = 128 + signal.SIGTERM


def main(argv: list[str]) -> int:
    args = arguments(argv)
    channel = Channel()
    signal.alarm(math.ceil(args.seconds) + ALARM_GRACE_S)
    try:
        check_rendezvous(args.rendezvous)
        result = measure(channel, args.rank, args.world, args.rendezvous, args.seconds,
                         args.bytes, args.inject)  # fmt: skip
    except Stopped:
        return EXIT_STOPPED
    except (OSError, RuntimeError, ValueError) as exc:  # torch's errors are RuntimeErrors
        channel.send("error", reason=str(exc) or type(exc).__name__)
        return 1
    channel.send("result", **result)
    return 0


def arguments(argv: list[str]) -> argparse.Namespace:
    """The rank's options; a wrong one is argparse's usage error (exit 2)."""
    parser = argparse.ArgumentParser(prog="python -m sitscheck.probes.nccl")
    parser.add_argument("--rank", type=_whole(0), required=True, help="this rank, 0 .. N-1")
    parser.add_argument("--world", type=_whole(1), required=True, help="N: the ranks (GPUs)")
    parser.add_argument("--rendezvous", required=True, help="the FileStore the ranks meet at")
    parser.add_argument("--seconds", type=_seconds, required=True, help="the work's time")
    parser.add_argument("--bytes", type=_whole(1), default=DEFAULT_BYTES, help="message size")
    parser.add_argument("--inject", choices=("hang",), default=None, help="test-only faults")
    args = parser.parse_args(argv)
    if args.rank >= args.world:
        parser.error(f"--rank {args.rank}: the ranks of --world {args.world} are 0 .. "
                     f"{args.world - 1}")  # fmt: skip
    return args


def check_rendezvous(path: str) -> None:
    """Refuse (ValueError) a rendezvous file that is not in a folder of this user's alone."""
    if not os.path.isabs(path):
        raise ValueError(f"--rendezvous {path}: not an absolute path")
    folder = os.path.dirname(path)
    try:
        info = os.lstat(folder)
    except OSError as exc:
        raise ValueError(f"--rendezvous {path}: its folder: {exc.strerror}") from None
    mode = stat.S_IMODE(info.st_mode)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or mode & 0o077:
        raise ValueError(
            f"--rendezvous {path}: its folder must be a folder of this user's alone (0700), "
            f"not {'a folder' if stat.S_ISDIR(info.st_mode) else 'a link or file'} of uid "
            f"{info.st_uid} with mode {mode:04o}"
        )


def _whole(least: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if value < least:
            raise ValueError(text)
        return value

    parse.__name__ = f"integer >= {least}"  # argparse names the type in its message
    return parse


def _seconds(text: str) -> float:
    value = float(text)
    if not value > 0 or math.isinf(value):
        raise ValueError(text)
    return value


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))  # no NCCL/CUDA teardown: the process is disposable
