"""sysfs files vanishing mid-read: a GPU's device folder removed (hot-unplug, fallen off the
bus) between the moment the check lists it and the moment it reads its link files."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fault_expect import (
    GPU_CHECKS,
    KERNEL_LOG_CHECKS,
    assert_complete,
    assert_faulted,
    assert_unaffected,
    assert_within,
    outline,
    result,
    run_bound,
    said,
)
from fault_node import FAST, NodeSpec, run_live
from sitscheck.models import Report, Status
from sitscheck.sources.files import MAX_SMALL_FILE, FileTree

GPU1 = "0000:00:07.0"


@pytest.fixture
def vanishing(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    """When GPU 1's first link file is read (its chain already found), the device folder is
    removed, then the read goes on. (Only pcie_link's read fires it; pcie_aer, running
    alongside, may read GPU 1's folder before or after it is gone.)"""
    gone: list[Path] = []
    read_text = FileTree.read_text

    def vanish(self: FileTree, relative: str, limit: int = MAX_SMALL_FILE) -> str | None:
        path = self.path(relative)
        vanishing_now = path is not None and path.name == "current_link_width"
        if not gone and vanishing_now and path.parent.name == GPU1 and path.exists():
            shutil.rmtree(path.parent)
            gone.append(path.parent)
        text: str | None = read_text(self, relative, limit)
        return text

    monkeypatch.setattr(FileTree, "read_text", vanish)
    yield gone


def test_a_device_folder_vanishing_mid_read_costs_only_that_gpu(
    node: NodeSpec, baseline: Report, vanishing: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    report, elapsed = run_live(node, monkeypatch.setattr)

    assert vanishing, "the fault never fired"
    assert_within(elapsed, run_bound(FAST["run_timeout_s"]))
    assert_complete(report)
    others = [name for name in GPU_CHECKS if name != "pcie_link"]
    kernel_log = [name for name in KERNEL_LOG_CHECKS if name != "pcie_aer"]
    assert_unaffected(report, baseline, *others, *kernel_log, "tensorrt")
    assert_aer_sees_at_most_gpu1_gone(report, baseline)
    links = {g["index"]: g for g in result(report, "pcie_link").facts["gpus"]}
    before = {g["index"]: g for g in result(baseline, "pcie_link").facts["gpus"]}
    assert links[0]["path"] == before[0]["path"]  # GPU 0's chain read as on the healthy node
    assert "sysfs_vanished" not in links[0]
    assert links[1]["sysfs_vanished"] == GPU1 and "path" not in links[1]
    codes = [
        (f.code, f.device.index if f.device else None) for f in result(report, "pcie_link").findings
    ]
    assert codes == [("pcie_link.sysfs_vanished", 1)]


def assert_aer_sees_at_most_gpu1_gone(report: Report, baseline: Report) -> None:
    """pcie_aer reads GPU 1's folder alongside pcie_link: before the removal it reads as on
    the healthy node; after it, its one change is GPU 1's folder named gone (never GPU 0's,
    never a hardware finding). Either order is right; nothing else is."""
    aer, healthy = result(report, "pcie_aer"), result(baseline, "pcie_aer")
    gone = [f for f in aer.findings if f.code == "pcie_aer.sysfs_vanished"]
    if not gone:
        assert outline(aer) == outline(healthy), said(aer)
        return
    assert [f.device.index if f.device else None for f in gone] == [1], said(aer)
    assert GPU1 in said(aer)
    rest = sorted(f.code for f in aer.findings if f.code != "pcie_aer.sysfs_vanished")
    assert rest == sorted(f.code for f in healthy.findings), said(aer)
    assert aer.status is Status.UNKNOWN and aer.error is None, said(aer)


def test_a_device_folder_vanishing_mid_read_is_unknown_naming_it(
    node: NodeSpec, vanishing: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    report, _ = run_live(node, monkeypatch.setattr)
    assert_faulted(report, "pcie_link", GPU1, "disappeared while sitscheck read its PCIe link")


def test_a_device_folder_vanishing_while_aer_counters_are_read_is_named(
    node: NodeSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone: list[Path] = []
    read_text = FileTree.read_text

    def vanish(self: FileTree, relative: str, limit: int = MAX_SMALL_FILE) -> str | None:
        path = self.path(relative)
        if not gone and path is not None and path.name == "aer_dev_correctable":
            if path.parent.name == GPU1 and path.parent.exists():
                shutil.rmtree(path.parent)
                gone.append(path.parent)
        text: str | None = read_text(self, relative, limit)
        return text

    monkeypatch.setattr(FileTree, "read_text", vanish)
    report, _ = run_live(node, monkeypatch.setattr)

    assert gone, "the fault never fired"
    assert_complete(report)
    assert_faulted(report, "pcie_aer", GPU1, "disappeared while sitscheck read its AER counters")
    aer = result(report, "pcie_aer")
    assert [(f.code, f.device.index if f.device else None) for f in aer.findings] == [
        ("pcie_aer.sysfs_vanished", 1)
    ]
