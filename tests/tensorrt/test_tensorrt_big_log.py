"""The check reads logs streaming: no input escapes it, a 1 GB log costs bounded memory, an
overlong line is cut and the rest of it dropped."""

from __future__ import annotations

import io
import json
import tracemalloc
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sitscheck.checks.tensorrt.impl import bounded_lines, read_log
from sitscheck.checks.tensorrt.parse import MAX_LINE_CHARS
from sitscheck.sources.replay import ReplaySources
from trt_helpers import SEED_EXAMPLE, collect, make_bundle

GIB = 1 << 30


def test_bounded_lines_cuts_an_overlong_line_and_keeps_the_next() -> None:
    text = "a" * 25 + "\n" + "b" * 10 + "\n" + "c" * 7
    assert list(bounded_lines(io.StringIO(text), limit=8)) == ["a" * 8, "b" * 8, "c" * 7]
    assert list(bounded_lines(io.StringIO("x\ny\n"), limit=8)) == ["x\n", "y\n"]
    assert list(bounded_lines(io.StringIO("1234567\n"), limit=8)) == ["1234567\n"]
    assert list(bounded_lines(io.StringIO("12345678\nz"), limit=8)) == ["12345678", "z"]
    assert list(bounded_lines(io.StringIO(""), limit=8)) == []


def test_a_one_gigabyte_log_is_scanned_in_bounded_memory(tmp_path: Path) -> None:
    # A sparse file: the seed example, a 1 GiB run of NULs with no line break, then a failed
    # build. Nothing of it may be held whole, and what follows the hole must still be read.
    path = tmp_path / "huge.log"
    with path.open("wb") as handle:
        handle.write(SEED_EXAMPLE.encode())
        handle.seek(GIB)
        handle.write(b"\n[W] Skipping tactic 7 due to insufficient memory.\n")
        handle.write(b"[E] Build serialized network failed.\n")
    assert path.stat().st_size > GIB
    tracemalloc.start()
    try:
        scanned = read_log(path, "huge.log")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024
    log = scanned.log
    assert [f.layer for f in log.fallbacks] == ["conv3x3_2", None]
    assert log.errors == ("Build serialized network failed.",)
    assert (log.gpu, log.sm, log.layers, log.fused) == ("A100-PCIE-40GB", "sm_86", 128, 42)
    assert scanned.gpu_indices == (0,)


def test_a_long_line_is_cut_where_the_scanner_cuts_it(tmp_path: Path) -> None:
    reason = "Layer big: fallback to cuBLASLt " + "x" * (3 * MAX_LINE_CHARS)
    path = tmp_path / "long.log"
    path.write_text(f"[W] {reason}\n[E] boom\n", encoding="utf-8")
    log = read_log(path, "long.log").log
    assert log.errors == ("boom",)
    assert len(log.fallbacks) == 1
    assert reason.startswith(log.fallbacks[0].reason)
    assert len(log.fallbacks[0].reason) < MAX_LINE_CHARS


LOGGY = st.sampled_from(
    [b"[W] ", b"[E] ", b"[I] ", b"[TRT] ", b"GPU 0 ", b"Engine built for GPU 1 (A100) ",
     b"Compute Capability: 9.0", b"SM_86", b"fallback to ", b"Skipping tactic", b"&&&& PASSED",
     b"&&&& FAILED", b"\n", b"\r", b"\r\n", b"\x00", b"\xff\xfe", b"\xc3", b"\t", b" "]
)  # fmt: skip


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.one_of(st.binary(max_size=64), LOGGY), max_size=40).map(b"".join))
def test_no_input_escapes_the_check(tmp_path: Path, raw: bytes) -> None:
    bundle = tmp_path / "bundle"
    if not bundle.exists():  # one bundle for every example; the log is rewritten each time
        make_bundle(tmp_path, {})
    (bundle / "tensorrt").mkdir(exist_ok=True)
    (bundle / "tensorrt" / "any.log").write_bytes(raw)
    out = collect(ReplaySources(bundle))
    assert out.error is None
    json.dumps(out.facts)
    (log,) = out.facts["logs"]
    assert log["file"] == "tensorrt/any.log"
    assert len(out.facts["gpus"]) == 2
    for finding in out.findings:
        assert finding.code.startswith("tensorrt.")
