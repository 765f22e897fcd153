"""Real /sys/class/infiniband layouts for the tests, from tests/corpus/infiniband (SOURCES.md).

`port_files` builds one port as the kernel shows it: the state, rate and link layer given
(sysfs.c's own spellings), the counters of the recorded mlx5 port (corpus 001) under the
HCA's name; `hca_files` adds the device files and a `device/uevent` as pci_uevent writes it.
`Bundle` copies a recorded H200 bundle and adds such HCAs as a first reading (`sysfs/`) and an
end reading (`sysfs-end/`, `sysfs-end/window_seconds`), the layout `sitscheck collect` writes.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
CORPUS = TESTS / "corpus" / "infiniband"
H200X2 = TESTS / "bundles" / "h200x2-idle-v1"
IB = "class/infiniband"

NDR = "400 Gb/sec (4X NDR)"
HDR = "200 Gb/sec (4X HDR)"
ACTIVE, DOWN, INIT = "4: ACTIVE", "1: DOWN", "2: INIT"
LINK_UP, POLLING, DISABLED = "5: LinkUp", "2: Polling", "3: Disabled"
# ConnectX-7 as the recorded H100 node's ibstat reads it (corpus 003)
CX7 = {"hca_type": "MT4129", "fw_ver": "28.39.1002", "board_id": "MT_0000000838"}


def load_tsv(name: str) -> dict[str, str]:
    files: dict[str, str] = {}
    for line in (CORPUS / name).read_text().splitlines():
        path, _, text = line.partition("\t")
        files[path] = text
    return files


def recorded_port_counters() -> dict[str, str]:
    """`counters/...` and `hw_counters/...` of the recorded mlx5 port (corpus 001)."""
    prefix = f"{IB}/mlx5_0/ports/1/"
    return {
        path[len(prefix) :]: text
        for path, text in load_tsv("001-procfs-mlx5_0-mt4118.tsv").items()
        if path.startswith(prefix) and path[len(prefix) :].startswith(("counters/", "hw_counters/"))
    }


def uevent(bus: str, pci_id: str = "15B3:1021") -> str:
    """A PCI function's uevent as drivers/pci/pci-driver.c pci_uevent writes it (ConnectX-7)."""
    vendor, device = pci_id.split(":")
    return (
        "DRIVER=mlx5_core\nPCI_CLASS=20700\n"
        f"PCI_ID={pci_id}\nPCI_SUBSYS_ID=15B3:0041\nPCI_SLOT_NAME={bus}\n"
        f"MODALIAS=pci:v0000{vendor}d0000{device}sv000015B3sd00000041bc02sc07i00"
    )


def port_files(
    hca: str,
    port: int = 1,
    state: str = ACTIVE,
    phys: str = LINK_UP,
    rate: str = NDR,
    link_layer: str = "InfiniBand",
    counters: Mapping[str, str] | None = None,
) -> dict[str, str]:
    base = f"{IB}/{hca}/ports/{port}"
    files = {
        f"{base}/state": state,
        f"{base}/phys_state": phys,
        f"{base}/rate": rate,
        f"{base}/link_layer": link_layer,
    }
    for name, text in (recorded_port_counters() if counters is None else counters).items():
        files[f"{base}/{name}"] = text
    return files


def hca_files(hca: str, bus: str, **port: str) -> dict[str, str]:
    files = {f"{IB}/{hca}/{name}": text for name, text in CX7.items()}
    files[f"{IB}/{hca}/node_type"] = "1: CA"
    files[f"{IB}/{hca}/device/uevent"] = uevent(bus)
    files.update(port_files(hca, **port))  # type: ignore[arg-type]
    return files


def pci_device(path: str, vendor: str, device: str, klass: str) -> dict[str, str]:
    """A PCI function's identity files at its resolved sysfs path."""
    return {f"{path}/vendor": vendor, f"{path}/device": device, f"{path}/class": klass}


def write_files(root: Path, files: Mapping[str, str]) -> None:
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text + "\n")


def eight_ndr_hcas() -> dict[str, str]:
    """mlx5_0..7, one NDR port each, ACTIVE/LinkUp (as on an HGX H200's compute fabric), at
    bus ids 0000:00:0a.0.. (the recorded VM's GPUs sit on its root bus: so do these)."""
    files: dict[str, str] = {}
    for n in range(8):
        bus = f"0000:00:{0x0A + n:02x}.0"
        files.update(hca_files(f"mlx5_{n}", bus))
        files.update(pci_device(f"devices/pci0000:00/{bus}", "0x15b3", "0x1021", "0x020700"))
    return files


