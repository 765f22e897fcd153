"""The `bandwidth` check's facts: the probe's figures per GPU, pair and shared port, and what
each link should carry (checks/bandwidth/judge.py)."""

from __future__ import annotations

from sitscheck.contract.facts import FactsModel, GpuRefFacts


class Probe(FactsModel):
    """The probe's run: its wall time and phases, the CUDA driver, its plan, how it ended."""

    elapsed_s: float | None
    cuda_driver_version: int | None  # cuDriverGetVersion (13000: CUDA 13.0)
    device_count: int | None
    phases_s: dict[str, float]  # init, setup, alone, concurrent, p2p, release
    plan: dict[str, int]  # bytes_per_copy, samples, warmup, ...
    stopped: str | None  # why it stopped early (deadline, SIGTERM)
    errors: list[str]


class Gpu(GpuRefFacts):
    """`gpu.bandwidth` in GPU rules (GB/s = 10^9 bytes/s). The probe measures the GPUs CUDA
    opens: a lost GPU has no record here (the driver check names it)."""

    uuid: str | None
    source: str  # "cuda"
    ordinal: int  # the CUDA ordinal (PCI bus order)
    h2d_gbs: float | None
    d2h_gbs: float | None
    local_copy_gbs: float | None  # bytes copied per second
    hbm_gbs: float | None  # bytes read and written per second
    local_verified: bool | None
    h2d_concurrent_gbs: float | None = None  # with every GPU copying at once
    # the narrowest PCIe link on the GPU's sysfs path (absent: not readable)
    pcie_gen: int | None = None
    pcie_width: int | None = None
    pcie_theoretical_gbs: float | None = None
    pcie_limit_bus_id: str | None = None


class Pair(FactsModel):
    """A peer write, `src` GPU's copy engine into `dst`'s memory."""

    label: str  # "GPU0→GPU1"
    src: int
    dst: int
    gbs: float
    via: str | None = None  # "nvlink" or "pcie"; absent: NVML read no path
    nvlinks: int | None = None
    pcie_theoretical_gbs: float | None = None


class SharedPort(FactsModel):
    """GPUs behind one upstream port: their concurrent host→device sum against alone."""

    port: str
    gpus: list[int]
    label: str  # "GPU0, GPU1"
    together_gbs: float | None = None
    alone_sum_gbs: float | None = None
    ratio: float | None = None
    port_gen: int | None = None
    port_width: int | None = None
    port_theoretical_gbs: float | None = None
    port_limit_bus_id: str | None = None


class Nccl(FactsModel):
    """The multi-GPU phase's NCCL all-reduce (`sitscheck accept` on 2+ GPUs; facts.md)."""

    op: str  # "all_reduce"
    bytes: int  # one all-reduce's message
    bus_gbs: float  # nccl-tests' bus bandwidth: algbw × 2(n−1)/n
    ranks: int  # the GPUs it ran over
    nvls_disabled: bool  # NCCL_NVLS_ENABLE=0 was set: no NVLink SHARP, rings instead


class Facts(FactsModel):
    source: str  # "bandwidth.json"
    ref: str
    index_source: str  # how CUDA devices were matched to nvidia-smi indices
    probe: Probe
    gpus: list[Gpu]
    concurrent_h2d_wall_gbs: float | None
    pairs: list[Pair]
    pairs_refused: list[str]
    shared_ports: list[SharedPort]
    nccl: Nccl | None  # null: no all-reduce was measured (only `sitscheck accept` runs one)
