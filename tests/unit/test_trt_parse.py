"""The TensorRT build-log scanner on logs written as trtexec, the TensorRT loggers and
TensorRT-LLM print them (wording checked against public issue threads and the trtexec
sources), plus the seed's worked example."""

from __future__ import annotations

import json

import pytest
from sitscheck.checks.tensorrt.gpu_arch import compute_capability
from sitscheck.checks.tensorrt.parse import (
    MAX_TEXT_CHARS,
    Fallback,
    PrecisionFallback,
    TrtLog,
    scan_trt_log,
)


def scan(text: str, **kwargs: int) -> TrtLog:
    return scan_trt_log(text.strip("\n").splitlines(keepends=True), "build.log", **kwargs)


# --------------------------------------------------------------------------- the seed

SEED = """\
[INFO] Builder completed with 128 layers, fused 42 conv-bn-relu patterns.
[WARNING] Layer conv3x3_2: fallback to cuBLASLt due to unsupported dilation=2 on SM_86.
[INFO] Engine built for GPU 0 (A100-PCIE-40GB), maxWorkspaceSize=268435456
"""


def test_seed_worked_example() -> None:
    log = scan(SEED)
    assert log.layers == 128
    assert log.fused == 42
    assert log.fallbacks == (
        Fallback(
            "conv3x3_2",
            "Layer conv3x3_2: fallback to cuBLASLt due to unsupported dilation=2 on SM_86.",
        ),
    )
    assert log.gpu == "A100-PCIE-40GB"
    assert log.sm == "sm_86"
    assert log.warnings == 1
    assert log.errors == ()
    assert log.precision_fallbacks == ()
    assert log.trt_version is None


def test_seed_hides_a_gpu_that_does_not_match_its_sm() -> None:
    # What the seed's example hides: an A100 is sm_80, the log says SM_86.
    log = scan(SEED)
    assert log.gpu is not None
    assert compute_capability(log.gpu) == "sm_80"
    assert log.sm != compute_capability(log.gpu)


def test_to_fact_has_exactly_the_documented_keys() -> None:
    fact = scan(SEED).to_fact()
    assert set(fact) == {
        "file",
        "trt_version",
        "built_on",
        "fallbacks",
        "precision_fallbacks",
        "errors",
        "warnings",
        "layers",
        "fused",
        "build_time_s",
        "peak_memory_mib",
        "truncated",
    }
    assert fact["built_on"] == {"gpu": "A100-PCIE-40GB", "sm": "sm_86"}
    assert fact["fallbacks"] == [
        {
            "layer": "conv3x3_2",
            "reason": "Layer conv3x3_2: fallback to cuBLASLt due to unsupported dilation=2"
            " on SM_86.",
        }
    ]
    assert fact["file"] == "build.log"
    json.dumps(fact)  # plain JSON values only


# --------------------------------------------------------------------------- TensorRT-LLM

TRTLLM_BUILD = """\
[TensorRT-LLM] TensorRT-LLM version: 0.14.0
[10/12/2024-15:45:54] [TRT-LLM] [I] Set bert_attention_plugin to auto.
[10/12/2024-15:45:54] [TRT-LLM] [I] Set gpt_attention_plugin to auto.
[10/12/2024-15:45:54] [TRT-LLM] [I] Set gemm_plugin to auto.
[10/12/2024-15:45:54] [TRT-LLM] [W] padding removal and fMHA are both enabled, max_input_len is not required and will be ignored
[10/12/2024-15:45:55] [TRT] [I] [MemUsageChange] Init CUDA: CPU +14, GPU +0, now: CPU 166, GPU 4739 (MiB)
[10/12/2024-15:45:57] [TRT] [I] [MemUsageChange] Init builder kernel library: CPU +1973, GPU +350, now: CPU 2275, GPU 5089 (MiB)
[10/12/2024-15:45:57] [TRT-LLM] [I] Set nccl_plugin to None.
[10/12/2024-15:45:58] [TRT-LLM] [I] Total optimization profiles added: 1
[10/12/2024-15:45:58] [TRT-LLM] [I] Total time to initialize the weights in network Unnamed Network 0: 00:00:00
[10/12/2024-15:45:58] [TRT-LLM] [I] Build TensorRT engine Unnamed Network 0
[10/12/2024-15:45:58] [TRT] [W] Unused Input: position_ids
[10/12/2024-15:45:58] [TRT] [W] [RemoveDeadLayers] Input Tensor position_ids is unused or used only at compile-time, but is not being removed.
[10/12/2024-15:45:58] [TRT] [I] Global timing cache in use. Profiling results in this builder pass will be stored.
[10/12/2024-15:45:58] [TRT] [I] Compiler backend is used during engine build.
[10/12/2024-15:46:16] [TRT] [I] [GraphReduction] The approximate region cut reduction algorithm is called.
[10/12/2024-15:46:16] [TRT] [I] Detected 39 inputs and 29 output network tensors.
[10/12/2024-15:46:16] [TRT] [I] Total Host Persistent Memory: 98256 bytes
[10/12/2024-15:46:16] [TRT] [I] Total Device Persistent Memory: 0 bytes
[10/12/2024-15:46:16] [TRT] [I] Max Scratch Memory: 7415945088 bytes
[10/12/2024-15:46:16] [TRT] [I] Engine generation completed in 15.4544 seconds.
[10/12/2024-15:46:16] [TRT] [I] [MemUsageStats] Peak memory usage of TRT CPU/GPU memory allocators: CPU 8 MiB, GPU 19386 MiB
[10/12/2024-15:46:23] [TRT] [I] [MemUsageStats] Peak memory usage during Engine building and serialization: CPU: 40291 MiB
[10/12/2024-15:46:23] [TRT-LLM] [I] Total time of building Unnamed Network 0: 00:00:22
[10/12/2024-15:46:23] [TRT] [I] Serialized 27 bytes of code generator cache.
[10/12/2024-15:46:23] [TRT] [I] Serialized 257296 bytes of compilation cache.
[10/12/2024-15:46:23] [TRT] [I] Serialized 10 timing cache entries
[10/12/2024-15:46:23] [TRT-LLM] [I] Timing cache serialized to model.cache
[10/12/2024-15:46:23] [TRT-LLM] [I] Build phase peak memory: 40294.03 MB, children: 16.96 MB
[10/12/2024-15:46:23] [TRT-LLM] [I] Serializing engine to /engines/llama/rank0.engine...
[10/12/2024-15:46:42] [TRT-LLM] [I] Engine serialized. Total time: 00:00:19
[10/12/2024-15:46:43] [TRT-LLM] [I] Total time of building all engines: 00:00:47
"""  # noqa: E501 (log lines quoted as printed)


