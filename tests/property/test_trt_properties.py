"""Properties of the TensorRT log scanner: no input escapes it, timestamps never change what
it finds, and a large stream is scanned in bounded memory with capped lists."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st
from sitscheck.checks.tensorrt.parse import MAX_ITEMS, TrtLog, scan_trt_log

# --------------------------------------------------------------------------- log-like lines

MESSAGES = (
    "Skipping tactic 3 due to insufficient memory on requested size of 9385 detected for tactic"
    " 0x0000000000000004.",
    "UNSUPPORTED_STATE: Skipping tactic 0 due to insufficient memory on requested size of 38359.",
    "Tactic Device request: 9385MB Available: 7649MB. Device memory is insufficient to use tactic.",
    "Some tactics do not have sufficient workspace memory to run. Increasing workspace size may"
    " increase performance, please check verbose output.",
    "Layer '/model.24/Constant_1_output_0' (CONSTANT): Unsupported on DLA. Switching this layer's"
    " device type to GPU.",
    "Default DLA is enabled but layer split_1 is not supported on DLA, falling back to GPU.",
    "DLA Layer conv2d_32/Conv2D does not support dynamic shapes in any dimension.",
    "Missing scale and zero-point for tensor (Unnamed Layer* 7) [Constant]_output, expect fall"
    " back to non-int8 implementation for any layer consuming or producing given tensor",
    "Layer attn_softmax: FP16 kernel unavailable, running in FP32.",
    "Layer conv3x3_2: fallback to cuBLASLt due to unsupported dilation=2 on SM_86.",
    "10: Could not find any implementation for node {ForeignNode[/layers.7/Reshape_4]}.",
    "Error[10]: [optimizer.cpp::computeCosts::2033] Error Code 10: Internal Error",
    "Myelin graph with multiple dynamic values may have poor performance if they differ. Dynamic"
    " values are: ",
    " audio_signal_dynamic_axes_1",
    "  - Subnormal FP16 values detected.",
    "TensorRT encountered issues when converting weights between types and that could affect"
    " accuracy.",
    "- 77 weights are affected by this issue: Detected subnormal FP16 values.",
    "Check verbose logs for the list of affected weights.",
    "Fastest Tactic: -3360065831133338131 Time: inf",
    "Detected invalid timing cache, setup a local cache instead",
    "[MemUsageChange] Init CUDA: CPU +2, GPU +0, now: CPU 24, GPU 537 (MiB)",
    "[MemUsageStats] Peak memory usage of TRT CPU/GPU memory allocators: CPU 1 MiB, GPU 262 MiB",
    "Engine generation completed in 23.9812 seconds.",
    "Engine built in 24.1049 sec.",
    "After vertical fusions: 90 layers",
    "ConvReluFusion: Fusing conv1 with relu1",
    "TensorRT version: 10.8.0",
    "Selected Device: NVIDIA H100 80GB HBM3",
    "Compute Capability: 9.0",
    "Precision: FP32+FP16+INT8",
    "Build serialized network failed.",
    "",
)
CONTINUATIONS = (
    "Try decreasing the workspace size with IBuilderConfig::setMemoryPoolLimit().",
    "[8] No importer registered for op: DCNv2",
    'While parsing node number 135 [DCNv2 -> "550"]:',
    "    at frame 1",
    "Build serialized network failed.",
    "&&&& FAILED TensorRT.trtexec [TensorRT v8601] # trtexec --onnx=m.onnx",
    "&&&& RUNNING TensorRT.trtexec [TensorRT v100800] # trtexec --onnx=m.onnx --fp16",
    "",
)
SEVERITIES = (
    "[E]", "[W]", "[I]", "[V]", "[F]", "ERROR:", "WARNING:", "INFO:", "VERBOSE:", "Error:",
    "[ERROR]", "[WARNING]", "[INFO]",
)  # fmt: skip
SOURCES = ("", "[TRT]", "[TensorRT]", "[TRT-LLM]", "[TensorRT-LLM]")
TIMESTAMPS = (
    "[08/29/2024-10:12:01]",
    "[07/29/2021-19:44:10]",
    "[2024-08-29 10:12:01]",
    "[2024-08-29T10:12:01.123Z]",
    "2024-08-29T10:12:01.123456Z",
)


@dataclass(frozen=True)
class Tagged:
    severity: str
    source: str
    source_first: bool
    text: str

    def render(self, stamps: tuple[str, ...]) -> str:
        tags = [self.source, self.severity] if self.source_first else [self.severity, self.source]
        prefix = " ".join([*stamps, *(tag for tag in tags if tag)])
        return f"{prefix} {self.text}"


@dataclass(frozen=True)
class Untagged:
    text: str

    def render(self, stamps: tuple[str, ...]) -> str:
        return self.text  # continuation lines carry no prefix of any kind


LogLine = Tagged | Untagged

tagged = st.builds(
    Tagged,
    st.sampled_from(SEVERITIES),
    st.sampled_from(SOURCES),
    st.booleans(),
    st.sampled_from(MESSAGES),
)
untagged = st.builds(Untagged, st.sampled_from(CONTINUATIONS))
log_lines = st.lists(st.one_of(tagged, tagged, untagged), max_size=40)
stamp_runs = st.lists(st.sampled_from(TIMESTAMPS), max_size=3).map(tuple)


def scan(lines: list[str], max_items: int = MAX_ITEMS) -> TrtLog:
    return scan_trt_log(lines, "prop.log", max_items=max_items)


def check_invariants(log: TrtLog, cap: int) -> None:
    json.dumps(log.to_fact())
    assert log.warnings >= 0
    for items, total in (
        (log.errors, log.errors_total),
        (log.fallbacks, log.fallbacks_total),
        (log.precision_fallbacks, log.precision_fallbacks_total),
    ):
        assert len(items) == min(total, cap)
        if total > cap:
            assert log.truncated


# --------------------------------------------------------------------------- no crash


@given(st.lists(st.text(max_size=300), max_size=30), st.integers(min_value=0, max_value=5))
def test_arbitrary_text_never_escapes(lines: list[str], cap: int) -> None:
    check_invariants(scan(lines, cap), cap)


PIECES = st.sampled_from(
    ("[", "]", "[W]", "[E]", "[TRT]", " ", "  ", "\t", ":", "-", "&&&&", "ERROR:", "Error:",
     "[08/29/2024-10:12:01]", "Skipping tactic", "fallback to", "FP32", "INT8", "layer ", "'",
     "Layer '", "running in ", "\r", "\n", "Compute Capability: ", "9.", "SM_", "86", "x")
)  # fmt: skip


@given(st.lists(st.lists(PIECES, max_size=12).map("".join), max_size=40))
def test_log_like_fragments_never_escape(lines: list[str]) -> None:
    check_invariants(scan(lines), MAX_ITEMS)


# --------------------------------------------------------------------------- timestamps


@given(log_lines, st.data())
def test_splitting_or_merging_timestamps_changes_nothing(
    lines: list[LogLine], data: st.DataObject
) -> None:
    bare = scan([line.render(()) for line in lines])
    stamped = [line.render(data.draw(stamp_runs)) for line in lines]
    assert scan(stamped).to_fact() == bare.to_fact()
    # The counts the annotation rules fix, spelled out.
    log = scan(stamped)
    assert (log.warnings, log.errors_total, log.fallbacks_total) == (
        bare.warnings,
        bare.errors_total,
        bare.fallbacks_total,
    )


@given(log_lines)
def test_line_endings_change_nothing(lines: list[LogLine]) -> None:
    rendered = [line.render(("[08/29/2024-10:12:01]",)) for line in lines]
    plain = scan(rendered).to_fact()
    assert scan([f"{line}\n" for line in rendered]).to_fact() == plain
    assert scan([f"{line}\r\n" for line in rendered]).to_fact() == plain


@settings(max_examples=50)
@given(log_lines, st.integers(min_value=0, max_value=4))
def test_caps_only_cut_the_lists(lines: list[LogLine], cap: int) -> None:
    rendered = [line.render(()) for line in lines]
    full, capped = scan(rendered), scan(rendered, cap)
    check_invariants(capped, cap)
    assert capped.errors == full.errors[:cap]
    assert capped.fallbacks == full.fallbacks[:cap]
    assert capped.precision_fallbacks == full.precision_fallbacks[:cap]
    assert capped.warnings == full.warnings
    assert capped.errors_total == full.errors_total


# --------------------------------------------------------------------------- bounded memory

STREAM_CYCLE = (
    "[08/29/2024-10:12:01] [W] [TRT] Skipping tactic 3 due to insufficient memory on requested"
    " size of 9385 detected for tactic 0x0000000000000004.\n",
    "Try decreasing the workspace size with IBuilderConfig::setMemoryPoolLimit().\n",
    "[08/29/2024-10:12:01] [TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::140] Error"
    " Code 2: OutOfMemory (no further information)\n",
    "[08/29/2024-10:12:02] [W] [TRT] Missing scale and zero-point for tensor conv1/BiasAdd,"
    " expect fall back to non-int8 implementation for any layer consuming or producing given"
    " tensor\n",
    "[08/29/2024-10:12:02] [I] [TRT] [MemUsageChange] Init cuDNN: CPU +0, GPU +8, now: CPU"
    " 2493, GPU 1815 (MiB)\n",
    "[08/29/2024-10:12:02] [V] [TRT] =============== Computing costs for"
    " /backbone/stage3/block2/conv2/Conv + /backbone/stage3/block2/act/Relu\n",
    "[08/29/2024-10:12:02] [V] [TRT] *************** Autotuning format combination:"
    " Half(802816,1:8,28672,1024) -> Half(802816,1:8,28672,1024) ***************\n",
)
STREAM_BYTES = 50 * 1024 * 1024


def stream(cycles: int) -> Iterator[str]:
    for _ in range(cycles):
        yield from STREAM_CYCLE


def test_fifty_megabyte_stream_in_bounded_memory() -> None:
    cycle_bytes = sum(len(line) for line in STREAM_CYCLE)
    cycles = -(-STREAM_BYTES // cycle_bytes)
    assert cycles * cycle_bytes >= STREAM_BYTES
    tracemalloc.start()
    try:
        log = scan_trt_log(stream(cycles), "huge.log")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * 1024 * 1024
    assert len(log.fallbacks) == len(log.errors) == len(log.precision_fallbacks) == MAX_ITEMS
    assert log.fallbacks_total == log.errors_total == log.precision_fallbacks_total == cycles
    assert log.warnings == 2 * cycles
    assert log.truncated is True
    assert log.peak_memory_mib == 1815.0
    assert log.errors[0] == (
        "2: [virtualMemoryBuffer.cpp::resizePhysical::140] Error Code 2: OutOfMemory"
        " (no further information)"
    )


def test_timestamp_variants_of_one_log_agree_on_known_counts() -> None:
    # The property above on one concrete log (corpus trt/010's shape), with its counts pinned.
    body = (
        "[W] [TRT] DLA only supports FP16 and Int8 precision type. Switching (Unnamed Layer* 275)"
        " [Gather] device type to GPU.",
        "[W] [TRT] Default DLA is enabled but layer split_1 is not supported on DLA, falling back"
        " to GPU.",
        "[W] [TRT] DLA Layer conv2d_32/Conv2D does not support dynamic shapes in any dimension.",
        "[E] [TRT] 10: Could not find any implementation for node {ForeignNode[/Reshape_4]}.",
    )
    for stamps in ((), ("[07/29/2021-19:44:10]",), ("[07/29/2021-19:44:10]",) * 3):
        log = scan([" ".join((*stamps, line)) for line in body])
        assert (log.warnings, log.fallbacks_total, log.errors_total) == (3, 2, 1)
        assert [f.layer for f in log.fallbacks] == ["(Unnamed Layer* 275) [Gather]", "split_1"]
