"""The `topology` check's facts: the `nvidia-smi topo -m` matrix as docs/facts.md shapes it
(`gpus` is its list of GPU column names), joined with NVML, per pair and per GPU."""

from __future__ import annotations

from sitscheck.contract.facts import FactsModel


class Link(FactsModel):
    """One off-diagonal cell of the matrix, as printed (row `a`, column `b`)."""

    a: str
    b: str
    kind: str  # NV18, PIX, PXB, PHB, NODE, SYS, X, ...


class Affinity(FactsModel):
    """A GPU row's affinity cells as printed (N/A kept); null where the header lacks one."""

    cpu: str | None
    numa: str | None
    gpu_numa_id: str | None


class Source(FactsModel):
    topo: str | None
    nvml: str | None


class Summary(FactsModel):
    gpu_count: int
    nic_count: int
    pair_count: int
    nvlink_pairs: int
    pcie_only_pairs: int
    unknown_pairs: int
    min_nvlink: int | None
    max_nvlink: int | None
    asymmetric: int
    nvml_disagreements: int
    missing_gpus: list[int]  # indices the driver lists that the matrix lacks


class Pair(FactsModel):
    """One GPU pair (`judge._Pair.fact`)."""

    a: str
    b: str
    a_index: int
    b_index: int
    kind: str | None  # the cell a→b
    reverse_kind: str | None  # the cell b→a
    nvlink: int | None  # NVLinks the matrix shows (the fewer way); 0 on a PCIe path
    on_nvlink: bool | None
    nvml_p2p_nvlink: bool | None
    nvml_common_ancestor: str | None
    label: str


class Gpu(FactsModel):
    """`gpu.topology` in GPU rules (the records of `per_gpu`)."""

    index: int
    name: str  # the matrix's column name, GPU<index>
    pci_bus_id: str | None
    in_matrix: bool
    nearest_nic: str | None  # the legend's device name, else the column name
    nearest_nic_kind: str | None
    nvlink_peers: int
    pcie_peers: int
    min_nvlink: int | None
    nvlink_active: int | None
    nvlink_links: int | None
    cpu_affinity: str | None
    numa: str | None
    gpu_numa_id: str | None
    sysfs_numa_node: int | None
    sysfs_cpulist: str | None
    affinity_present: bool | None
    affinity_consistent: bool | None
    affinity_note: str | None


class Facts(FactsModel):
    gpus: list[str]  # GPU column names in header order
    nics: list[str]  # NIC column names in header order
    nic_legend: dict[str, str]  # NIC column name -> device name
    links: list[Link]
    affinity: dict[str, Affinity]  # GPU column name -> its affinity cells
    source: Source
    summary: Summary
    pairs: list[Pair]
    per_gpu: list[Gpu]