def test_trtllm_build_log() -> None:
    log = scan(TRTLLM_BUILD)
    assert log.trt_version is None  # "TensorRT-LLM version" is not TensorRT's
    assert log.warnings == 3
    assert log.fallbacks == ()
    assert log.precision_fallbacks == ()
    assert log.errors == ()
    assert log.build_time_s == 47.0  # all engines, not the one engine generation
    assert log.peak_memory_mib == 19386.0  # GPU figures only (not the 40291 MiB of host)
    assert (log.gpu, log.sm, log.layers, log.fused) == (None, None, None, None)
    assert log.truncated is False


TRTLLM_OOM = """\
[11/07/2023-08:45:41] [TRT] [W] Requested amount of GPU memory (33555480576 bytes) could not be allocated. There may not be enough free memory for allocation to succeed.
[11/07/2023-08:45:41] [TRT] [W] UNSUPPORTED_STATESkipping tactic 2 due to insufficient memory on requested size of 33555480576 detected for tactic 0x000000000000001e.
[11/07/2023-08:45:41] [TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::140] Error Code 2: OutOfMemory (no further information)
[11/07/2023-08:45:41] [TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::140] Error Code 2: OutOfMemory (no further information)
[11/07/2023-08:45:41] [TRT] [W] Requested amount of GPU memory (33555480576 bytes) could not be allocated. There may not be enough free memory for allocation to succeed.
[11/07/2023-08:45:41] [TRT] [W] UNSUPPORTED_STATESkipping tactic 3 due to insufficient memory on requested size of 33555480576 detected for tactic 0x000000000000001f.
[TensorRT-LLM][WARNING] Device 0 peer access Device 1 is not available.
[TensorRT-LLM][ERROR] Assertion failed: Failed to build the engine (/src/tensorrt_llm/runtime/tllmRuntime.cpp:93)
"""  # noqa: E501 (log lines quoted as printed)


def test_trtllm_out_of_memory_build() -> None:
    log = scan(TRTLLM_OOM)
    assert log.fallbacks == (
        Fallback(
            None,
            "UNSUPPORTED_STATESkipping tactic 2 due to insufficient memory on requested size of"
            " 33555480576 detected for tactic 0x000000000000001e.",
        ),
        Fallback(
            None,
            "UNSUPPORTED_STATESkipping tactic 3 due to insufficient memory on requested size of"
            " 33555480576 detected for tactic 0x000000000000001f.",
        ),
    )
    oom = (
        "2: [virtualMemoryBuffer.cpp::resizePhysical::140] Error Code 2: OutOfMemory"
        " (no further information)"
    )
    assert log.errors == (
        oom,
        oom,  # a repeated error is counted each time
        "Assertion failed: Failed to build the engine"
        " (/src/tensorrt_llm/runtime/tllmRuntime.cpp:93)",
    )
    assert log.warnings == 5


# --------------------------------------------------------------------------- TensorRT 10 trtexec

