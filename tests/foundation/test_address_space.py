"""What a run reserves of its address space (issue 29, item 9): file reads take what the file
holds, not their cap; under `ulimit -v` malloc's arenas are capped (`address_space`).

Measured with tracemalloc (every bytes object a read makes is traced) and, for the arenas, in a
child process under a real RLIMIT_AS; tests/faults/test_fault_address_space.py replays every
bundle through the CLI under `ulimit -v`.
"""

from __future__ import annotations

import os
import resource
import sys
import textwrap
import tracemalloc
from collections.abc import Callable
from datetime import datetime, timezone
from io import BytesIO
from pathlib import Path

import pytest
from address_limit import run_limited
from sitscheck.address_space import economise
from sitscheck.daemon.state import DaemonState, load_state, save_state
from sitscheck.engine.yaml_lines import read_capped
from sitscheck.sources.files import READ_CHUNK, read_at_most
from sitscheck.sources.replay import ReplaySources

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "tests" / "bundles" / "h200x2-idle-v1"
MIB = 1024 * 1024


def peak_bytes(work: Callable[[], object]) -> int:
    """The most memory Python's allocators held at once while `work` ran (above the start)."""
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ---- reads take what the file holds ---------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, READ_CHUNK - 1, READ_CHUNK, READ_CHUNK + 1, 3 * READ_CHUNK])
@pytest.mark.parametrize("limit", [0, 1, READ_CHUNK, 2 * READ_CHUNK + 7, 64 * MIB])
def test_read_at_most_reads_the_file_up_to_the_limit(size: int, limit: int) -> None:
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    assert read_at_most(BytesIO(data), limit) == data[:limit]


def test_read_at_most_never_asks_for_more_than_a_chunk() -> None:
    asked: list[int] = []

    class Recording(BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            asked.append(-1 if size is None else size)
            return super().read(size)

    read_at_most(Recording(b"x" * (5 * READ_CHUNK)), 64 * MIB)
    assert asked and max(asked) == READ_CHUNK and min(asked) > 0


def test_a_bundle_file_costs_what_it_holds_not_its_64_mib_cap() -> None:
    """Each artifact of a replay may be 64 MiB; a 47 KB one must not take 64 MiB to read
    (before: MemoryError for three checks under `ulimit -v 1000000`)."""
    sources = ReplaySources(BUNDLE)
    size = (BUNDLE / "nvidia-smi-q.txt").stat().st_size
    peak = peak_bytes(lambda: sources.artifact("nvidia-smi-q.txt"))
    assert peak < 4 * size + 2 * READ_CHUNK, peak


def test_the_daemons_state_costs_what_it_holds(tmp_path: Path) -> None:
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    save_state(tmp_path, DaemonState(written_at=now.isoformat()))
    size = sum(p.stat().st_size for p in tmp_path.iterdir())
    peak = peak_bytes(lambda: load_state(tmp_path, now))
    assert peak < 2 * MIB, (peak, size)  # before: its 64 MiB cap, allocated to read it


def test_a_rule_file_costs_what_it_holds(tmp_path: Path) -> None:
    rules = tmp_path / "site.yaml"
    rules.write_text("rules: []\n")
    assert peak_bytes(lambda: read_capped(rules)) < READ_CHUNK + 64 * 1024  # before: 1 MiB


# ---- malloc's arenas under an address-space limit -------------------------------------------

# A child with 16 threads that each allocate (from malloc, past pymalloc's 512 bytes) and wait:
# the address space it then holds, in KiB, after `economise()` (or not).
_THREADS = textwrap.dedent(
    """
    import sys, threading
    from sitscheck.address_space import economise
    capped = economise() if sys.argv[1] == "economise" else None
    ready, go = threading.Barrier(17), threading.Event()
    def work():
        kept = [bytearray(1000) for _ in range(100)]
        ready.wait(); go.wait()
    threads = [threading.Thread(target=work) for _ in range(16)]
    for t in threads: t.start()
    ready.wait()
    size = next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmSize"))
    go.set()
    for t in threads: t.join()
    print(capped, size)
    """
)


def _child(mode: str, limit_kib: int | None, env: dict[str, str] | None = None) -> tuple[str, int]:
    done = run_limited([sys.executable, "-c", _THREADS, mode], limit_kib, env, timeout=60)
    assert done.returncode == 0, done.stderr
    capped, size = done.stdout.split()
    return capped, int(size)


glibc = pytest.mark.skipif(
    not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    if "CS_GNU_LIBC_VERSION" in os.confstr_names
    else True,
    reason="malloc arenas are glibc's",
)


@glibc
def test_under_a_limit_sitscheck_caps_mallocs_arenas() -> None:
    """16 threads that allocate: glibc makes each an arena of 64 MiB reserved (8 at least, more
    with more cores); capped, two. The limit (4 GiB) only makes `economise` act."""
    capped, economised = _child("economise", 4 * 1024 * 1024)
    _none, default = _child("plain", 4 * 1024 * 1024)
    assert capped == "True"
    assert default - economised >= 4 * 64 * 1024, (default, economised)


@glibc
def test_without_a_limit_or_with_the_operators_setting_nothing_changes() -> None:
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        assert economise() is False  # this test process: no limit, untouched
    assert _child("economise", None)[0] == "False"
    assert _child("economise", 4 * 1024 * 1024, {"MALLOC_ARENA_MAX": "8"})[0] == "False"
    tunables = {"GLIBC_TUNABLES": "glibc.malloc.arena_max=8"}
    assert _child("economise", 4 * 1024 * 1024, tunables)[0] == "False"
    assert economise({"MALLOC_ARENA_MAX": "4"}) is False
