"""GPU model name -> compute capability (``sm_XY``) and model family. Pure, no I/O.

Names are matched the way logs and NVML print them: ``A100-PCIE-40GB``, ``NVIDIA
A100-SXM4-80GB``, ``NVIDIA H100 80GB HBM3``, ``NVIDIA GeForce RTX 3090``, ``Tesla T4``,
``Orin``. The name is split into upper-case tokens (``-``/``_``/spaces separate them), vendor
and brand words (NVIDIA, Tesla, GeForce, Quadro, Jetson) are dropped, and the longest known
model whose tokens occur contiguously wins (ties: the one printed first), so ``RTX 6000 Ada``
(sm_89) beats ``RTX 6000`` (Quadro, sm_75) and ``GTX TITAN X`` (Maxwell) beats ``TITAN X``
(Pascal). A ``Ti``/``SUPER`` token right after the model becomes part of the family, which
is otherwise the model's tokens in upper case (``A100``, ``RTX 3090``, ``ORIN``): memory size
and form factor (PCIe/SXM, 40GB/80GB) do not change it.

The table follows NVIDIA's "CUDA GPU Compute Capability" list
(https://developer.nvidia.com/cuda-gpus) and its legacy page
(https://developer.nvidia.com/cuda-legacy-gpus), plus the data-center variants that list does
not name but that carry the same chip (A800/A10G -> Ampere, H800/H20 -> Hopper, B100 ->
Blackwell, V100S -> Volta).
"""

from __future__ import annotations

import re

from msgspec import Struct

__all__ = [
    "GpuModel",
    "compute_capability",
    "gpu_family",
    "lookup_gpu",
    "same_gpu_model",
    "sm_from_capability",
]


class GpuModel(Struct, frozen=True):
    """One known GPU model: its family name (``A100``, ``RTX 3090``) and ``sm_XY``."""

    family: str
    sm: str


# (compute capability, model names) as NVIDIA's list groups them, names separated by "|". A
# name is written with spaces between the tokens it must match, without the vendor and brand
# words in _DROPPED.
_TABLE: tuple[tuple[str, str], ...] = (
    ("12.1", "GB10"),
    (
        "12.0",
        "RTX PRO 6000 | RTX PRO 5000 | RTX PRO 4500 | RTX PRO 4000 | RTX PRO 2000"
        " | RTX 5090 | RTX 5080 | RTX 5070 | RTX 5060 | RTX 5050",
    ),
    ("11.0", "THOR | T5000 | T4000"),
    ("10.3", "GB300 | B300"),
    ("10.0", "GB200 | B200 | B100"),
    ("9.0", "GH200 | H200 | H100 | H800 | H20"),
    (
        "8.9",
        "L4 | L40 | L40S | L20 | RTX 6000 ADA | RTX 5000 ADA | RTX 4500 ADA | RTX 4000 ADA"
        " | RTX 4000 SFF ADA | RTX 3500 ADA | RTX 2000 ADA"
        " | RTX 4090 | RTX 4080 | RTX 4070 | RTX 4060 | RTX 4050",
    ),
    ("8.7", "ORIN"),
    (
        "8.6",
        "A40 | A10 | A10G | A16 | A2 | RTX A6000 | RTX A5500 | RTX A5000 | RTX A4500"
        " | RTX A4000 | RTX A3000 | RTX A2000 | RTX A1000 | RTX A500"
        " | RTX 3090 | RTX 3080 | RTX 3070 | RTX 3060 | RTX 3050",
    ),
    ("8.0", "A100 | A800 | A30"),
    (
        "7.5",
        "T4 | T1000 | T600 | T400 | RTX 8000 | RTX 6000 | RTX 5000 | RTX 4000 | RTX 3000"
        " | TITAN RTX | RTX 2080 | RTX 2070 | RTX 2060 | GTX 1660 | GTX 1650",
    ),
    ("7.2", "XAVIER"),
    ("7.0", "V100 | V100S | GV100 | TITAN V"),
    ("6.2", "TX2"),
    (
        "6.1",
        "P40 | P4 | P6000 | P5200 | P5000 | P4200 | P4000 | P3200 | P3000 | P2200 | P2000"
        " | P1000 | P620 | P600 | P520 | P500 | P400 | TITAN XP | TITAN X"
        " | GTX 1080 | GTX 1070 | GTX 1060 | GTX 1050",
    ),
    ("6.0", "P100 | GP100"),
    ("5.3", "TEGRA X1 | NANO"),
    (
        "5.2",
        "M60 | M40 | M6000 | M5000 | M4000 | M2000"
        " | GTX TITAN X | GTX 980 | GTX 970 | GTX 960 | GTX 950",
    ),
)