TRTEXEC_10 = """\
&&&& RUNNING TensorRT.trtexec [TensorRT v100800] [b43] # trtexec --onnx=resnet50.onnx --saveEngine=resnet50.engine --fp16
[02/11/2025-09:12:40] [I] TF32 is enabled by default. Add --noTF32 flag to further improve accuracy with some performance cost.
[02/11/2025-09:12:40] [I] === Model Options ===
[02/11/2025-09:12:40] [I] Format: ONNX
[02/11/2025-09:12:40] [I] Model: resnet50.onnx
[02/11/2025-09:12:40] [I] Output:
[02/11/2025-09:12:40] [I] === Build Options ===
[02/11/2025-09:12:40] [I] Memory Pools: workspace: default, dlaSRAM: default, dlaLocalDRAM: default, dlaGlobalDRAM: default, tacticSharedMem: default
[02/11/2025-09:12:40] [I] avgTiming: 8
[02/11/2025-09:12:40] [I] Precision: FP32+FP16
[02/11/2025-09:12:40] [I] Allow GPU fallback for DLA: Disabled
[02/11/2025-09:12:40] [I]
[02/11/2025-09:12:40] [I] === Device Information ===
[02/11/2025-09:12:40] [I] Available Devices:
[02/11/2025-09:12:40] [I]   Device 0: "NVIDIA H100 80GB HBM3" UUID: GPU-3f0c7b2e-8f41-2a9d-5b1e-0c6a4d2e9f17
[02/11/2025-09:12:41] [I] Selected Device: NVIDIA H100 80GB HBM3
[02/11/2025-09:12:41] [I] Selected Device ID: 0
[02/11/2025-09:12:41] [I] Selected Device UUID: GPU-3f0c7b2e-8f41-2a9d-5b1e-0c6a4d2e9f17
[02/11/2025-09:12:41] [I] Compute Capability: 9.0
[02/11/2025-09:12:41] [I] SMs: 132
[02/11/2025-09:12:41] [I] Device Global Memory: 81008 MiB
[02/11/2025-09:12:41] [I] Shared Memory per SM: 228 KiB
[02/11/2025-09:12:41] [I] Memory Bus Width: 5120 bits (ECC enabled)
[02/11/2025-09:12:41] [I] Application Compute Clock Rate: 1.98 GHz
[02/11/2025-09:12:41] [I] Application Memory Clock Rate: 2.619 GHz
[02/11/2025-09:12:41] [I]
[02/11/2025-09:12:41] [I] Note: The application clock rates do not reflect the actual clock rates that the GPU is currently running at.
[02/11/2025-09:12:41] [I]
[02/11/2025-09:12:41] [I] TensorRT version: 10.8.0
[02/11/2025-09:12:41] [I] Loading standard plugins
[02/11/2025-09:12:41] [I] [TRT] [MemUsageChange] Init CUDA: CPU +2, GPU +0, now: CPU 24, GPU 537 (MiB)
[02/11/2025-09:12:43] [I] [TRT] [MemUsageChange] Init builder kernel library: CPU +2564, GPU +432, now: CPU 2789, GPU 969 (MiB)
[02/11/2025-09:12:43] [I] Start parsing network model.
[02/11/2025-09:12:43] [I] [TRT] ----------------------------------------------------------------
[02/11/2025-09:12:43] [I] [TRT] Input filename:   resnet50.onnx
[02/11/2025-09:12:43] [I] [TRT] ONNX IR version:  0.0.8
[02/11/2025-09:12:43] [I] [TRT] Opset version:    17
[02/11/2025-09:12:43] [I] [TRT] Producer name:    pytorch
[02/11/2025-09:12:43] [I] [TRT] Producer version: 2.5.1
[02/11/2025-09:12:43] [I] [TRT] Domain:
[02/11/2025-09:12:43] [I] [TRT] Model version:    0
[02/11/2025-09:12:43] [I] [TRT] Doc string:
[02/11/2025-09:12:43] [I] [TRT] ----------------------------------------------------------------
[02/11/2025-09:12:43] [I] Finished parsing network model. Parse time: 0.163294
[02/11/2025-09:12:43] [I] [TRT] Local timing cache in use. Profiling results in this builder pass will not be stored.
[02/11/2025-09:12:44] [I] [TRT] Compiler backend is used during engine build.
[02/11/2025-09:13:05] [W] [TRT] UNSUPPORTED_STATE: Skipping tactic 0 due to insufficient memory on requested size of 85899345920 detected for tactic 0x0000000000000000.
[02/11/2025-09:13:07] [I] [TRT] Detected 1 inputs and 1 output network tensors.
[02/11/2025-09:13:07] [I] [TRT] Total Host Persistent Memory: 354752 bytes
[02/11/2025-09:13:07] [I] [TRT] Total Device Persistent Memory: 0 bytes
[02/11/2025-09:13:07] [I] [TRT] Max Scratch Memory: 4608 bytes
[02/11/2025-09:13:07] [I] [TRT] [BlockAssignment] Started assigning block shifts. This will take 71 steps to complete.
[02/11/2025-09:13:07] [I] [TRT] [BlockAssignment] Algorithm ShiftNTopDown took 1.07215ms to assign 4 blocks to 71 nodes requiring 9633792 bytes.
[02/11/2025-09:13:07] [I] [TRT] Total Activation Memory: 9633792 bytes
[02/11/2025-09:13:07] [I] [TRT] Total Weights Memory: 51327592 bytes
[02/11/2025-09:13:07] [I] [TRT] Compiler backend is used during engine execution.
[02/11/2025-09:13:07] [I] [TRT] Engine generation completed in 23.9812 seconds.
[02/11/2025-09:13:07] [I] [TRT] [MemUsageStats] Peak memory usage of TRT CPU/GPU memory allocators: CPU 1 MiB, GPU 262 MiB
[02/11/2025-09:13:07] [I] Engine built in 24.1049 sec.
[02/11/2025-09:13:07] [I] Created engine with size: 49.6153 MiB
[02/11/2025-09:13:08] [I] [TRT] Loaded engine size: 49 MiB
[02/11/2025-09:13:08] [I] Engine deserialized in 0.0264117 sec.
[02/11/2025-09:13:08] [I] [TRT] [MemUsageChange] TensorRT-managed allocation in IExecutionContext creation: CPU +0, GPU +10, now: CPU 0, GPU 58 (MiB)
[02/11/2025-09:13:08] [I] Starting inference
[02/11/2025-09:13:11] [I] Throughput: 3512.37 qps
&&&& PASSED TensorRT.trtexec [TensorRT v100800] [b43] # trtexec --onnx=resnet50.onnx --saveEngine=resnet50.engine --fp16
"""  # noqa: E501 (log lines quoted as printed)


def test_trtexec_10_build_log() -> None:
    log = scan(TRTEXEC_10)
    assert log.trt_version == "10.8.0"
    assert (log.gpu, log.sm) == ("NVIDIA H100 80GB HBM3", "sm_90")
    assert log.fallbacks == (
        Fallback(
            None,
            "UNSUPPORTED_STATE: Skipping tactic 0 due to insufficient memory on requested size of"
            " 85899345920 detected for tactic 0x0000000000000000.",
        ),
    )
    assert log.precision_fallbacks == ()  # "running at" the clock rates is no precision
    assert log.errors == ()
    assert log.warnings == 1
    assert log.build_time_s == 24.1049  # trtexec's own "Engine built in", not the 23.98 s
    assert log.peak_memory_mib == 969.0
    assert log.truncated is False


def test_trtexec_10_log_with_windows_line_endings_scans_the_same() -> None:
    crlf = TRTEXEC_10.replace("\n", "\r\n")
    assert scan(crlf) == scan(TRTEXEC_10)


def test_engine_generation_times_add_up_without_an_overall_time() -> None:
    log = scan(
        "[TRT] [I] Engine generation completed in 1.5 seconds.\n"
        "[TRT] [I] Engine generation completed in 2.25 seconds.\n"
    )
    assert log.build_time_s == 3.75


@pytest.mark.parametrize(
    ("banner", "version"),
    [
        ("[TensorRT v8003]", "8.0.3"),
        ("[TensorRT v8601]", "8.6.1"),
        ("[TensorRT v7103]", "7.1.3"),
        ("[TensorRT v100800] [b43]", "10.8.0"),
        ("[TensorRT v101200] [b36]", "10.12.0"),
    ],
)
def test_trtexec_banner_version(banner: str, version: str) -> None:
    log = scan(f"&&&& RUNNING TensorRT.trtexec {banner} # trtexec --onnx=model.onnx")
    assert log.trt_version == version