@dataclass
class Bundle:
    """A recorded bundle copied into `root`, with HCAs added: `start` as `sysfs/`, `end` (the
    start edited) as `sysfs-end/`, the window between them."""

    root: Path
    start: dict[str, str]
    end: dict[str, str] = field(default_factory=dict)
    window_s: float | None = 3.0

    @classmethod
    def of(
        cls, tmp: Path, start: Mapping[str, str], source: Path = H200X2, name: str = "bundle"
    ) -> Bundle:
        root = tmp / name
        shutil.copytree(source, root)
        return cls(root, dict(start), dict(start))

    def write(self) -> Path:
        write_files(self.root / "sysfs", self.start)
        if self.window_s is not None:
            ib_only = {k: v for k, v in self.end.items() if k.startswith(IB)}
            write_files(self.root / "sysfs-end", ib_only)
            (self.root / "sysfs-end" / "window_seconds").write_text(f"{self.window_s}\n")
        return self.root

    def grow(self, hca: str, counter: str, by: int, port: int = 1) -> None:
        """The end reading's `counter` (`counters/symbol_error`) `by` above the start's."""
        key = f"{IB}/{hca}/ports/{port}/{counter}"
        self.end[key] = str(int(self.start[key]) + by)

    def set_both(self, hca: str, counter: str, value: int, port: int = 1) -> None:
        key = f"{IB}/{hca}/ports/{port}/{counter}"
        self.start[key] = self.end[key] = str(value)


_IBSTAT_STATE = {"Active": ACTIVE, "Down": DOWN, "Initializing": INIT, "Armed": "3: ARMED"}
_IBSTAT_PHYS = {"LinkUp": LINK_UP, "Polling": POLLING, "Disabled": DISABLED}
_IB_RATE = {400: NDR, 200: HDR, 100: "100 Gb/sec (4X EDR)"}
_ETH_RATE = {40: "40 Gb/sec (4X QDR)", 100: "100 Gb/sec (4X EDR)", 200: HDR}


def ibstat_to_sysfs(text: str) -> dict[str, str]:
    """The sysfs the kernel shows for the ports `ibstat` printed (SOURCES.md), with the
    recorded counters; each CA at a bus id of its own on the root bus."""
    files: dict[str, str] = {}
    for number, block in enumerate(re.split(r"(?m)^CA '", text)[1:]):
        name = block.split("'", 1)[0]
        fields = dict(re.findall(r"(?m)^\s*([A-Za-z ]+):\s*(\S.*?)\s*$", block))
        bus = f"0000:{0x10 + number:02x}:00.0"
        speed = int(fields["Rate"])
        layer = fields["Link layer"]
        files.update(
            hca_files(
                name,
                bus,
                state=_IBSTAT_STATE[fields["State"]],
                phys=_IBSTAT_PHYS[fields["Physical state"]],
                rate=(_IB_RATE if layer == "InfiniBand" else _ETH_RATE)[speed],
                link_layer=layer,
            )
        )
        files[f"{IB}/{name}/hca_type"] = fields["CA type"]
        files[f"{IB}/{name}/fw_ver"] = fields["Firmware version"]
    return files


def ibstatus_to_sysfs(text: str) -> dict[str, str]:
    """`ibstatus` prints the sysfs files' text: taken as it is, with the recorded counters."""
    files: dict[str, str] = {}
    blocks = re.split(r"(?m)^Infiniband device '", text)[1:]
    for number, block in enumerate(blocks):
        name, body = block.split("'", 1)[0], block
        fields = dict(re.findall(r"(?m)^\s*([a-z_ ]+):\s+(\S.*?)\s*$", body))
        bus = f"0000:{0x20 + number:02x}:00.0"
        files.update(
            hca_files(
                name,
                bus,
                state=fields["state"],
                phys=fields["phys state"],
                rate=fields["rate"],
                link_layer=fields["link_layer"],
            )
        )
    return files


def mlx4_files(bus: str) -> dict[str, str]:
    """The recorded ConnectX-3 (corpus 002) with its device-level CQ-overflow counter
    (`hw_counters/num_cqovf`: a device-only mlx4 counter) and its PCI function."""
    files = {
        k: v for k, v in load_tsv("002-node-exporter-mlx4_0-i40iw0.tsv").items() if "mlx4_0" in k
    }
    files[f"{IB}/mlx4_0/hw_counters/num_cqovf"] = "17"
    files[f"{IB}/mlx4_0/device/uevent"] = f"DRIVER=mlx4_core\nPCI_SLOT_NAME={bus}"
    return files


