"""The memory-test child's timing on a stand-in driver (no GPU here): its `seconds` are the
test's own, not the allocation's or the release's, so the throughput the straggler rules
compare (bytes × passes / seconds) is the patterns' speed. A clock that moves only when the
stand-ins say keeps it exact."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest
from sitscheck.probes.accept import memtest
from sitscheck.probes.accept.kernels import BadWords

GIB = 1 << 30


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


class Driver:
    """What run_memtest asks of the CUDA driver: 140 GiB free; allocating the buffer takes
    3 s and releasing it 2 s (a slow driver's, on the test clock)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def memory_info(self) -> tuple[int, int]:
        return 140 * GIB, 141 * GIB

    def alloc(self, nbytes: int) -> int:
        self.clock.now += 3.0 if nbytes > GIB else 0.0
        return 0x7F69_0000_0000 if nbytes > GIB else 0x10

    def release(self, name: str, pointer: int) -> None:
        self.clock.now += 2.0 if pointer != 0x10 else 0.0

    def write(self, pointer: int, data: bytes) -> None:
        pass

    def synchronize(self, stream: int) -> None:
        pass


class Kernels:
    """Every check of a pattern takes 0.25 s of the test clock: a pass of four, 1 s."""

    stream = 1

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def mt_fill(self, *args: Any) -> None:
        pass

    def mt_check(self, *args: Any) -> None:
        self.clock.now += 0.125

    def read_errs(self, errs: int) -> BadWords:
        return BadWords(0)


def test_the_memtest_seconds_are_the_patterns_not_the_allocation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock()
    monkeypatch.setattr(memtest, "time", clock)
    channel = SimpleNamespace(stop=threading.Event(), send=lambda *a, **k: None,
                              doing=lambda what: None)  # fmt: skip
    result = memtest.run_memtest(channel, Driver(clock), Kernels(clock), 6.0, 0.92, None)  # type: ignore[arg-type]
    # the deadline is 6 s from the start: 3 s of allocation, then passes of 1 s until it
    assert result["passes"] == 3 and result["seconds"] == 3.0
    assert result["bytes_tested"] == int(140 * GIB * 0.92) // memtest.ALIGN * memtest.ALIGN
    assert result["gbs"] == round(result["bytes_tested"] * 4 * 4 * 3 / 3.0 / 1e9, 1)