def test_version_never_comes_from_paths_or_tensorrt_llm() -> None:
    log = scan(
        "[TensorRT-LLM] TensorRT-LLM version: 0.12.0\n"
        "ERROR: /sw/gpgpu/MachineLearning/DIT/release/8.6/parsers/onnx/ModelImporter.cpp:142"
        " In function importNode:\n"
        "[8] No importer registered for op: DCNv2\n"
    )
    assert log.trt_version is None
    assert log.errors == (
        "/sw/gpgpu/MachineLearning/DIT/release/8.6/parsers/onnx/ModelImporter.cpp:142"
        " In function importNode:\n[8] No importer registered for op: DCNv2",
    )


def test_printed_version_keeps_three_components() -> None:
    assert scan("[I] TensorRT version: 8.6.1.6").trt_version == "8.6.1"
    assert scan("[TRT]    TensorRT version 5.0.0").trt_version == "5.0.0"


def test_engine_plan_compute_capability_wins_over_device_banner() -> None:
    log = scan(
        "[I] Selected Device: NVIDIA GeForce RTX 3090\n"
        "[I] Compute Capability: 8.6\n"
        "[E] [TRT] 6: The engine plan file is generated on an incompatible device,"
        " expecting compute 8.6 got compute 8.0, please rebuild.\n"
    )
    assert (log.gpu, log.sm) == ("NVIDIA GeForce RTX 3090", "sm_80")
    assert len(log.errors) == 1


def test_banner_compute_capability_wins_over_an_sm_mention() -> None:
    log = scan("[W] Layer c1: fallback to cuBLASLt on SM_75.\n[I] Compute Capability: 12.0\n")
    assert log.sm == "sm_120"
    assert scan("[W] kernel sm80_xmma_gemm picked").sm is None  # tactic names are no SM


# --------------------------------------------------------------------------- verbose graph

TRT7_VERBOSE = """\
[TensorRT] WARNING: Tensor DataType is determined at build time for tensors not marked as input or output.
[TensorRT] VERBOSE: Applying generic optimizations to the graph for inference.
[TensorRT] VERBOSE: Original: 5 layers
[TensorRT] VERBOSE: After dead-layer removal: 5 layers
[TensorRT] VERBOSE: After scale fusion: 4 layers
[TensorRT] VERBOSE: Fusing convolution weights from conv1 with scale bn1
[TensorRT] VERBOSE: ConvReluFusion: Fusing conv1 with relu1
[TensorRT] VERBOSE: After vertical fusions: 3 layers
[TensorRT] VERBOSE: After final dead-layer removal: 3 layers
[TensorRT] VERBOSE: After tensor merging: 3 layers
[TensorRT] VERBOSE: After concat removal: 3 layers
[TensorRT] VERBOSE: Graph construction and optimization completed in 0.000323121 seconds.
[TensorRT] VERBOSE: Fastest Tactic: 1002 Time: 0.234496
[TensorRT] VERBOSE: Engine generation completed in 12.5 seconds.
"""  # noqa: E501 (log lines quoted as printed)


def test_trt7_verbose_layer_counts_and_fusions() -> None:
    log = scan(TRT7_VERBOSE)
    assert log.layers == 3  # the count after the last graph pass
    assert log.fused == 2  # one per "Fusing ... with ..." line
    assert log.warnings == 1
    assert log.fallbacks == ()
    assert log.build_time_s == 12.5


def test_original_layer_count_alone() -> None:
    assert scan("[V] [TRT] Original: 7 layers").layers == 7


# --------------------------------------------------------------------------- precision

INT8_TRTEXEC = """\
&&&& RUNNING TensorRT.trtexec [TensorRT v8601] # trtexec --onnx=yolo.onnx --int8 --fp16
[09/02/2022-08:34:30] [I] Precision: FP32+FP16+INT8
[09/02/2022-08:34:31] [W] [TRT] Missing scale and zero-point for tensor (Unnamed Layer* 78) [Convolution]_output, expect fall back to non-int8 implementation for any layer consuming or producing given tensor
[09/02/2022-08:34:31] [W] [TRT] Missing scale and zero-point for tensor /model.0/conv/Conv_output_0, expect fall back to non-int8 implementation for any layer consuming or producing given tensor
"""  # noqa: E501 (log lines quoted as printed)


def test_int8_missing_scale_with_fp16_enabled() -> None:
    log = scan(INT8_TRTEXEC)
    assert log.precision_fallbacks == (
        PrecisionFallback("(Unnamed Layer* 78) [Convolution]_output", "INT8", "FP16"),
        PrecisionFallback("/model.0/conv/Conv_output_0", "INT8", "FP16"),
    )
    assert log.fallbacks == ()  # not also a plain fallback
    assert log.warnings == 2
    assert log.to_fact()["precision_fallbacks"] == [
        {"layer": "(Unnamed Layer* 78) [Convolution]_output", "from": "INT8", "to": "FP16"},
        {"layer": "/model.0/conv/Conv_output_0", "from": "INT8", "to": "FP16"},
    ]