def paired_topo() -> str:
    """The recorded 2×H200 matrix with NIC0/NIC1 behind GPU0/GPU1 (PXB) and the NIC legend."""
    lines = (H200X2 / "nvidia-smi-topo-m.txt").read_text().split("\n")
    head, gpu0, gpu1 = lines[0], lines[1], lines[2]
    head = head.replace("GPU1\tCPU Affinity", "GPU1\tNIC0\tNIC1\tCPU Affinity")
    gpu0 = gpu0.replace("NV18\t", "NV18\tPXB\tNODE\t", 1)
    gpu1 = gpu1.replace(" X \t", " X \tNODE\tPXB\t", 1)
    nic0 = "NIC0\tPXB\tNODE\t X \tNODE"
    nic1 = "NIC1\tNODE\tPXB\tNODE\t X "
    rest = "\n".join(lines[3:]).rstrip("\n")
    legend = "\n\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_1\n"
    return "\n".join([head, gpu0, gpu1, nic0, nic1]) + "\n" + rest + legend


def paired_bundle(tmp_path: Path) -> Bundle:
    """The recorded 2×H200 bundle with one NDR HCA behind each GPU (`paired_topo`)."""
    files = hca_files("mlx5_0", "0000:00:0a.0") | hca_files("mlx5_1", "0000:00:0b.0")
    bundle = Bundle.of(tmp_path, files)
    (bundle.root / "nvidia-smi-topo-m.txt").write_text(paired_topo())
    return bundle


def fact_bundles(root: Path) -> list[Path]:
    """Bundles whose `infiniband` facts hold every key the facts model declares (for
    tests/rules/test_facts_models.py): the eight NDR HCAs of an HGX node with counters that
    moved and a port that went down during the window, and a ConnectX-3 (mlx4) below a PCIe
    switch with an NVIDIA GPU, its CQ-overflow counter and a CQ overrun in the kernel log."""
    hgx = Bundle.of(root, eight_ndr_hcas(), name="ib-hgx")
    hgx.grow("mlx5_1", "counters/port_xmit_packets", 2_000_000)
    hgx.grow("mlx5_1", "hw_counters/local_ack_timeout_err", 40)
    hgx.grow("mlx5_2", "counters/symbol_error", 12)
    hgx.end[f"{IB}/mlx5_3/ports/1/state"] = DOWN
    hgx.end[f"{IB}/mlx5_3/ports/1/phys_state"] = POLLING
    hgx.start[f"{IB}/mlx5_4/ports/1/counters/port_rcv_errors"] = "9"
    hgx.end[f"{IB}/mlx5_4/ports/1/counters/port_rcv_errors"] = "0"  # reset during the window
    hgx.set_both("mlx5_5", "counters/port_xmit_wait", 4294967295)  # 32-bit, stuck
    hgx.set_both("mlx5_6", "counters/symbol_error", 0)
    hgx.start[f"{IB}/mlx5_6/ports/1/counters/VL15_dropped"] = "N/A (no PMA)"
    hgx.end[f"{IB}/mlx5_6/ports/1/counters/VL15_dropped"] = "N/A (no PMA)"
    switch = "devices/pci0000:15/0000:15:01.0/0000:16:00.0"
    mlx4 = mlx4_files("0000:18:00.0")
    mlx4[f"{IB}/mlx4_0/node_type"] = "1: CA"
    mlx4 |= pci_device(f"{switch}/0000:17:00.0/0000:18:00.0", "0x15b3", "0x1007", "0x020700")
    mlx4 |= pci_device(f"{switch}/0000:17:01.0/0000:1b:00.0", "0x10de", "0x2335", "0x030200")
    switched = Bundle(root / "ib-mlx4-switch", mlx4, dict(mlx4))
    switched.root.mkdir(parents=True)
    switched.end[f"{IB}/mlx4_0/hw_counters/num_cqovf"] = "377"
    (switched.root / "dmesg.txt").write_text(
        "[ 4711.000001] mlx4_core 0000:18:00.0: CQ overrun on CQN 000085\n"
    )
    h100 = ibstat_to_sysfs((CORPUS / "003-ibstat-h100-12hca-some-down.txt").read_text())
    return [hgx.write(), switched.write(), Bundle.of(root, h100, name="ib-h100").write()]
