"""A check plugin that blocks where the runner did not expect it: in `applicable()` (under the
run deadline, and under a signal)."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from fakes.fake_checks import FakeCheck
from sitscheck.config import RunConfig
from sitscheck.contract.runner import run_checks
from sitscheck.interrupt import Interrupt
from sitscheck.models import CheckResult, Status
from sitscheck.sources.base import Sources
from sitscheck.sources.replay import ReplaySources


@dataclass
class BlockingApplicability(FakeCheck):
    """`applicable()` waits on `gate` (a plugin probing the host there, on a wedged driver)."""

    gate: threading.Event = field(default_factory=threading.Event)

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        self.gate.wait()
        return None


@pytest.fixture
def blocking() -> Iterator[BlockingApplicability]:
    check = BlockingApplicability("wedged")
    yield check
    check.gate.set()


def test_a_blocking_applicable_costs_at_most_the_run_deadline(
    blocking: BlockingApplicability, tmp_path: Path
) -> None:
    config = RunConfig(check_timeout_s=1.0, run_timeout_s=1.5)
    out: list[list[CheckResult]] = []
    checks = [FakeCheck("healthy"), blocking]
    worker = threading.Thread(
        target=lambda: out.append(run_checks(list(checks), ReplaySources(tmp_path), config)),
        daemon=True,
    )
    began = time.monotonic()
    worker.start()
    worker.join(config.run_timeout_s + 1.0)
    assert not worker.is_alive(), f"run_checks still running after {time.monotonic() - began:.1f}s"
    healthy, wedged = out[0]
    assert healthy.status == Status.OK
    assert wedged.status == Status.UNKNOWN


def test_a_signal_while_applicable_blocks_ends_it_unknown_at_once(
    blocking: BlockingApplicability, tmp_path: Path
) -> None:
    exits: list[int] = []
    interrupt = Interrupt(30.0, kill=lambda: None, exit_now=exits.append)
    config = RunConfig(check_timeout_s=30, run_timeout_s=60)
    out: list[list[CheckResult]] = []
    checks = interrupt.guard([FakeCheck("healthy"), blocking])
    worker = threading.Thread(
        target=lambda: out.append(run_checks(checks, ReplaySources(tmp_path), config)),
        daemon=True,
    )
    worker.start()
    time.sleep(0.3)
    began = time.monotonic()
    interrupt.trigger(signal.SIGTERM)
    worker.join(5.0)
    interrupt.cancel()
    # the blocked check's deadline is 30 s: ended within the 5 s join, it was the signal
    assert not worker.is_alive(), f"still running {time.monotonic() - began:.1f}s after"
    healthy, wedged = out[0]
    assert healthy.status == Status.OK
    assert wedged.status == Status.UNKNOWN
    assert wedged.error is not None and "interrupted by SIGTERM" in wedged.error
    assert exits == []