def test_int8_missing_scale_wordings_without_build_options() -> None:
    log = scan(
        "[02/12/2024-00:29:48] [TRT] [W] Missing scale and zero-point for tensor"
        " /transformer/encoder/layers.0/self_attn/Softmax_output_0, expect fall back to"
        " non-int8 implementation for any layer consuming or producing given tensor\n"
        "[TensorRT] WARNING: Missing dynamic range for tensor 427, expect fall back to non-int8"
        " implementation for any layer consuming or producing given tensor\n"
        "[TensorRT] WARNING: Rejecting some int8 implementation of layer Conv_2 due to missing"
        " int8 scales for tensor 427 at output index 0\n"
        "[08/11/2022-10:00:00] [W] [TRT] Dynamic range would not be set for tensor (Unnamed"
        " Layer* 36) [Constant]_output for nbSpatialDims = 2. TensorRT does not support Int8"
        " precision for tensors of index type or with dims < (nbSpatialDims + 2), expect fall"
        " back to non-int8 implementation for any layer consuming or producing given tensor if"
        " the layer assumes nbSpatialDims = 2.\n"
    )
    assert log.precision_fallbacks == (
        PrecisionFallback(
            "/transformer/encoder/layers.0/self_attn/Softmax_output_0", "INT8", "FP32"
        ),
        PrecisionFallback("427", "INT8", "FP32"),
        PrecisionFallback("Conv_2", "INT8", "FP32"),
        PrecisionFallback("(Unnamed Layer* 36) [Constant]_output", "INT8", "FP32"),
    )
    assert log.fallbacks == ()


def test_running_in_fp32_is_a_precision_fallback() -> None:
    log = scan(
        "[I] Precision: FP32+FP16\n"
        "[WARNING] Layer attn_softmax: FP16 kernel unavailable, running in FP32.\n"
        "[W] [TRT] Layer 'norm_2' (NORMALIZATION): will run in FP32 precision\n"
    )
    assert log.precision_fallbacks == (
        PrecisionFallback("attn_softmax", "FP16", "FP32"),
        PrecisionFallback("norm_2", "FP16", "FP32"),  # asked for by the build's FP16 flag
    )
    assert log.fallbacks == ()


def test_precision_advice_is_no_fallback() -> None:
    log = scan(
        "[07/02/2025-06:14:12] [TRT] [W] Detected layernorm nodes in FP16: , , , \n"
        "[07/02/2025-06:14:12] [TRT] [W] Running layernorm after self-attention in FP16 may"
        " cause overflow. Exporting the model to the latest available ONNX opset (later than"
        " opset 17) to use the INormalizationLayer, or forcing layernorm layers to run in FP32"
        " precision can help with preserving accuracy.\n"
    )
    assert log.precision_fallbacks == ()
    assert log.fallbacks == ()
    assert log.warnings == 2


def test_dla_precision_switch_is_a_fallback_not_a_precision_one() -> None:
    log = scan(
        "[W] [TRT] DLA only supports FP16 and Int8 precision type. Switching (Unnamed Layer*"
        " 275) [Gather] device type to GPU.\n"
        "[12/04/2024-11:57:45] [TRT] [W] Validation failed for DLA layer:"
        " /model.10/m/m.0/attn/Reshape. Switching to GPU fallback.\n"
        "[12/04/2024-11:57:45] [TRT] [W] Splitting DLA subgraph at: /model.10/m/m.0/attn/Reshape"
        " because DLA validation failed for this layer.\n"
        "WARNING: Default DLA is enabled but layer layer74-act is not running on DLA, falling"
        " back to GPU.\n"
        "[03/22/2025-00:10:20] [TRT] [W] DLA requests all profiles have same min, max, and opt"
        " value. All dla layers are falling back to GPU\n"
    )
    assert [f.layer for f in log.fallbacks] == [
        "(Unnamed Layer* 275) [Gather]",
        "/model.10/m/m.0/attn/Reshape",
        "layer74-act",
        None,
    ]
    assert log.precision_fallbacks == ()
    assert log.warnings == 5


# --------------------------------------------------------------------------- build failed

TRTEXEC_8_FAILED = """\
&&&& RUNNING TensorRT.trtexec [TensorRT v8601] # trtexec --onnx=model.onnx --saveEngine=model.engine
[05/26/2023-17:27:02] [V] [TRT] Fastest Tactic: -3360065831133338131 Time: inf
[05/26/2023-17:27:02] [E] Error[10]: [optimizer.cpp::computeCosts::3728] Error Code 10: Internal Error (Could not find any implementation for node /Transpose.)
[05/26/2023-17:27:02] [E] Error[2]: [builder.cpp::buildSerializedNetwork::751] Error Code 2: Internal Error (Assertion engine != nullptr failed. )
[05/26/2023-17:27:02] [E] Engine could not be created from network
[05/26/2023-17:27:02] [E] Building engine failed
[05/26/2023-17:27:02] [E] Failed to create engine from model or file.
[05/26/2023-17:27:02] [E] Engine set up failed
&&&& FAILED TensorRT.trtexec [TensorRT v8601] # trtexec --onnx=model.onnx --saveEngine=model.engine
"""  # noqa: E501 (log lines quoted as printed)


def test_trtexec_build_failed() -> None:
    log = scan(TRTEXEC_8_FAILED)
    assert log.errors == (
        "Error[10]: [optimizer.cpp::computeCosts::3728] Error Code 10: Internal Error (Could not"
        " find any implementation for node /Transpose.)",
        "Error[2]: [builder.cpp::buildSerializedNetwork::751] Error Code 2: Internal Error"
        " (Assertion engine != nullptr failed. )",
        "Engine could not be created from network",
        "Building engine failed",
        "Failed to create engine from model or file.",
        "Engine set up failed",
        "&&&& FAILED TensorRT.trtexec [TensorRT v8601] # trtexec --onnx=model.onnx"
        " --saveEngine=model.engine",
    )
    assert log.fallbacks == ()  # neither "Time: inf" nor "Could not find any implementation"
    assert log.trt_version == "8.6.1"
    assert log.warnings == 0


def test_untagged_build_failed_lines_are_errors_of_their_own() -> None:
    log = scan(
        "[TRT] [E] 10: Could not find any implementation for node {ForeignNode[/Reshape_4]}.\n"
        "Build serialized network failed.\n"
        "Failed to build the TensorRT engine\n"
        "[TRT]    Could not find any implementation for node conv1.\n"
    )
    assert log.errors == (
        "10: Could not find any implementation for node {ForeignNode[/Reshape_4]}.",
        "Build serialized network failed.",
        "Failed to build the TensorRT engine",
        "Could not find any implementation for node conv1.",
    )


# --------------------------------------------------------------------------- boundaries


