"""`collect` and the live check over a sysfs root laid out as the kernel lays it out: the class
links (`class/infiniband/mlx5_0 -> ../../devices/.../infiniband/mlx5_0`), the HCA's `device`
link to its PCI function, `bus/pci/devices` links, a PCIe switch with the HCA and a GPU below
it. collect resolves the links into plain folders under their own paths, records the PCIe path
of HCA and GPU, and writes the end reading (`sysfs-end/`); the replay of that bundle and the
live run give the same facts."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from sitscheck.app import installed_evidence
from sitscheck.checks.infiniband.check import InfinibandCheck
from sitscheck.config import RunConfig
from sitscheck.contract.evidence import gather
from sitscheck.contract.runner import run_checks
from sitscheck.models import CheckResult, Status
from sitscheck.sources.bundle_writer import open_bundle_writer
from sitscheck.sources.collect import collect_bundle
from sitscheck.sources.live import LiveOptions, LiveSources
from sitscheck.sources.replay import ReplaySources

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ib_tree import IB, port_files, uevent, write_files

SWITCH = "devices/pci0000:15/0000:15:01.0/0000:16:00.0"
HCA_FN = f"{SWITCH}/0000:17:00.0/0000:18:00.0"
GPU_FN = f"{SWITCH}/0000:17:01.0/0000:1b:00.0"
HCA_BUS, GPU_BUS = "0000:18:00.0", "0000:1b:00.0"


def live_root(tmp: Path) -> Path:
    root = tmp / "sys"
    ib_dir = f"{HCA_FN}/infiniband/mlx5_0"
    files = {
        f"{ib_dir}/{k.removeprefix(f'{IB}/mlx5_0/')}": v for k, v in port_files("mlx5_0").items()
    }
    files |= {f"{ib_dir}/hca_type": "MT4129", f"{ib_dir}/fw_ver": "28.39.1002"}
    files |= {f"{HCA_FN}/uevent": uevent(HCA_BUS)}
    for fn, vendor, klass in ((HCA_FN, "0x15b3", "0x020700"), (GPU_FN, "0x10de", "0x030200")):
        files |= {f"{fn}/vendor": vendor, f"{fn}/class": klass, f"{fn}/current_link_width": "16"}
    for port in (
        "devices/pci0000:15/0000:15:01.0",
        SWITCH,
        f"{SWITCH}/0000:17:00.0",
        f"{SWITCH}/0000:17:01.0",
    ):
        files |= {f"{port}/vendor": "0x1000", f"{port}/class": "0x060400"}
    write_files(root, files)
    (root / "class/infiniband").mkdir(parents=True)
    os.symlink(f"../../{ib_dir}", root / "class/infiniband/mlx5_0")
    os.symlink("../../../0000:18:00.0", root / ib_dir / "device")
    (root / "bus/pci/devices").mkdir(parents=True)
    for bus, fn in ((HCA_BUS, HCA_FN), (GPU_BUS, GPU_FN)):
        os.symlink(f"../../../{fn}", root / "bus/pci/devices" / bus)
    return root


def live_sources(root: Path, sample_seconds: float) -> LiveSources:
    options = LiveOptions(sys_root=str(root), sample_seconds=sample_seconds)
    return LiveSources(options, commands={}, installed=installed_evidence)


def test_collect_writes_plain_folders_both_readings_and_the_pcie_paths(tmp_path: Path) -> None:
    root = live_root(tmp_path)
    declared = gather([InfinibandCheck()])
    declared.kernel_log = False  # the host's own log is not this test's
    bundle = tmp_path / "bundle"
    with open_bundle_writer(bundle) as out:
        collect_bundle(live_sources(root, 0.2), out, declared)
    state = bundle / "sysfs" / IB / "mlx5_0/ports/1/state"
    assert state.is_file() and not state.is_symlink() and state.read_text() == "4: ACTIVE\n"
    assert not (bundle / "sysfs" / IB / "mlx5_0").is_symlink()
    assert (
        "PCI_SLOT_NAME=0000:18:00.0" in (bundle / "sysfs" / IB / "mlx5_0/device/uevent").read_text()
    )
    end = bundle / "sysfs-end" / IB / "mlx5_0/ports/1/counters/symbol_error"
    assert end.read_text() == state.with_name("counters").joinpath("symbol_error").read_text()
    assert float((bundle / "sysfs-end/window_seconds").read_text()) >= 0.2
    # the ports above the HCA and the GPU, as resolved paths
    for fn in (HCA_FN, GPU_FN, SWITCH):
        assert (bundle / "sysfs" / fn / "vendor").is_file(), fn
    # nothing but what was declared
    assert not any(p.is_symlink() for p in bundle.rglob("*"))
    replayed = _run(ReplaySources(bundle), RunConfig(checks=["infiniband"]))
    _assert_paired(replayed)
    assert replayed.facts["window_s"] >= 0.2


def test_the_live_check_reads_twice_and_pairs_the_hca_with_its_gpu(tmp_path: Path) -> None:
    result = _run(
        live_sources(live_root(tmp_path), 0.2), RunConfig(checks=["infiniband"], sample_seconds=0.2)
    )
    _assert_paired(result)
    assert result.facts["window_s"] >= 0.2 and result.facts["source"].endswith("/sys")


def test_the_live_wait_ends_before_the_checks_deadline(tmp_path: Path) -> None:
    config = RunConfig(checks=["infiniband"], sample_seconds=30, check_timeout_s=2)
    result = _run(live_sources(live_root(tmp_path), 30), config)
    assert result.error is None and result.status == Status.OK
    # its wait fitted the 2 s deadline (with the check's own 1 s margin): the check is not
    # UNKNOWN "timed out" (a 30 s wait would be)
    assert result.facts["window_s"] is not None


def _run(sources: LiveSources | ReplaySources, config: RunConfig) -> CheckResult:
    (result,) = run_checks([InfinibandCheck()], sources, config)
    return result


def _assert_paired(result: CheckResult) -> None:
    assert result.error is None, result.error
    (hca,) = result.facts["hcas"]
    assert hca["pci_bus_id"] == HCA_BUS and hca["gpus"] == [GPU_BUS]
    assert hca["common_port"] == "0000:16:00.0"
    assert result.facts["gpus"] == [
        {
            "pci_bus_id": GPU_BUS,
            "hcas": ["mlx5_0"],
            "ports": ["mlx5_0 port 1"],
            "common_port": "0000:16:00.0",
        }
    ]
    assert result.findings == []
