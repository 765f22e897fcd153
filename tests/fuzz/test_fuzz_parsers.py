"""Every parser family under hostile bytes (hypothesis): raw bytes, and real samples mutated
with NUL bytes, invalid UTF-8, stray line breaks, escape sequences and junk values. Each input
must end in the parser's own refusal or a result, within the example deadline.

`SITSCHECK_FUZZ_EXAMPLES=N` raises the number of examples per target (default 150) for a longer
run; `tests/fuzz/atheris_*.py` run the same targets coverage-guided.
"""

from __future__ import annotations

import os
import time
import tracemalloc
from typing import Any

import pytest
from fuzz_targets import TARGETS, seeds
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("SITSCHECK_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=2000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
HOSTILE = [
    b"\x00",
    b"\x00" * 64,
    b"\xff\xfe",
    b"\xc3",
    b"\xed\xa0\x80",  # a UTF-16 surrogate, encoded
    b"\xef\xbb\xbf",  # BOM
    b"\r",
    b"\r\n",
    b"\n\n\n",
    b"\xe2\x80\xa8",  # U+2028 LINE SEPARATOR: str.splitlines() breaks there, a file does not
    b"\x1b[4m",
    b"\t",
    b"[N/A]",
    b"[GPU is lost]",
    b"N/A",
    b"-1",
    b"9" * 40,
    b"0x" + b"f" * 40,
    b"NaN",
    b"inf",
    b"1e999",
    b"GPU ",
    b"NVRM: Xid (PCI:0000:19:00): 79, ",
    b"AER: ",
    b"\\",
    b'"',
    b"{",
    b"]",
    b": ",
    b",",
]


@st.composite
def mutated(draw: Any, sample: bytes) -> bytes:
    """`sample` with a few splices: random bytes, hostile pieces, cuts and repeats."""
    data = bytearray(sample)
    for _ in range(draw(st.integers(1, 8))):
        where = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["insert", "hostile", "cut", "repeat", "flip"]))
        if kind == "insert":
            data[where:where] = draw(st.binary(min_size=1, max_size=32))
        elif kind == "hostile":
            data[where:where] = draw(st.sampled_from(HOSTILE))
        elif kind == "cut":
            del data[where : where + draw(st.integers(1, 256))]
        elif kind == "repeat":
            chunk = bytes(data[where : where + draw(st.integers(1, 80))])
            data[where:where] = chunk * draw(st.integers(1, 50))
        elif data:
            index = min(where, len(data) - 1)
            data[index] ^= draw(st.integers(1, 255))
    return bytes(data)


@pytest.mark.parametrize("target", sorted(TARGETS))
@FUZZ
@given(data=st.binary(max_size=2048))
def test_raw_bytes(target: str, data: bytes) -> None:
    TARGETS[target](data)


@pytest.mark.parametrize("target", sorted(TARGETS))
@FUZZ
@given(data=st.data())
def test_mutated_real_samples(target: str, data: Any) -> None:
    sample = data.draw(st.sampled_from(seeds(target)))
    TARGETS[target](data.draw(mutated(sample)))


# ---- hostile sizes: over-long lines, NUL floods, invalid UTF-8, in bounded time and memory ----

TEXT_TARGETS = ["kernel_log", "smi_csv", "smi_dmon", "smi_list", "smi_q", "topo", "trt_log"]
SIZE = 256 * 1024
TIME_BUDGET_S = 3.0  # for SIZE bytes: a parser that is quadratic anywhere takes minutes
PEAK_BUDGET = 32 * SIZE  # bytes traced at the peak, for SIZE bytes of input


def hostile_inputs(sample: bytes) -> dict[str, bytes]:
    lines = [line for line in sample.splitlines() if line.strip()] or [b"x"]
    longest = max(lines, key=len)
    with_nuls = bytearray()
    for index, byte in enumerate(sample * (SIZE // max(len(sample), 1) + 1)):
        with_nuls.append(byte)
        if index % 7 == 0:
            with_nuls.append(0)
    return {
        "one-line-of-A": b"A" * SIZE,
        "NUL-flood": b"\x00" * SIZE,
        "invalid-utf8": b"\xff\xfe\xc3" * (SIZE // 3),
        "sample-with-NULs": bytes(with_nuls[:SIZE]),
        "real-line-repeated-into-one": lines[0] + b"\n" + longest * (SIZE // len(longest)),
        "sample-repeated": sample * (SIZE // max(len(sample), 1)),
    }


CASES = [(target, name) for target in TEXT_TARGETS for name in hostile_inputs(seeds(target)[0])]


@pytest.mark.parametrize(("target", "case"), CASES, ids=[f"{t}-{c}" for t, c in CASES])
def test_hostile_input_in_bounded_time_and_memory(target: str, case: str) -> None:
    data = hostile_inputs(seeds(target)[0])[case]
    began = time.perf_counter()
    TARGETS[target](data)
    took = time.perf_counter() - began
    assert took < TIME_BUDGET_S, f"{target} took {took:.2f}s on {len(data)} bytes of {case}"
    tracemalloc.start()
    try:
        TARGETS[target](data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < PEAK_BUDGET, f"{target} peaked at {peak >> 20} MiB on {case}"