def test_error_keeps_its_continuation_lines() -> None:
    log = scan(
        "[TensorRT] ERROR: Network validation failed:\n"
        "  input shape mismatch\n"
        "\n"
        "  see the parser output above\n"
        "[TensorRT] INFO: Detected 1 inputs and 1 output network tensors.\n"
    )
    assert log.errors == (
        "Network validation failed:\n  input shape mismatch\n  see the parser output above",
    )


def test_untagged_lines_before_any_message_are_ignored() -> None:
    log = scan("Input filename:   model.onnx\nDoc string:       \n[W] [TRT] real warning\n")
    assert log.warnings == 1
    assert log.errors == ()


def test_weight_conversion_report_is_one_warning() -> None:
    log = scan(
        "[W] [TRT] TensorRT encountered issues when converting weights between types and that"
        " could affect accuracy.\n"
        "[W] [TRT] If this is not the desired behavior, please modify the weights or retrain"
        " with regularization to adjust the magnitude of the weights.\n"
        "[W] [TRT] Check verbose logs for the list of affected weights.\n"
        "[W] [TRT] - 77 weights are affected by this issue: Detected subnormal FP16 values.\n"
        "[V] [TRT]   List of affected weights: conv1.weight, conv2.weight\n"
        "[W] [TRT] - 18 weights are affected by this issue: Detected values less than smallest"
        " positive FP16 subnormal value and converted them to the FP16 minimum subnormalized"
        " value.\n"
        "[01/27/2023-17:30:26] [TRT] [W] Weights [name=024_convolutional.weight] had the"
        " following issues when converted to FP16:\n"
        "[01/27/2023-17:30:26] [TRT] [W]  - Subnormal FP16 values detected.\n"
        "[01/27/2023-17:30:26] [TRT] [W] If this is not the desired behavior, please modify the"
        " weights or retrain with regularization to reduce the magnitude of the weights.\n"
    )
    assert log.warnings == 2


def test_indented_list_items_continue_the_warning_that_opened_the_list() -> None:
    header = (
        "[03/09/2023-21:45:46] [W] [TRT] Myelin graph with multiple dynamic values may have"
        " poor performance if they differ. Dynamic values are: \n"
    )
    items = "".join(f"[03/09/2023-21:45:46] [W] [TRT]  axis_{n}\n" for n in range(3))
    assert scan(header + items + header + items).warnings == 2
    # Not indented: each line stands alone.
    assert scan(header + items.replace("]  axis", "] axis")).warnings == 4


@pytest.mark.parametrize(
    "line",
    [
        "[02/18/2025-16:33:19] [TRT] [W] Skipping tactic 0 due to insufficient memory.",
        "[02/18/2025-16:33:19] [02/18/2025-16:33:19] [W] [TRT] Skipping tactic 0 due to"
        " insufficient memory.",
        "[W] Skipping tactic 0 due to insufficient memory.",
        "[WARNING] Skipping tactic 0 due to insufficient memory.",
        "[TensorRT] WARNING: Skipping tactic 0 due to insufficient memory.",
        "WARNING: [TRT]: Skipping tactic 0 due to insufficient memory.",
        "[TensorRT-LLM][WARNING] Skipping tactic 0 due to insufficient memory.",
        "[2022-11-08 06:01:58 WARNING] Skipping tactic 0 due to insufficient memory.",
        "2024-08-29T10:12:01.123Z [TRT] [W] Skipping tactic 0 due to insufficient memory.",
        "[planner_node-1] [W] [TRT] Skipping tactic 0 due to insufficient memory.",
        "WARNING: [Torch-TensorRT] - Skipping tactic 0 due to insufficient memory.",
    ],
)
def test_logger_styles_give_the_same_warning_text(line: str) -> None:
    log = scan(line)
    assert log.warnings == 1
    assert log.fallbacks == (Fallback(None, "Skipping tactic 0 due to insufficient memory."),)


def test_unknown_bracket_alone_is_no_prefix() -> None:
    log = scan("[E] first\n[8] No importer registered for op: DCNv2\n[MemUsageChange] text\n")
    assert log.errors == ("first\n[8] No importer registered for op: DCNv2\n[MemUsageChange] text",)


def test_info_lines_do_not_count_as_warnings_or_errors() -> None:
    log = scan("[I] [TRT] Loaded engine size: 245 MB\n[V] [TRT] Deleting timing cache\n")
    assert (log.warnings, log.errors, log.fallbacks) == (0, (), ())


# --------------------------------------------------------------------------- caps


def test_lists_are_capped_and_the_rest_counted() -> None:
    skip = "[W] [TRT] Skipping tactic {n} due to insufficient memory on requested size of 9385.\n"
    error = "[E] [TRT] 2: Error Code 2: OutOfMemory (no further information) #{n}\n"
    scale = "[W] [TRT] Missing scale and zero-point for tensor t{n}, expect fall back to non-int8\n"
    text = "".join(skip.format(n=n) + error.format(n=n) + scale.format(n=n) for n in range(10))
    log = scan(text, max_items=3)
    assert [f.reason[:16] for f in log.fallbacks] == ["Skipping tactic "] * 3
    assert log.errors == tuple(error.format(n=n)[10:-1] for n in range(3))
    assert [p.layer for p in log.precision_fallbacks] == ["t0", "t1", "t2"]
    assert (log.fallbacks_total, log.errors_total, log.precision_fallbacks_total) == (10, 10, 10)
    assert log.warnings == 20
    assert log.truncated is True
    assert log.to_fact()["truncated"] is True


def test_exactly_at_the_cap_is_not_truncated() -> None:
    log = scan("[E] one\n[E] two\n[E] three\n", max_items=3)
    assert len(log.errors) == 3
    assert log.truncated is False


def test_long_error_text_is_cut_and_flagged() -> None:
    log = scan("[E] " + "x" * (3 * MAX_TEXT_CHARS) + "\n" + "more\n" * 10_000)
    assert len(log.errors) == 1
    assert len(log.errors[0]) <= MAX_TEXT_CHARS
    assert log.errors[0].startswith("xxx")
    assert log.truncated is True


