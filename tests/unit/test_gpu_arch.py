"""GPU names as logs and NVML print them -> compute capability and model family."""

from __future__ import annotations

import pytest
from sitscheck.checks.tensorrt.gpu_arch import (
    GpuModel,
    compute_capability,
    gpu_family,
    lookup_gpu,
    same_gpu_model,
    sm_from_capability,
)


@pytest.mark.parametrize(
    ("name", "sm", "family"),
    [
        # data center, as NVML / nvidia-smi / trtexec print them
        ("A100-PCIE-40GB", "sm_80", "A100"),
        ("NVIDIA A100-SXM4-80GB", "sm_80", "A100"),
        ("NVIDIA A100 80GB PCIe", "sm_80", "A100"),
        ("NVIDIA A800-SXM4-80GB", "sm_80", "A800"),
        ("NVIDIA A30", "sm_80", "A30"),
        ("NVIDIA A10", "sm_86", "A10"),
        ("NVIDIA A10G", "sm_86", "A10G"),
        ("NVIDIA A40", "sm_86", "A40"),
        ("NVIDIA A2", "sm_86", "A2"),
        ("NVIDIA H200", "sm_90", "H200"),
        ("NVIDIA H200 NVL", "sm_90", "H200"),
        ("H100 80GB HBM3", "sm_90", "H100"),
        ("NVIDIA H100 PCIe", "sm_90", "H100"),
        ("NVIDIA H800", "sm_90", "H800"),
        ("NVIDIA H20", "sm_90", "H20"),
        ("NVIDIA GH200 480GB", "sm_90", "GH200"),
        ("NVIDIA L40S", "sm_89", "L40S"),
        ("NVIDIA L40", "sm_89", "L40"),
        ("NVIDIA L4", "sm_89", "L4"),
        ("NVIDIA B200", "sm_100", "B200"),
        ("NVIDIA GB200", "sm_100", "GB200"),
        ("NVIDIA B300 SXM6 AC", "sm_103", "B300"),
        ("NVIDIA GB10", "sm_121", "GB10"),
        ("Tesla T4", "sm_75", "T4"),
        ("Tesla V100-SXM2-16GB", "sm_70", "V100"),
        ("Tesla P100-PCIE-16GB", "sm_60", "P100"),
        ("Tesla P40", "sm_61", "P40"),
        ("Tesla P4", "sm_61", "P4"),
        # workstation / consumer
        ("NVIDIA GeForce RTX 3090", "sm_86", "RTX 3090"),
        ("NVIDIA GeForce RTX 3090 Ti", "sm_86", "RTX 3090 TI"),
        ("NVIDIA GeForce RTX 3060 Laptop GPU", "sm_86", "RTX 3060"),
        ("NVIDIA GeForce RTX 4090", "sm_89", "RTX 4090"),
        ("NVIDIA GeForce RTX 4070 SUPER", "sm_89", "RTX 4070 SUPER"),
        ("NVIDIA GeForce RTX 5090", "sm_120", "RTX 5090"),
        ("GeForce RTX 2080 Ti", "sm_75", "RTX 2080 TI"),
        ("NVIDIA GeForce GTX 1650", "sm_75", "GTX 1650"),
        ("GeForce GTX 1080 Ti", "sm_61", "GTX 1080 TI"),
        ("NVIDIA RTX A6000", "sm_86", "RTX A6000"),
        ("NVIDIA RTX 6000 Ada Generation", "sm_89", "RTX 6000 ADA"),
        ("NVIDIA RTX 2000 Ada Generation Laptop GPU", "sm_89", "RTX 2000 ADA"),
        ("Quadro RTX 6000", "sm_75", "RTX 6000"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "sm_120", "RTX PRO 6000"),
        ("NVIDIA TITAN RTX", "sm_75", "TITAN RTX"),
        ("NVIDIA TITAN V", "sm_70", "TITAN V"),
        ("NVIDIA TITAN X", "sm_61", "TITAN X"),
        ("GeForce GTX TITAN X", "sm_52", "GTX TITAN X"),
        ("Quadro P6000", "sm_61", "P6000"),
        # Jetson, as trtexec prints the device
        ("Orin", "sm_87", "ORIN"),
        ("Jetson AGX Orin", "sm_87", "ORIN"),
        ("Jetson Orin Nano", "sm_87", "ORIN"),
        ("Xavier", "sm_72", "XAVIER"),
        ("NVIDIA Tegra X1", "sm_53", "TEGRA X1"),
        ("Jetson Nano", "sm_53", "NANO"),
        ("NVIDIA Jetson T5000", "sm_110", "T5000"),
    ],
)
def test_known_names(name: str, sm: str, family: str) -> None:
    assert compute_capability(name) == sm
    assert gpu_family(name) == family
    assert lookup_gpu(name) == GpuModel(family=family, sm=sm)


@pytest.mark.parametrize(
    "name", ["", "   ", "Radeon RX 7900 XTX", "NVIDIA", "GPU 0", "Tesla", "A1000000", "H1000"]
)
def test_unknown_names(name: str) -> None:
    assert compute_capability(name) is None
    assert gpu_family(name) is None
    assert lookup_gpu(name) is None


def test_tokens_never_match_inside_longer_names() -> None:
    # A100 is not A10; T400 is not T4; P40 is not P4; L40S is not L4 or L40.
    assert gpu_family("NVIDIA A100-PCIE-40GB") == "A100"
    assert gpu_family("NVIDIA T400 4GB") == "T400"
    assert gpu_family("Tesla P40") == "P40"
    assert gpu_family("NVIDIA L40S") == "L40S"


def test_same_gpu_model() -> None:
    assert same_gpu_model("A100-PCIE-40GB", "NVIDIA A100-SXM4-80GB") is True
    assert same_gpu_model("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe") is True
    assert same_gpu_model("Orin", "Jetson AGX Orin") is True
    assert same_gpu_model("A100-PCIE-40GB", "NVIDIA GeForce RTX 3090") is False
    assert same_gpu_model("NVIDIA H100 80GB HBM3", "NVIDIA H200") is False  # both sm_90
    assert same_gpu_model("NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 3090 Ti") is False
    assert same_gpu_model("Quadro RTX 6000", "NVIDIA RTX 6000 Ada Generation") is False


@pytest.mark.parametrize(
    ("a", "b"),
    [(None, "NVIDIA H200"), ("NVIDIA H200", None), (None, None), ("Mystery GPU", "NVIDIA H200")],
)
def test_same_gpu_model_is_unknown_without_two_known_names(a: str | None, b: str | None) -> None:
    assert same_gpu_model(a, b) is None


@pytest.mark.parametrize(
    ("capability", "sm"),
    [("8.6", "sm_86"), ("9.0", "sm_90"), ("10.0", "sm_100"), ("12.1", "sm_121"), (" 7.5", "sm_75")],
)
def test_sm_from_capability(capability: str, sm: str) -> None:
    assert sm_from_capability(capability) == sm


@pytest.mark.parametrize("capability", ["", "8", "8.", "sm_86", "8.6.1", "x.y"])
def test_sm_from_capability_rejects_other_text(capability: str) -> None:
    assert sm_from_capability(capability) is None
