"""The `infiniband` check's facts (what rules read as `checks.infiniband.facts`, and
`gpu.infiniband` per GPU) and its config section."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta, Struct, field
from sitscheck.contract.facts import FactsModel, KernelLogFacts


class Port(FactsModel):
    """One port of one HCA (`ports[]`): its state, rate and counters over the window. A value
    that could not be read is null (a rule reading it is UNKNOWN, never OK)."""

    name: str  # "mlx5_3 port 1", as every finding names it
    hca: str
    port: int
    pci_bus_id: str | None  # the HCA's PCI function
    link_layer: str | None  # InfiniBand, Ethernet (RoCE)
    state: str | None  # the name after "N: ", from the latest reading
    state_code: int | None
    phys_state: str | None
    phys_state_code: int | None
    active: bool | None  # ACTIVE and LinkUp
    disabled: bool | None  # physical state 3: Disabled (switched off on purpose)
    state_at_start: str | None  # the state when the window began, where it changed since
    rate: str | None  # as the kernel printed it: "400 Gb/sec (4X NDR)"
    rate_gbps: float | None
    gpus: list[str]  # bus ids of the GPUs on the HCA's PCIe switch (sysfs)
    totals: dict[str, int]  # every counter read, latest value ("counters/symbol_error", ...)
    deltas: dict[str, int]  # growth over the window, where both readings are usable
    unreadable: list[str]  # counters without a number ("N/A (no PMA)")
    saturated: list[str]  # counters stuck at their width's maximum (growth unknown)
    went_back: list[str]  # counters lower at the end: reset or wrapped (growth unknown)
    symbol_error_per_s: float | None = None
    port_rcv_errors_per_s: float | None = None
    port_xmit_discards_per_s: float | None = None
    xmit_packets: int | None = None  # packets sent during the window
    retransmits: int | None = None  # the mlx5 retransmission counters' growth, summed
    retransmit_pct: float | None = None  # retransmits per packet sent, percent


class Hca(FactsModel, kw_only=True):
    """One RDMA device (`hcas[]`)."""

    name: str
    pci_bus_id: str | None
    hca_type: str | None
    fw_ver: str | None
    board_id: str | None
    node_type: str | None
    ports: list[int]
    gpus: list[str]  # bus ids of the GPUs on its PCIe switch
    common_port: str | None  # the deepest PCIe port the HCA shares with those GPUs
    cq_overflow_counter: str | None  # "hw_counters/num_cqovf" where the device has one
    cq_overflows: int | None = None  # its growth over the window
    cq_overflow_per_s: float | None = None
    cq_overruns_logged: int | None  # CQ overrun events in the kernel log (null: log unread)


class Gpu(FactsModel):
    """`gpu.infiniband`: the HCAs a GPU shares a PCIe switch with (sysfs), joined by bus id."""

    pci_bus_id: str
    hcas: list[str]
    ports: list[str]  # their ports' names
    common_port: str | None


class Facts(FactsModel):
    source: str  # where the files were read
    window_s: float | None  # seconds between the two readings; null: read once
    hcas: list[Hca]
    ports: list[Port]
    gpus: list[Gpu]
    ignored_ports: list[str]  # ports the config ignores ("mlx5_8 port 1")
    kernel_log: KernelLogFacts | None


class Settings(Struct, kw_only=True, forbid_unknown_fields=True):
    """`check_config.infiniband`: ports that carry no traffic by design (a storage or
    management NIC left uncabled): kept out of every finding and rule, listed in the facts."""

    ignore_ports: Annotated[
        list[str], Meta(description='HCA names ("mlx5_8": all its ports) or ports ("mlx5_8/2")')
    ] = field(default_factory=list)

    def __post_init__(self) -> None:
        for value in self.ignore_ports:
            hca, _, port = value.partition("/")
            if not hca.strip() or (port and not port.isdigit()):
                raise ValueError(
                    f"ignore_ports: {value!r}: give an HCA (mlx5_8) or a port (mlx5_8/2)"
                )

    def ignores(self, hca: str, port: int) -> bool:
        return hca in self.ignore_ports or f"{hca}/{port}" in self.ignore_ports