def test_long_warning_text_does_not_flag_truncated() -> None:
    log = scan("[W] " + "w" * (3 * MAX_TEXT_CHARS))
    assert log.warnings == 1
    assert log.truncated is False


def test_negative_cap_is_refused() -> None:
    with pytest.raises(ValueError):
        scan_trt_log([], "x", max_items=-1)


def test_a_whole_text_is_read_as_its_lines() -> None:
    assert scan_trt_log(SEED, "build.log") == scan(SEED)


# --------------------------------------------------------------------------- logs as shipped

# The two errors of an incompatible engine (tests/corpus/trt/001, a docker-compose log) as each
# shipper prints a line: the prefix is stripped like a timestamp and both errors are found.
ERRORS = (
    "[05/02/2022-15:17:45] [TRT] [E] 6: The engine plan file is not compatible with this version "
    "of TensorRT, expecting library version 8.2.3 got 8.2.1, please rebuild.",
    "[05/02/2022-15:17:45] [TRT] [E] 4: [runtime.cpp::deserializeCudaEngine::50] Error Code 4: "
    "Internal Error (Engine deserialization failed.)",
)
SHIPPERS = {
    "docker-compose v1": "face_1  | ",
    "docker compose v2": "face-1  | ",
    "kubectl logs --prefix": "[pod/face-7d9f8c6b5-x2x7q/face] ",
    "kubectl logs --prefix --timestamps": "[pod/face-0/face] 2022-05-02T15:17:45.123456789Z ",
    "docker logs -t": "2022-05-02T15:17:45.123456789Z ",
    "talosctl logs": "10.5.0.3: ",
    "journalctl": "May 02 15:17:45 gpu-node-3 python3[20817]: ",
    "journalctl --no-hostname": "May  2 15:17:45 python3[20817]: ",
    "journalctl -o short-iso": "2022-05-02T15:17:45+0000 gpu-node-3 python3[20817]: ",
    "torchrun": "[rank0]: ",
    "compose then torchrun": "trainer_1  | [rank3]:",
}


@pytest.mark.parametrize("prefix", list(SHIPPERS.values()), ids=list(SHIPPERS))
def test_shipper_prefixes_are_stripped_like_timestamps(prefix: str) -> None:
    traceback = ["Traceback (most recent call last):", '  File "app.py", line 8, in <module>']
    log = scan("\n".join(prefix + line for line in [*ERRORS, *traceback]))
    assert log.errors == (
        ERRORS[0].split("[E] ", 1)[1],
        ERRORS[1].split("[E] ", 1)[1],
    )
    assert log.warnings == 0


def test_a_pipe_inside_a_message_is_no_shipper_prefix() -> None:
    log = scan("[W] [TRT] Output tensor: name | shape mismatch for layer a | b")
    assert log.warnings == 1


# --------------------------------------------------------------------------- other programs

OTHER_PROGRAMS = """\
[07/26/2022-19:22:49] [TRT] [E] 4: [runtime.cpp::deserializeCudaEngine::50] Error Code 4: Internal Error (Engine deserialization failed.)
Traceback (most recent call last):
  File "infer.py", line 12, in <module>
    context = engine.create_execution_context()
AttributeError: 'NoneType' object has no attribute 'create_execution_context'
/usr/lib/python3/dist-packages/torch/cuda/__init__.py:61: FutureWarning: The pynvml package is deprecated.
  import pynvml  # type: ignore[import]
INFO:root:Custom model option was provided. Switching to single model mode.
WARNING:root:No module named 'cupy'
WARNING 05-21 10:00:01 [config.py:1234] Casting torch.bfloat16 to torch.float16.
(VllmWorker rank=0 pid=4242) ERROR 05-21 10:00:02 [multiproc_executor.py:470] WorkerProc hit an exception.
root@aaa413f5860f:/app# python infer.py
[07/26/2022-19:22:50] [TRT] [W] Using default stream in enqueueV3() may lead to performance issues.
"""  # noqa: E501


def test_other_programs_lines_are_no_warnings_no_errors_and_join_no_message() -> None:
    log = scan(OTHER_PROGRAMS)
    assert log.errors == (
        "4: [runtime.cpp::deserializeCudaEngine::50] Error Code 4: Internal Error (Engine "
        "deserialization failed.)",
    )
    assert log.warnings == 1
    assert log.fallbacks == ()


def test_a_trt_message_continued_by_untagged_lines_still_is() -> None:
    # (shared corpus trt/003: the advice line of a skipped tactic has no prefix)
    log = scan(
        "[W] [TRT] Skipping tactic 3 due to insufficient memory on requested size of 9385 "
        "detected for tactic 0x000000000000001a.\n"
        "Try decreasing the workspace size with IBuilderConfig::setMemoryPoolLimit().\n"
        "[E] Error[2]: [builder.cpp::buildSerializedNetwork::609] Error Code 2: Internal Error\n"
        "Please check the log above.\n"
    )
    assert log.warnings == 1 and len(log.fallbacks) == 1
    assert log.errors == (
        "Error[2]: [builder.cpp::buildSerializedNetwork::609] Error Code 2: Internal Error\n"
        "Please check the log above.",
    )


# --------------------------------------------------------------------------- DLA wordings


DLA_WORDINGS = """\
WARNING: [TRT]: DLA supports only 8 subgraphs per DLA core. Switching to GPU for layer conv_6
[W] [TRT] Layer '/model.0/conv/Conv' (CONVOLUTION): Unsupported on DLA. Switching this layer's device type to GPU.
[W] [TRT] Validation failed for DLA layer: /model.2/Concat. Switching to GPU fallback.
[W] [TRT] setDefaultDeviceType was called but no layer in the network can run on DLA.
[W] [TRT] DLA only supports FP16 and Int8 precision type.
[W] [TRT] Splitting DLA subgraph at: /model.9/Resize because DLA validation failed for this layer.
"""  # noqa: E501