_DROPPED = frozenset({"NVIDIA", "TESLA", "GEFORCE", "QUADRO", "JETSON", "DRIVE"})
_SUFFIXES = frozenset({"TI", "SUPER"})
_TOKEN_SPLIT = re.compile(r"[\s\-_/,()]+")
_CAPABILITY = re.compile(r"^\s*(\d{1,2})\.(\d)\s*$")


def _tokens(name: str) -> tuple[str, ...]:
    return tuple(t for t in _TOKEN_SPLIT.split(name.upper()) if t and t not in _DROPPED)


def _sm(capability: str) -> str:
    major, minor = capability.split(".")
    return f"sm_{major}{minor}"


def _build_index() -> tuple[tuple[tuple[str, ...], str], ...]:
    entries = [
        (tuple(model.split()), _sm(cc)) for cc, models in _TABLE for model in models.split("|")
    ]
    return tuple(entries)


_INDEX = _build_index()


def sm_from_capability(capability: str) -> str | None:
    """``"8.6"`` -> ``"sm_86"``, ``"10.0"`` -> ``"sm_100"``; None when not ``major.minor``."""
    match = _CAPABILITY.match(capability)
    if match is None:
        return None
    return f"sm_{int(match.group(1))}{match.group(2)}"


def _find(tokens: tuple[str, ...], model: tuple[str, ...]) -> int:
    width = len(model)
    for start in range(len(tokens) - width + 1):
        if tokens[start : start + width] == model:
            return start
    return -1


def lookup_gpu(name: str) -> GpuModel | None:
    """The known model a printed GPU name denotes, or None. The longest known model wins;
    between models of one length, the one printed first (``Jetson Orin Nano`` is an Orin)."""
    tokens = _tokens(name)
    best: tuple[int, int, tuple[str, ...], str] | None = None
    for model, sm in _INDEX:
        start = _find(tokens, model)
        if start >= 0 and (best is None or (-len(model), start) < (-len(best[2]), best[1])):
            best = (len(model), start, model, sm)
    if best is None:
        return None
    _, start, model, sm = best
    family = list(model)
    after = start + len(model)
    if after < len(tokens) and tokens[after] in _SUFFIXES:
        family.append(tokens[after])
    return GpuModel(family=" ".join(family), sm=sm)


def compute_capability(name: str) -> str | None:
    """``"NVIDIA A100-SXM4-80GB"`` -> ``"sm_80"``; None for an unknown name."""
    model = lookup_gpu(name)
    return model.sm if model is not None else None


def gpu_family(name: str) -> str | None:
    """Normalised model family: ``"A100-PCIE-40GB"`` -> ``"A100"``; None when unknown."""
    model = lookup_gpu(name)
    return model.family if model is not None else None


def same_gpu_model(a: str | None, b: str | None) -> bool | None:
    """Whether two printed names are the same GPU model (form factor and memory size aside).

    None when either name is missing or unknown.
    """
    if a is None or b is None:
        return None
    first, second = lookup_gpu(a), lookup_gpu(b)
    if first is None or second is None:
        return None
    return first.family == second.family