def test_every_dla_wording_that_moves_a_layer_to_the_gpu_is_a_fallback() -> None:
    log = scan(DLA_WORDINGS)
    assert [f.layer for f in log.fallbacks] == [
        "conv_6",
        "/model.0/conv/Conv",
        "/model.2/Concat",
        None,
    ]
    assert log.warnings == 6


# --------------------------------------------------------------------------- ONNX Runtime

# facts.md "trt": ONNX Runtime's TensorRT execution provider (also behind Triton's onnxruntime
# backend) wraps each TensorRT message, `TensorrtLogger::log` in tensorrt_execution_provider.h:
# "<ORT time> [<ORT level>:onnxruntime:<logger>, tensorrt_execution_provider.h:NN log] [<date>
# <TensorRT's level>] <message>". ONNX Runtime logs TensorRT's info at its warning level (its
# 1.2-era logger logged everything so), names kINTERNAL_ERROR "BUG" and kVERBOSE "UNKNOWN": the
# tag after the wrapper is TensorRT's severity. The lines are real ones (tests/corpus/trt/006,
# 008), their levels changed to each the logger prints.
ORT = (
    "2024-03-28 13:07:04.725964281 [{l}:onnxruntime:Default, tensorrt_execution_provider.h:83 log] "
)
INT64 = (
    "onnx2trt_utils.cpp:374: Your ONNX model has been generated with INT64 weights, while "
    "TensorRT does not natively support INT64. Attempting to cast down to INT32."
)
NO_IMPL = "10: Could not find any implementation for node {ForeignNode[Transpose_4]}."


@pytest.mark.parametrize(
    ("line", "errors", "warnings"),
    [
        (ORT.format(l="W") + f"[2024-03-28 20:07:04 WARNING] {INT64}", (), 1),
        (ORT.format(l="W") + f"[2024-03-28 20:07:04    INFO] {INT64}", (), 0),  # info at W
        (ORT.format(l="W") + f"[2024-03-28 20:07:04 UNKNOWN] {INT64}", (), 0),  # verbose
        (ORT.format(l="E") + f"[2024-03-28 20:07:04   ERROR] {NO_IMPL}", (NO_IMPL,), 0),
        (ORT.format(l="W") + f"[2024-03-28 20:07:04   ERROR] {NO_IMPL}", (NO_IMPL,), 0),  # 1.2
        (ORT.format(l="E") + f"[2024-03-28 20:07:04     BUG] {NO_IMPL}", (NO_IMPL,), 0),
        (ORT.format(l="I") + f"[2024-03-28 20:07:04    INFO] {INT64}", (), 0),
        (ORT.format(l="V") + f"[2024-03-28 20:07:04 UNKNOWN] {INT64}", (), 0),
        # without TensorRT's tag, the level ONNX Runtime logged it at
        (ORT.format(l="W") + INT64, (), 1),
        (ORT.format(l="E") + NO_IMPL, (NO_IMPL,), 0),
        (ORT.format(l="F") + NO_IMPL, (NO_IMPL,), 0),
        (ORT.format(l="I") + INT64, (), 0),
        (ORT.format(l="V") + INT64, (), 0),
        # without ONNX Runtime's own time; in its colours on a terminal; shipped by compose
        (ORT.format(l="W")[30:] + f"[2024-03-28 20:07:04 WARNING] {INT64}", (), 1),
        (
            f"\x1b[1;31m{ORT.format(l='E')}[2024-03-28 20:07:04   ERROR] {NO_IMPL}\x1b[m",
            (NO_IMPL,),
            0,
        ),
        (
            "triton_1  | " + ORT.format(l="E") + f"[2024-03-28 20:07:04   ERROR] {NO_IMPL}",
            (NO_IMPL,),
            0,
        ),
    ],
)
def test_tensorrt_messages_onnx_runtime_wraps_are_read_by_tensorrts_own_severity(
    line: str, errors: tuple[str, ...], warnings: int
) -> None:
    log = scan(line)
    assert (log.errors, log.warnings) == (errors, warnings)


def test_onnx_runtimes_other_lines_are_no_warnings_no_errors_and_join_no_message() -> None:
    """Lines ONNX Runtime writes of its own (its session, graph, other execution providers, the
    TensorRT execution provider's own code) are another program's: what they say, and the lines
    under them, count for nothing (github chflame163/ComfyUI_CatVTON_Wrapper#51, microsoft/
    onnxruntime#3414, #17434)."""
    log = scan(
        ORT.format(l="W") + f"[2024-03-28 20:07:04 WARNING] {INT64}\n"
        "2025-05-14 15:30:20.6422858 [E:onnxruntime:Default, provider_bridge_ort.cc:2167 "
        "onnxruntime::TryGetProviderInfo_TensorRT] D:\\a\\_work\\1\\s\\onnxruntime\\core\\session"
        "\\provider_bridge_ort.cc:1778 onnxruntime::ProviderLibrary::Get [ONNXRuntimeError] : 1 : "
        'FAIL : Error loading "onnxruntime_providers_tensorrt.dll" which depends on '
        '"nvinfer_10.dll" which is missing.\n'
        "\n"
        "*************** EP Error ***************\n"
        "2020-04-22 12:12:28.078811862 [W:onnxruntime:, graph.cc:2422 CleanUnusedInitializers] "
        "Removing initializer 'const_slice__618'. It is not used by any node and should be "
        "removed from the model.\n"
        "2023-09-06 16:45:59.604024060 [V:onnxruntime:, session_state.cc:1149 "
        "VerifyEachNodeIsAssignedToAnEp] Node placements\n"
        "[E:onnxruntime:, tensorrt_execution_provider.cc:2005 Compile] Build serialized network "
        "failed\n"
        "\x1b[0;93m2023-05-25 00:21:23.008301845 [W:onnxruntime:, session_state.cc:1136 "
        "VerifyEachNodeIsAssignedToAnEp] Some nodes were not assigned to the preferred execution "
        "providers\x1b[m\n"
    )
    assert (log.errors, log.warnings, log.fallbacks) == ((), 1, ())
